import type { JobOutcome } from "../backend/backend.js";
import { RetryPolicy, type RetryPolicyJson } from "../core/retry/retry-policy.js";
import { describeThrown } from "../errors.js";
import type { ResolvedServerOptions } from "../server/server-options.js";

/** What the retry decision reads of a job: the attempt that failed and the policy stored with it. */
export interface FailedAttempt {
  jobType: string;
  /** The attempt that failed (1 for the first run). */
  attempt: number;
  /** JSON of the retry policy stored with the job. */
  retryPolicy: string;
}

/**
 * The one retry decision of later: what a failed attempt leads to, whether
 * its handler threw, timed out, or its process died (the stuck-job rescuer
 * and the re-claim of a crashed partition head ask it too).
 *
 * - The policy is the job type's own (`retry` handler option) when it has
 *   one, and then also replaces the stored one (`retryPolicy` of the retry
 *   outcome), so later attempts follow it wherever they run (J3);
 *   otherwise the policy stored with the job.
 * - When neither can be read (a `retry` option that throws or returns
 *   something else, stored JSON that no longer parses) the server default
 *   applies and the error says why.
 * - A retry is due after the policy's delay for `attempt`; once the policy
 *   has no delay left, the outcome is a final `fail` with the error kept.
 */
export function retryDecision<C>(options: ResolvedServerOptions<C>, job: FailedAttempt, error: string): JobOutcome {
  // Own keys only: a rescued job of a type this server has no handler for may be named like an Object member (`constructor`).
  const handler = Object.hasOwn(options.handlers, job.jobType) ? options.handlers[job.jobType] : undefined;
  let policy: RetryPolicy;
  let replacement: string | undefined;
  try {
    if (handler?.retry) {
      policy = handler.retry(options.context);
      if (!(policy instanceof RetryPolicy)) throw new Error(`the retry option of "${job.jobType}" returned ${String(policy)}, not a RetryPolicy`);
      replacement = JSON.stringify(policy);
    } else {
      policy = RetryPolicy.fromJson(JSON.parse(job.retryPolicy) as RetryPolicyJson);
    }
  } catch (cause) {
    policy = options.defaultRetryPolicy;
    error = `${error} (retry policy unavailable: ${describeThrown(cause)})`;
  }
  const delay = policy.delayBeforeRetry(job.attempt, options.random);
  if (delay === null) return { kind: "fail", error };
  return { kind: "retry", runAt: options.clock.now() + delay, error, retryPolicy: replacement };
}

/** The error stored for an attempt whose process died or stalled past its lease. */
export function lostAttemptError(attempt: number): string {
  return `worker lost: the lease of attempt ${attempt} expired (process crashed or stalled)`;
}
