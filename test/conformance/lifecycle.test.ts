import { describe, expect, it } from "vitest";
import { newJobId, RetryPolicy } from "@later/runtime";
import { injectWorkerLoopFault, ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { afterCall, deferred, StallingClock, useHarness, waitFor } from "./harness.js";

const policy = JSON.stringify(RetryPolicy.fixed(3, 0));

describe.each(BACKENDS)("leases, scaling and maintenance on $name", (entry) => {
  const harness = useHarness(entry);

  it("J7: the lease renews while a slow handler runs, so no other server rescues it", async () => {
    const h = harness();
    const clock = new ManualClock();
    const gate = deferred();
    let runs = 0;
    const opts = { clock, leaseMs: 3_000, stuckGraceMs: 1_000, rescueIntervalMs: 1_000_000 };
    const slow = await h.start({
      ...opts,
      handlers: {
        slow: {
          handle: async () => {
            runs++;
            await gate.promise;
          },
        },
      },
    });
    const id = await slow.publisher.enqueue("slow", {});
    await waitFor(() => runs === 1, "handler started");
    // Started once the slow server holds the job (else either server may claim it first).
    const rescuer = await h.start({
      ...opts,
      handlers: {
        slow: {
          handle: () => {
            runs++;
          },
        },
      },
    });
    const before = (await slow.backend.inspect.jobGet({ id }))!.leaseExpiresAt!;
    for (let i = 0; i < 10; i++) {
      clock.advance(1_000); // the renewer wakes every leaseMs / 3
      // Renewed at this tick (now + leaseMs), not just still covered by the previous renewal.
      await waitFor(async () => (await slow.backend.inspect.jobGet({ id }))!.leaseExpiresAt! >= clock.now() + 3_000, "lease renewed");
      expect(await rescuer.rescueStuckJobs()).toBe(0);
    }
    expect((await slow.backend.inspect.jobGet({ id }))!.leaseExpiresAt!).toBeGreaterThan(before + 9_000);
    gate.resolve();
    await waitFor(async () => (await slow.backend.inspect.jobGet({ id }))?.stage === "success", "success");
    expect(runs).toBe(1);
  });

  it("J7: a job whose worker vanished mid-handler is retried after its lease expired for a while", async () => {
    const h = harness();
    const clock = new ManualClock();
    const ran: number[] = [];
    const server = await h.start({
      clock,
      leaseMs: 5_000,
      stuckGraceMs: 2_000,
      rescueIntervalMs: 1_000_000,
      handlers: { work: { handle: (ctx) => void ran.push(ctx.attempt) } },
    });
    // A worker of another process claims the job and dies without a trace.
    const ghost = h.db.backend();
    await ghost.open();
    const now = clock.now();
    // Due 1 ms after the server's clock: a server woken by the insert (a NOTIFY
    // on PostgreSQL) finds nothing due yet, so the ghost claims both.
    const ahead = now + 1;
    const id = newJobId(now);
    const spent = newJobId(now + 1);
    await ghost.jobs.insertMany({
      now: ahead,
      jobs: [
        { id, jobType: "work", payload: "{}", runAt: ahead, retryPolicy: policy },
        { id: spent, jobType: "work", payload: "{}", runAt: ahead, retryPolicy: JSON.stringify(RetryPolicy.noRetries()) },
      ],
    });
    expect((await ghost.jobs.claimReady({ owner: "ghost", limit: 2, now: ahead, leaseExpiresAt: now + 5_000, jobTypes: ["work"] })).jobs).toHaveLength(2);
    await ghost.close();
    clock.advance(6_000); // expired, but not for long enough
    expect(await server.rescueStuckJobs()).toBe(0);
    clock.advance(1_001);
    expect(await server.rescueStuckJobs()).toBe(2);
    await waitFor(() => ran.length === 1, "retried job ran");
    expect(ran).toEqual([2]);
    const job = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id });
      return j?.stage === "success" ? j : null;
    }, "success");
    expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "running", "success"]);
    const failed = await server.backend.inspect.jobGet({ id: spent });
    expect(failed?.stage).toBe("failed");
    expect(failed?.lastError).toMatch(/lease of attempt 1 expired/);
  });

  it("J3/J7: the stuck-job rescue asks the same retry decision as a throwing handler: a job without an explicit policy follows the rescuing server's", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({
      clock,
      leaseMs: 3_000,
      stuckGraceMs: 0,
      rescueIntervalMs: 1_000_000,
      handlers: { work: { handle: () => undefined, retry: () => RetryPolicy.fixed(1, 60_000) } },
    });
    const ghost = h.db.backend();
    await ghost.open();
    const at = clock.now() + 1;
    const id = newJobId(clock.now());
    // Enqueued without an explicit policy (null): the type's own on this server, one retry after a minute, applies.
    await ghost.jobs.insertMany({ now: at, jobs: [{ id, jobType: "work", payload: "{}", runAt: at, retryPolicy: null }] });
    expect((await ghost.jobs.claimReady({ owner: "ghost", limit: 1, now: at, leaseExpiresAt: clock.now() + 3_000, jobTypes: ["work"] })).jobs).toHaveLength(1);
    await ghost.close();
    clock.advance(3_001);
    expect(await server.rescueStuckJobs()).toBe(1);
    const job = (await server.backend.inspect.jobGet({ id }))!;
    expect(job.stage).toBe("requeued");
    expect(job.runAt).toBe(clock.now() + 60_000);
    // Nothing was stored: a server without the option (another version of the app) follows its own default
    // when attempt 2 is lost too, so the job fails (no retries) instead of retrying per the first server's.
    const other = await h.start({
      clock,
      leaseMs: 3_000,
      stuckGraceMs: 0,
      rescueIntervalMs: 1_000_000,
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: { elsewhere: { handle: () => undefined } },
    });
    const again = h.db.backend();
    await again.open();
    const due = job.runAt;
    expect((await again.jobs.claimReady({ owner: "ghost", limit: 1, now: due, leaseExpiresAt: due + 3_000, jobTypes: ["work"] })).jobs).toMatchObject([
      { id, attempt: 2, retryPolicy: null },
    ]);
    await again.close();
    clock.advance(due + 3_001 - clock.now());
    expect(await other.rescueStuckJobs()).toBe(1);
    expect(await server.backend.inspect.jobGet({ id })).toMatchObject({ stage: "failed", attempt: 2 });
  });

  it("J7/J11: the stuck-job rescuer and the expiry sweeper run on their own intervals and report what they did", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({
      clock,
      leaseMs: 3_000,
      stuckGraceMs: 1_000,
      rescueIntervalMs: 10_000,
      retentionMs: 5_000,
      sweepIntervalMs: 20_000,
      handlers: { work: { handle: () => undefined } },
    });
    const done = await server.publisher.enqueue("work", {});
    await waitFor(() => h.stagesOf(done).includes("success"), "the job to succeed");
    // A claim of a process that died: its lease runs out, nobody renews it.
    const ghost = h.db.backend();
    await ghost.open();
    const id = newJobId(clock.now());
    await ghost.jobs.insertMany({ now: clock.now() + 1, jobs: [{ id, jobType: "work", payload: "{}", runAt: clock.now() + 1, retryPolicy: policy }] });
    expect(
      (await ghost.jobs.claimReady({ owner: "ghost", limit: 1, now: clock.now() + 1, leaseExpiresAt: clock.now() + 3_000, jobTypes: ["work"] })).jobs,
    ).toHaveLength(1);
    await ghost.close();
    const maintenance = (task: string) => h.events.find((e) => e.type === "maintenance" && e.task === task);
    clock.advance(10_000);
    expect(await waitFor(() => maintenance("rescue-stuck"), "the rescuer's event")).toEqual({ type: "maintenance", task: "rescue-stuck", count: 1 });
    await waitFor(() => h.stagesOf(id).includes("success"), "the rescued job to run again");
    clock.advance(10_000);
    expect(await waitFor(() => maintenance("sweep-expired"), "the sweeper's event")).toMatchObject({ task: "sweep-expired" });
    expect(await server.backend.inspect.jobGet({ id: done })).toBeNull();
  });

  it("J7: a lost lease aborts the handler's signal and its result is discarded", async () => {
    const h = harness();
    const clock = new ManualClock();
    const gate = deferred();
    let signal: AbortSignal | null = null;
    const server = await h.start({
      clock,
      leaseMs: 3_000,
      stuckGraceMs: 0,
      rescueIntervalMs: 1_000_000,
      handlers: {
        work: {
          handle: async (ctx) => {
            if (ctx.attempt === 1) {
              signal = ctx.signal;
              await gate.promise;
            }
          },
        },
      },
    });
    const id = await server.publisher.enqueue("work", {});
    await waitFor(() => signal, "first attempt running");
    // Someone else takes the job over (as the sweep does once the lease expired).
    const other = h.db.backend();
    await other.open();
    await other.jobs.finishMany({
      finishes: [{ id, attempt: 1, outcome: { kind: "retry", runAt: clock.now() + 60_000, error: "taken over" } }],
      now: clock.now(),
      retentionMs: 1000,
    });
    await other.close();
    clock.advance(1_000);
    await waitFor(() => signal!.aborted, "signal aborted");
    expect((signal!.reason as { code?: string }).code).toBe("LEASE_LOST");
    gate.resolve();
    clock.advance(60_000);
    // Time goes on passing (one poll interval per look), as it would on a real clock: a fetcher whose
    // look at the due time raced the takeover above finds the retry at its next poll.
    await waitFor(async () => {
      if ((await server.backend.inspect.jobGet({ id }))?.stage === "success") return true;
      clock.advance(50);
      return false;
    }, "second attempt succeeds");
    expect((await server.backend.inspect.jobGet({ id }))?.attempt).toBe(2);
  });

  it("J7: a claim whose lease expired before its handler could start is not run; the stuck-job sweep retries it", async () => {
    const h = harness();
    // The process stalls right after its claim committed: when it resumes, its clock is past the lease
    // (and its timers, the lease renewer's included, have not fired yet).
    const clock = new StallingClock();
    const leaseMs = 30_000;
    const ran: number[] = [];
    const server = await h.start({
      clock,
      leaseMs,
      stuckGraceMs: 0,
      rescueIntervalMs: 1_000_000,
      defaultRetryPolicy: RetryPolicy.fixed(3, 0),
      wrapBackend: (b) =>
        afterCall(b, "jobs", "claimReady", (r) => {
          if (r.jobs.length > 0 && clock.offset === 0) clock.offset = leaseMs + 1;
        }),
      handlers: { work: { handle: (ctx) => void ran.push(ctx.attempt) } },
    });
    const id = await server.publisher.enqueue("work", {});
    const skipped = await waitFor(() => h.events.find((e) => e.type === "job-skipped"), "the skipped claim's event");
    expect(skipped).toMatchObject({ jobId: id, jobType: "work", attempt: 1 });
    expect(ran).toEqual([]);
    expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("running");
    expect(await server.rescueStuckJobs()).toBe(1);
    await waitFor(() => ran.length === 1, "the retry to run");
    expect(ran).toEqual([2]);
    const job = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id });
      return j?.stage === "success" ? j : null;
    }, "success");
    expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "running", "success"]);
    expect(job.lastError).toMatch(/worker lost/);
  });

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
