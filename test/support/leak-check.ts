/**
 * Leak check, run after every test (vitest `setupFiles`): a test that leaves
 * a later server running (its timers, its database connections, its
 * partition membership) fails, naming the servers; they are then shut down
 * so the tests after it start clean. The runtime lists its live servers
 * (`liveServerIds` of `@later/runtime/testing`): started and not yet shut
 * down. Servers in child processes are the multi-process tests' own business
 * (test/multiprocess/helpers.ts kills them after each test).
 *
 * This file's `afterEach` is registered before any test file's, so it runs
 * after them: a harness that shuts its servers down in its own `afterEach`
 * passes.
 */
import { afterEach } from "vitest";
import { liveServerIds } from "@later/runtime/testing";

afterEach(async () => {
  const leaked = await liveServerIds({ shutDown: true });
  if (leaked.length > 0) {
    throw new Error(`the test left ${leaked.length} later server(s) running (${leaked.join(", ")}): shut every server down in the test or in an afterEach`);
  }
});
