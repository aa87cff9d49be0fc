/**
 * Leak check, run around every test (vitest `setupFiles`): a test that
 * leaves a later server running (its timers, its connections, its partition
 * membership) or a backend open (a connection or a pool) fails, naming
 * them; they are then shut down and closed, so the tests after it start
 * clean. The runtime lists what is live (`liveResources` of
 * `@later/runtime/testing`). Backends opened in a `beforeAll` are checked
 * once the file's `afterAll` hooks ran. Servers in child processes are the
 * multi-process tests' own business (test/multiprocess/helpers.ts kills them
 * after each test).
 *
 * This file's hooks are registered before any test file's, so its
 * `afterEach`/`afterAll` run after theirs: a harness that shuts its servers
 * down in its own `afterEach` passes.
 */
import { afterAll, afterEach, beforeEach } from "vitest";
import { liveResources, openBackendsNow } from "@later/runtime/testing";

let before: ReadonlySet<object> = new Set();

beforeEach(() => {
  before = openBackendsNow();
});

afterEach(async () => {
  const leaked = await liveResources({ shutDown: true, except: before });
  if (leaked.servers.length > 0 || leaked.backends.length > 0)
    throw new Error(`the test left ${describe(leaked)}: shut servers down and close backends in the test or in an afterEach`);
});

afterAll(async () => {
  const leaked = await liveResources({ shutDown: true });
  if (leaked.servers.length > 0 || leaked.backends.length > 0) throw new Error(`the test file left ${describe(leaked)} after its afterAll hooks`);
});

function describe(leaked: { servers: string[]; backends: string[] }): string {
  const parts: string[] = [];
  if (leaked.servers.length > 0) parts.push(`${leaked.servers.length} server(s) running (${leaked.servers.join(", ")})`);
  if (leaked.backends.length > 0) parts.push(`${leaked.backends.length} backend(s) open (${leaked.backends.join("; ")})`);
  return parts.join(" and ");
}
