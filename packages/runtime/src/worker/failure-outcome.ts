import type { ClaimedJob, JobOutcome } from "../backend/backend.js";
import { RetryPolicy, type RetryPolicyJson } from "../core/retry/retry-policy.js";
import { describeThrown } from "../errors.js";
import type { HandlerRegistration, ResolvedServerOptions } from "../server/server-options.js";

/**
 * What a failed attempt leads to: a retry at the policy's next delay, or a
 * final failure once retries are spent. The policy is the job type's own
 * (`retry` option, which then replaces the stored one) or the policy stored
 * with the job; when neither can be read the server default applies and
 * the reason says why. Shared by the worker pool and the partition runner.
 */
export function failureOutcome<C>(options: ResolvedServerOptions<C>, handler: HandlerRegistration<C>, job: ClaimedJob, error: string): JobOutcome {
  let policy: RetryPolicy;
  let replacement: string | undefined;
  try {
    if (handler.retry) {
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
