/**
 * X6 across processes: `waitFor` in one process (the test's, through a
 * publisher: it runs no server) resolves with the result a worker in another
 * process stored, woken by that worker's commit (SQLite: the WAL watcher;
 * PostgreSQL: LISTEN on the done channel), not by its safety poll, which the
 * test sets to 60 s: every wait must end long before that. Each job takes
 * 300 ms, so the waiter's first read sees it unfinished. Latencies are
 * printed, never asserted beyond the deadline.
 */
import { describe, expect, it } from "vitest";
import { RetryPolicy, TypedJobPublisher, type JobHandle } from "@later/runtime";
import { openBackend, PROCESS_BACKENDS, useProcesses } from "./helpers.js";

const NAMESPACE = "mp";
const ROUNDS = 5;
const NEVER = 600_000;
/** The waiter's safety poll: far beyond each wait's deadline. */
const SAFETY_POLL_MS = 60_000;
const DEADLINE_MS = 15_000;

describe.each(PROCESS_BACKENDS)("waitFor across processes on $name", (entry) => {
  const processes = useProcesses();

  it(`a waiter in another process than the worker wakes on the commit, not its 60 s safety poll (${ROUNDS} rounds, 3 waiters each)`, async () => {
    const backend = await entry.create(processes);
    const child = processes.spawnChild("worker", {
      backend,
      namespace: NAMESPACE,
      workerCount: 2,
      printDone: true,
      server: { pollIntervalMs: 200, rescueIntervalMs: NEVER, sweepIntervalMs: NEVER },
    });
    await child.ready();
    const publisher = await TypedJobPublisher.open<{ work: JobHandle<Record<string, unknown>> }>(
      { backend: processes.track(openBackend(backend, NAMESPACE)) },
      { work: { handlerMethod: "withWorkHandler" } },
    );
    try {
      const latencies: number[] = [];
      /** From the handler's end in the child to the waiter's resolution here: the finish's commit and the wake-up. */
      const handlerToWaiter: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const id = await publisher.jobs.work.enqueue({ ms: 300, result: { round: i, text: "é€" } });
        const t0 = Date.now();
        const waits = [0, 1, 2].map(() => publisher.waitFor(id, { timeoutMs: DEADLINE_MS, safetyPollMs: SAFETY_POLL_MS }));
        const results = await Promise.all(waits);
        const resolved = Date.now();
        latencies.push(resolved - t0);
        const line = await child.waitForLine((l) => l.startsWith(`done ${id} `), `job ${i} done in the child`, DEADLINE_MS);
        handlerToWaiter.push(resolved - Number(line.split(" ")[3]));
        for (const r of results) expect(r).toEqual({ stage: "success", result: { round: i, text: "é€" } });
      }
      console.log(`${entry.name} waitFor across processes, enqueue -> resolved (job takes 300 ms): ${latencies.join(", ")} ms`);
      console.log(`${entry.name} waitFor across processes, handler end -> resolved: ${handlerToWaiter.join(", ")} ms`);
      for (const ms of latencies) expect(ms).toBeLessThan(DEADLINE_MS);
      // A failed job, in the other process, resolves as failed with its error.
      const failing = await publisher.jobs.work.enqueue({ fail: 99 }, { retryPolicy: RetryPolicy.noRetries() });
      const failed = await publisher.waitFor(failing, { timeoutMs: DEADLINE_MS, safetyPollMs: SAFETY_POLL_MS });
      expect(failed.stage).toBe("failed");
      expect(failed.error).toMatch(/planned failure of attempt 1/);
    } finally {
      await publisher.close();
      await child.stop();
    }
    expect(child.errorLines()).toEqual([]);
  });
});
