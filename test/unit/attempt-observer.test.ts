/**
 * X10: the job executor takes one attempt middleware list. The metrics are
 * an entry of it in the observer form (`AttemptObserver`): first in the
 * list they see every claim handed over (a skipped one, a success, a
 * timeout reported at once) outside the application's hooks, whose order
 * is unchanged, with hooks (the composed path) and without (the plain
 * path). The enqueue path skips observer entries; the application's list
 * is still checked.
 */
import { describe, expect, it } from "vitest";
import type { Backend, JobOutcome } from "../../packages/runtime/src/backend/backend.js";
import type { HandlerRegistration } from "../../packages/runtime/src/config/handler-registration.js";
import { newJobId } from "../../packages/runtime/src/core/job-id.js";
import { RetryPolicy } from "../../packages/runtime/src/core/retry/retry-policy.js";
import { metricsMiddleware } from "../../packages/runtime/src/metrics/metrics-middleware.js";
import type { ServerMetrics } from "../../packages/runtime/src/metrics/server-metrics.js";
import { ATTEMPT_OBSERVER, splitAttemptMiddleware } from "../../packages/runtime/src/middleware/attempt-observer.js";
import { checkMiddleware, enqueueChain, enqueueHooks, type LaterMiddleware } from "../../packages/runtime/src/middleware/later-middleware.js";
import type { JobPublisher } from "../../packages/runtime/src/publisher/job-publisher.js";
import { ManualClock } from "../../packages/runtime/src/testing/manual-clock.js";
import { HeldClaim } from "../../packages/runtime/src/worker/held-claim.js";
import { JobExecutor } from "../../packages/runtime/src/worker/job-executor.js";

/** A recorder that logs what the metrics middleware records. */
function loggingRecorder(log: string[]): ServerMetrics {
  return {
    attemptStarted: (job: { jobType: string }) => void log.push(`metrics> ${job.jobType}`),
    attemptDiscarded: () => void log.push("metrics< discarded"),
    attemptEnded: (job: { jobType: string }, _workerId: number, outcome: string) => void log.push(`metrics< ${job.jobType} ${outcome}`),
  } as unknown as ServerMetrics;
}

/** An application attempt hook logging around `next()`. */
function hook(name: string, log: string[]): LaterMiddleware {
  return {
    async attempt(ctx, next) {
      log.push(`${name}> ${ctx.jobType}`);
      try {
        const value = await next();
        log.push(`${name}< ok`);
        return value;
      } catch (error) {
        log.push(`${name}< ${(error as { code?: string }).code}`);
        throw error;
      }
    },
  };
}

function setup(withHooks: boolean) {
  const log: string[] = [];
  const clock = new ManualClock();
  const timedOut: JobOutcome[] = [];
  let hang = () => {};
  const handlers: Record<string, HandlerRegistration<null, unknown>> = {
    work: { handle: () => void log.push("handler work") },
    stuck: {
      handle: () => {
        log.push("handler stuck");
        return new Promise<void>((r) => (hang = r));
      },
      timeoutMs: 100,
    },
  };
  const executor = new JobExecutor<null>(
    {
      context: null,
      handlers,
      defaultRetryPolicy: RetryPolicy.noRetries(),
      random: Math.random,
      clock,
      backend: {} as Backend,
      jobTimeoutMs: null,
      onEvent: () => {},
      eventsEnabled: false,
      // As the server builds it: the metrics first, then the application's middleware.
      middleware: [metricsMiddleware(loggingRecorder(log), clock), ...(withHooks ? [hook("1", log), hook("2", log)] : [])],
    },
    {} as JobPublisher<unknown>,
    (_claim, outcome) => void timedOut.push(outcome),
    "owner",
  );
  executor.start();
  const claim = (jobType: string, leaseMs: number) =>
    new HeldClaim({ id: newJobId(clock.now()), jobType, payload: "{}", attempt: 1, retryPolicy: null, runAt: clock.now() }, clock.now() + leaseMs);
  return { log, clock, timedOut, executor, claim, release: () => hang() };
}

describe("one attempt middleware list (X10)", () => {
  it.each([
    ["with application hooks (composed)", true],
    ["without application hooks (plain path)", false],
  ])("the metrics, first in the list, see a skipped claim, a success and a timeout, %s", async (_name, hooked) => {
    const s = setup(hooked);
    try {
      expect(await s.executor.run(s.claim("work", 0), 0)).toBeNull(); // its lease has expired: skipped
      expect(s.log.splice(0)).toEqual(["metrics> work", "metrics< discarded"]);

      expect(await s.executor.run(s.claim("work", 60_000), 0)).toEqual({ kind: "success" });
      expect(s.log.splice(0)).toEqual(
        hooked
          ? ["metrics> work", "1> work", "2> work", "handler work", "2< ok", "1< ok", "metrics< work success"]
          : ["metrics> work", "handler work", "metrics< work success"],
      );

      const running = s.executor.run(s.claim("stuck", 60_000), 0);
      s.clock.advance(200); // past the 100 ms timeout: the watchdog fails it, the handler still hangs
      await waitUntil(() => s.log.includes("metrics< stuck timed_out")); // at the timeout, its handler still hanging
      expect(s.log.splice(0)).toEqual(
        hooked
          ? ["metrics> stuck", "1> stuck", "2> stuck", "handler stuck", "2< JOB_TIMEOUT", "1< JOB_TIMEOUT", "metrics< stuck timed_out"]
          : ["metrics> stuck", "handler stuck", "metrics< stuck timed_out"],
      );
      expect(s.timedOut).toEqual([expect.objectContaining({ kind: "fail" })]);
      s.release();
      expect(await running).toBeNull();
      expect(s.log).toEqual([]); // the handler's own end, later, reports nothing more
    } finally {
      s.release();
      await s.executor.stop();
    }
  });

  it("is split once into the hooks in order and the observers; the enqueue path skips observer entries", () => {
    const observer = metricsMiddleware(loggingRecorder([]), new ManualClock());
    const calls: string[] = [];
    const enqueueOnly: LaterMiddleware = { enqueue: (_ctx, next) => next() };
    const both: LaterMiddleware = {
      enqueue: (_ctx, next) => next(),
      attempt: (_ctx, next) => {
        calls.push("both");
        return next();
      },
    };
    const attemptOnly: LaterMiddleware = {
      attempt: (_ctx, next) => {
        calls.push("attempt");
        return next();
      },
    };
    const { hooks, observers } = splitAttemptMiddleware([observer, enqueueOnly, attemptOnly, both]);
    expect(observers).toEqual([observer[ATTEMPT_OBSERVER]]);
    expect(hooks).toHaveLength(2);
    for (const h of hooks) void h({} as never, () => Promise.resolve(undefined));
    expect(calls).toEqual(["attempt", "both"]);
    expect(enqueueChain([observer])).toBeNull();
    expect(enqueueHooks([observer, enqueueOnly, attemptOnly, both])).toHaveLength(2);
  });

  it("still refuses an application entry with neither enqueue nor attempt", () => {
    expect(() => checkMiddleware([{}], "server options")).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/middleware\[0\] has neither/) }),
    );
  });
});

/** Resolves once `ready()` holds, polled on microtasks and then macrotasks (a deadline of 5 s). */
async function waitUntil(ready: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setImmediate(r));
  }
}
