import { describe, expect, it } from "vitest";
import { RetryPolicy } from "@later/runtime";
import { injectWorkerLoopFault, ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { deferred, useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("workers, shutdown and maintenance on $name", (entry) => {
  const harness = useHarness(entry);

  it("J9: addWorker raises concurrency at once; removeWorker waits for the current job and keeps the last worker", async () => {
    const h = harness();
    const gates = new Map<number, ReturnType<typeof deferred<void>>>();
    let running = 0;
    const server = await h.start({
      workerCount: 1,
      handlers: {
        hold: {
          handle: async (_c, p) => {
            running++;
            const g = deferred();
            gates.set((p as { i: number }).i, g);
            await g.promise;
            running--;
          },
        },
      },
    });
    await server.publisher.enqueueMany("hold", [{ i: 0 }, { i: 1 }, { i: 2 }]);
    await waitFor(() => running === 1, "one running");
    expect(server.addWorker()).toBe(2);
    await waitFor(() => running === 2, "two running after addWorker");
    let removed: boolean | null = null;
    const removal = server.removeWorker().then((r) => (removed = r));
    gates.get(0)!.resolve();
    gates.get(1)?.resolve();
    await removal;
    expect(removed).toBe(true);
    expect(server.workerCount).toBe(1);
    expect(await server.removeWorker()).toBe(false);
    expect(server.workerCount).toBe(1);
    await waitFor(() => gates.size === 3, "third job started on the remaining worker");
    gates.get(2)!.resolve();
  });

  it("J9: shutdown lets running handlers commit, aborts the rest at the deadline, and puts their jobs back", async () => {
    const h = harness();
    const finishing = deferred();
    const signals: AbortSignal[] = [];
    const server = await h.start({
      workerCount: 2,
      handlers: {
        quick: {
          handle: async () => {
            await finishing.promise;
          },
        },
        never: {
          handle: (ctx) => {
            signals.push(ctx.signal);
            return new Promise(() => undefined);
          },
        },
      },
    });
    const quick = await server.publisher.enqueue("quick", {});
    const never = await server.publisher.enqueue("never", {});
    await waitFor(() => signals.length === 1 && h.stagesOf(quick).includes("running"), "both running");
    const shutdown = server.shutdown({ deadlineMs: 300 });
    finishing.resolve();
    await shutdown;
    expect(signals[0]!.aborted).toBe(true);
    const check = h.db.backend();
    await check.open();
    expect((await check.inspect.jobGet({ id: quick }))?.stage).toBe("success");
    // Put back at once (shutdown.test.ts has the details), not left running until its lease expires.
    const left = await check.inspect.jobGet({ id: never });
    expect(left).toMatchObject({ stage: "enqueued", attempt: 0, leaseExpiresAt: null });
    await check.close();
  });

  it("J11: terminal jobs expire and the sweep deletes them in batches", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({
      clock,
      retentionMs: 60_000,
      sweepBatchSize: 3,
      sweepIntervalMs: 1_000_000_000,
      handlers: { t: { handle: () => undefined } },
    });
    const ids = await server.publisher.enqueueMany(
      "t",
      Array.from({ length: 10 }, (_, i) => ({ i })),
    );
    await waitFor(async () => (await server.backend.inspect.stageCounts()).counts.success === 10, "all done");
    const pending = await server.publisher.enqueue("t", {}, { delayMs: 1_000_000 });
    clock.advance(30_000);
    expect(await server.sweepExpiredJobs()).toBe(0);
    clock.advance(30_001);
    expect(await server.sweepExpiredJobs()).toBe(10);
    for (const id of ids) expect(await server.backend.inspect.jobGet({ id })).toBeNull();
    expect((await server.backend.inspect.jobGet({ id: pending }))?.stage).toBe("delayed");
  });

  it("J11/J5: a continuation enqueued under a failed parent is stored failed with the retention, and the sweep deletes it once that has passed", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({
      clock,
      retentionMs: 60_000,
      sweepIntervalMs: 1_000_000_000,
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: {
        boom: {
          handle: () => {
            throw new Error("boom");
          },
        },
        t: { handle: () => undefined },
      },
    });
    const parent = await server.publisher.enqueue("boom", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: parent }))?.stage === "failed", "the parent failed");
    clock.advance(30_000);
    const late = await server.publisher.enqueue("t", {}, { parentId: parent });
    expect((await server.backend.inspect.jobGet({ id: late }))?.stage).toBe("failed");
    clock.advance(30_001);
    expect(await server.sweepExpiredJobs()).toBe(1); // the parent; the continuation's retention counts from its insert
    expect((await server.backend.inspect.jobGet({ id: late }))?.stage).toBe("failed");
    clock.advance(30_000);
    expect(await server.sweepExpiredJobs()).toBe(1);
    expect(await server.backend.inspect.jobGet({ id: late })).toBeNull();
    expect((await server.backend.inspect.stageCounts()).counts.failed).toBe(0);
  });

  it("J13: a handler that hangs past jobTimeoutMs fails its attempt and its worker is replaced", async () => {
    const h = harness();
    const clock = new ManualClock();
    const done: string[] = [];
    const server = await h.start({
      clock,
      workerCount: 1,
      jobTimeoutMs: 10_000,
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: { hang: { handle: () => new Promise(() => undefined) }, ok: { handle: (ctx) => void done.push(ctx.jobId) } },
    });
    const hung = await server.publisher.enqueue("hang", {});
    await waitFor(() => h.stagesOf(hung).includes("running"), "hung job running");
    const next = await server.publisher.enqueue("ok", {});
    clock.advance(10_000);
    await waitFor(() => done.includes(next), "the replacement worker runs the next job");
    // The failed attempt is written by the completion batcher, asynchronously.
    const job = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id: hung });
      return j?.stage === "failed" ? j : null;
    }, "hung job failed");
    expect(job?.stage).toBe("failed");
    expect(job?.lastError).toMatch(/longer than jobTimeoutMs/);
    expect(h.events.some((e) => e.type === "worker" && e.action === "replaced")).toBe(true);
    expect(server.workerCount).toBe(1);
  });

  it("J13: a worker loop that dies is replaced, and its claim recovers through its lease", async () => {
    const h = harness();
    const clock = new ManualClock();
    const ran: { id: string; attempt: number }[] = [];
    const server = await h.start({
      clock,
      workerCount: 1,
      leaseMs: 3_000,
      stuckGraceMs: 1_000,
      rescueIntervalMs: 1_000_000,
      defaultRetryPolicy: RetryPolicy.fixed(3, 0),
      handlers: { w: { handle: (ctx) => void ran.push({ id: ctx.jobId, attempt: ctx.attempt }) } },
    });
    injectWorkerLoopFault(server as never, 1);
    const lost = await server.publisher.enqueue("w", {});
    await waitFor(() => h.events.some((e) => e.type === "worker" && e.action === "replaced"), "loop replaced");
    expect(server.workerCount).toBe(1);
    const next = await server.publisher.enqueue("w", {});
    await waitFor(() => ran.some((r) => r.id === next), "the replacement loop runs jobs");
    expect((await server.backend.inspect.jobGet({ id: lost }))?.stage).toBe("running");
    clock.advance(4_001); // lease (no longer renewed) expired for longer than the grace
    expect(await server.rescueStuckJobs()).toBe(1);
    await waitFor(() => ran.some((r) => r.id === lost), "the lost claim is retried");
    expect(ran.find((r) => r.id === lost)?.attempt).toBe(2);
  });

  it("J14: autoscale adds a worker when the backlog exceeds ~20 per worker and removes one after three empty ticks", async () => {
    const h = harness();
    const clock = new ManualClock();
    const gate = deferred();
    let started = 0;
    const server = await h.start({
      clock,
      workerCount: 1,
      workerAutoscale: { min: 1, max: 2 },
      autoscaleIntervalMs: 15_000,
      handlers: {
        w: {
          handle: async () => {
            started++;
            await gate.promise;
          },
        },
      },
    });
    await server.publisher.enqueueMany(
      "w",
      Array.from({ length: 50 }, (_, i) => ({ i })),
    );
    await waitFor(() => started === 1, "first job running");
    expect(await server.autoscaleTick()).toBe(1);
    expect(server.workerCount).toBe(2);
    expect(await server.autoscaleTick()).toBe(0); // at max
    gate.resolve();
    await waitFor(async () => (await server.backend.inspect.stageCounts()).counts.success === 50, "backlog drained");
    expect(await server.autoscaleTick()).toBe(0);
    expect(await server.autoscaleTick()).toBe(0);
    expect(await server.autoscaleTick()).toBe(-1);
    expect(server.workerCount).toBe(1);
    expect(await server.autoscaleTick()).toBe(0); // at min
  });

  it("vacuumIntervalMs runs VACUUM through maintenance when the backend supports it", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({ clock, vacuumIntervalMs: 60_000, handlers: { t: { handle: () => undefined } } });
    clock.advance(60_000);
    if (server.backend.capabilities.supportsVacuum) {
      await waitFor(() => h.events.some((e) => e.type === "maintenance" && e.task === "vacuum"), "vacuum ran");
    }
  });
});
