import { describe, expect, it } from "vitest";
import { newJobId, RetryPolicy } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { afterCall, deferred, StallingClock, useHarness, waitFor } from "./harness.js";

const policy = JSON.stringify(RetryPolicy.fixed(3, 0));

describe.each(BACKENDS)("leases and the stuck-job rescue on $name", (entry) => {
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
    // The loss is reported (a warning for the logger), once.
    expect(h.events.filter((e) => e.type === "job-lease-lost")).toEqual([
      { type: "job-lease-lost", jobId: id, jobType: "work", attempt: 1, reason: expect.stringMatching(/lease of job .* was lost/) },
    ]);
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
});
