import type { Clock } from "../core/clock.js";
import type { AttemptLayer, AttemptRun } from "../worker/attempt-run.js";
import type { AttemptOutcome, ServerMetrics } from "./server-metrics.js";

/**
 * The Prometheus metrics of attempts as the executor's built-in layer
 * (X10), outside the application's middleware, on every claim handed to a
 * worker: the `running` transition and, for a regular job, its wait when
 * the claim is handed over; then a skipped claim (its lease had expired)
 * as a discarded command, or the attempt's time and outcome per worker
 * (`timed_out` as soon as the watchdog fails it; `cancelled` when its job
 * was cancelled while it ran, X3: nothing written, not a failure). Written outcomes are
 * recorded by the claimers (`outcomeWritten`), not here.
 */
export function metricsLayer(recorder: ServerMetrics, clock: Clock): AttemptLayer {
  return {
    before(run) {
      recorder.attemptStarted(run.claim.job, run.handedAt, run.claim.head === null);
    },
    after(run) {
      const { claim } = run;
      if (run.skipped) recorder.attemptDiscarded(claim.workerId);
      else recorder.attemptEnded(claim.job, claim.workerId, endedAs(run), clock.now() - run.handedAt);
    },
  };
}

/** How an attempt that started ended, as the handler-duration histogram labels it. */
function endedAs(run: AttemptRun): AttemptOutcome {
  if (run.claim.timedOut) return "timed_out";
  if (run.claim.cancelled) return "cancelled";
  if (run.claim.abandoned || run.result === null) return "abandoned";
  return run.result.kind === "success" ? "success" : run.result.kind === "retry" ? "retry" : "failed";
}
