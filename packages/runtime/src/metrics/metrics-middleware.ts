import type { Clock } from "../core/clock.js";
import { ATTEMPT_OBSERVER, type ObservedAttempt, type ObserverMiddleware } from "../middleware/attempt-observer.js";
import type { AttemptOutcome, ServerMetrics } from "./server-metrics.js";

/**
 * The Prometheus metrics of attempts as an attempt middleware (X10) in its
 * observer form ({@link AttemptObserver}: two plain calls per claim, no
 * closure or promise), which the server puts first in its attempt
 * middleware list, before the application's: on every claim handed to a
 * worker, the `running` transition and, for a regular job, its wait when
 * the claim is handed over; then a skipped claim (its lease had expired)
 * as a discarded command, or the attempt's time and outcome per worker
 * (`timed_out` as soon as the watchdog fails it; `cancelled` when its job
 * was cancelled while it ran, X3: nothing written, not a failure). Written
 * outcomes are recorded by the claimers (`outcomeWritten`), not here. Its
 * enqueue side is empty: the publisher's enqueue path skips it.
 */
export function metricsMiddleware(recorder: ServerMetrics, clock: Clock): ObserverMiddleware {
  return {
    [ATTEMPT_OBSERVER]: {
      before(run) {
        recorder.attemptStarted(run.claim.job, run.handedAt, run.claim.head === null);
      },
      after(run) {
        const { claim } = run;
        if (run.skipped) recorder.attemptDiscarded(claim.workerId);
        else recorder.attemptEnded(claim.job, claim.workerId, endedAs(run), clock.now() - run.handedAt);
      },
    },
  };
}

/** How an attempt that started ended, as the handler-duration histogram labels it. */
function endedAs(run: ObservedAttempt): AttemptOutcome {
  if (run.claim.timedOut) return "timed_out";
  if (run.claim.cancelled) return "cancelled";
  if (run.claim.abandoned || run.result === null) return "abandoned";
  return run.result.kind === "success" ? "success" : run.result.kind === "retry" ? "retry" : "failed";
}
