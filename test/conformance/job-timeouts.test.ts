/**
 * Attempt timeouts per job type (the handler option `timeoutMs`) and per job
 * (`EnqueueOptions.timeoutMs`, stored with the job): the job's wins over its
 * type's, which wins over the server's `jobTimeoutMs`. Past it the attempt's
 * `ctx.signal` aborts with a `JOB_TIMEOUT` reason and the attempt fails,
 * retried per policy. Driven by a manual clock; handlers wait on their signal.
 */
import { describe, expect, it } from "vitest";
import { RetryPolicy, type JobContext } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { codeOf, useHarness, waitFor } from "./harness.js";

/** A handler that waits for its signal to abort and records why (first attempt), then succeeds on a later attempt. */
function signalWaiter(reasons: Map<string, unknown>, running: Set<string>) {
  return {
    handle: (ctx: JobContext<unknown>) => {
      if (ctx.attempt > 1) return;
      running.add(ctx.jobId);
      return new Promise<void>((_, reject) => {
        ctx.signal.addEventListener("abort", () => {
          reasons.set(ctx.jobId, ctx.signal.reason);
          reject(ctx.signal.reason as Error);
        });
      });
    },
  };
}

describe.each(BACKENDS)("job timeouts on $name", (entry) => {
  const harness = useHarness(entry);

  it("a job type's timeoutMs aborts the attempt's signal with JOB_TIMEOUT, fails it and retries it per policy; it wins over jobTimeoutMs", async () => {
    const h = harness();
    const clock = new ManualClock();
    const reasons = new Map<string, unknown>();
    const running = new Set<string>();
    const server = await h.start({
      clock,
      workerCount: 2,
      jobTimeoutMs: 1_000,
      defaultRetryPolicy: RetryPolicy.fixed(1, 500),
      handlers: { slow: { ...signalWaiter(reasons, running), timeoutMs: 5_000 }, quick: signalWaiter(reasons, running) },
    });
    const slow = await server.publisher.enqueue("slow", {});
    const quick = await server.publisher.enqueue("quick", {});
    await waitFor(() => running.has(slow) && running.has(quick), "both attempts running");

    // 1 s: the server's jobTimeoutMs times out "quick"; "slow" has its type's 5 s.
    clock.advance(1_000);
    const quickRetry = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id: quick });
      return j?.stage === "requeued" ? j : null;
    }, "quick requeued");
    expect(quickRetry.lastError).toBe(`JOB_TIMEOUT: job ${quick} ran longer than jobTimeoutMs (1000 ms)`);
    expect(reasons.has(slow)).toBe(false);

    // 5 s: "slow" times out: its signal's reason is the JobTimeoutError, the attempt a failure, retried 500 ms later.
    clock.advance(4_000);
    const slowRetry = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id: slow });
      return j?.stage === "requeued" ? j : null;
    }, "slow requeued");
    expect(reasons.get(slow)).toMatchObject({ code: "JOB_TIMEOUT", timeoutMs: 5_000 });
    expect(slowRetry.lastError).toBe(`JOB_TIMEOUT: job ${slow} ran longer than the timeoutMs of "slow" handlers (5000 ms)`);
    expect(slowRetry.runAt).toBe(clock.now() + 500);

    // The retry (attempt 2) succeeds.
    clock.advance(500);
    const done = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id: slow });
      return j?.stage === "success" ? j : null;
    }, "slow retried and succeeded");
    expect(done.attempt).toBe(2);
  });

  it("a job's own timeoutMs, stored with it, wins over its type's; a type's null means no timeout", async () => {
    const h = harness();
    const clock = new ManualClock();
    const reasons = new Map<string, unknown>();
    const running = new Set<string>();
    const server = await h.start({
      clock,
      workerCount: 3,
      jobTimeoutMs: 2_000,
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: { report: { ...signalWaiter(reasons, running), timeoutMs: 60_000 }, untimed: { ...signalWaiter(reasons, running), timeoutMs: null } },
    });
    const own = await server.publisher.enqueue("report", { n: 1 }, { timeoutMs: 3_000 });
    const typed = await server.publisher.enqueue("report", { n: 2 });
    const untimed = await server.publisher.enqueue("untimed", {});
    await waitFor(() => running.size === 3, "three attempts running");

    clock.advance(3_000);
    const failed = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id: own });
      return j?.stage === "failed" ? j : null;
    }, "the job with its own timeout failed");
    expect(failed.lastError).toBe(`JOB_TIMEOUT: job ${own} ran longer than the job's timeoutMs (3000 ms)`);
    expect(reasons.get(own)).toMatchObject({ code: "JOB_TIMEOUT", timeoutMs: 3_000 });
    // Checked in the same watchdog pass: neither the type's 60 s nor "no timeout" has passed.
    expect([...reasons.keys()]).toEqual([own]);
    expect((await server.backend.inspect.jobGet({ id: typed }))?.stage).toBe("running");
    expect((await server.backend.inspect.jobGet({ id: untimed }))?.stage).toBe("running");

    clock.advance(57_000);
    await waitFor(() => reasons.has(typed), "the type's timeout");
    expect(reasons.get(typed)).toMatchObject({ code: "JOB_TIMEOUT", timeoutMs: 60_000 });
    expect(reasons.has(untimed)).toBe(false);
  });

  it("refuses a timeoutMs that is not a positive integer (INVALID_ARGUMENT naming it), and unknown handler options", async () => {
    const h = harness();
    const server = await h.start({ handlers: { t: { handle: () => undefined } } });
    for (const timeoutMs of [0, -5, 1.5, Number.POSITIVE_INFINITY, Number.NaN, "5000", null]) {
      const error: unknown = await server.publisher.enqueue("t", {}, { timeoutMs: timeoutMs as number }).catch((e: unknown) => e);
      expect(error, String(timeoutMs)).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/^enqueue: timeoutMs must be an integer/) });
    }
    expect(await server.backend.inspect.stageCounts()).toMatchObject({ counts: { enqueued: 0 } });

    const typo: unknown = await h.start({ handlers: { t: { handle: () => undefined, concurency: 2 } as never } }).catch((e: unknown) => e);
    expect(typo).toMatchObject({
      code: "INVALID_CONFIG",
      message:
        'handlers.t: unknown option "concurency"; the options are handle, retry, decode, encode, timeoutMs, retention, concurrency, rateLimit, groupConcurrency',
    });
    for (const timeoutMs of [0, 2.5, Number.POSITIVE_INFINITY]) {
      expect(await codeOf(h.start({ handlers: { t: { handle: () => undefined, timeoutMs } } })), String(timeoutMs)).toBe("INVALID_CONFIG");
    }
  });
});
