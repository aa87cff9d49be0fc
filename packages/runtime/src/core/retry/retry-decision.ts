import type { Clock, RandomSource } from "../clock.js";
import { RetryPolicy, retryPolicyFromStored } from "./retry-policy.js";
import { describeThrown } from "../../errors.js";

/**
 * What the retry decision reads of a server's options: the handlers' `retry`
 * options (called with the application context), the server's default
 * policy, and the clock and randomness the delay is drawn with.
 */
export interface RetryDecisionConfig<C> {
  context: C;
  handlers: Readonly<Record<string, { retry?: (app: C) => RetryPolicy }>>;
  defaultRetryPolicy: RetryPolicy;
  random: RandomSource;
  clock: Clock;
}

/** A failed attempt's outcome: retried at `runAt`, or failed for good (a `JobOutcome` of the backend). */
export type RetryOutcome = { kind: "retry"; runAt: number; error: string } | { kind: "fail"; error: string };

/** What the retry decision reads of a job: the attempt that failed and the explicit policy stored with it. */
export interface FailedAttempt {
  jobType: string;
  /** The attempt that failed (1 for the first run). */
  attempt: number;
  /** JSON of the explicit retry policy stored with the job; null when it was enqueued without one. */
  retryPolicy: string | null;
}

/**
 * The one retry decision of later: what a failed attempt leads to, whether
 * its handler threw, timed out, or its process died (the stuck-job rescuer
 * and the re-claim of a crashed partition head ask it too). A handler's
 * `PermanentJobError` never gets here: the executor fails the job at once.
 *
 * The policy follows the server that runs the job, whichever process
 * enqueued it:
 * 1. the policy stored with the job, when one was given explicitly at
 *    enqueue (`EnqueueOptions.retryPolicy`, or a publisher's
 *    `defaultRetryPolicy` given in its options);
 * 2. else the job type's own (`retry` handler option) on this server;
 * 3. else this server's `defaultRetryPolicy` (whose own default is
 *    {@link RetryPolicy.default}, 6 retries, exponential).
 *
 * When the chosen policy cannot be read (a `retry` option that throws or
 * returns something else, stored JSON that no longer parses) the server
 * default applies and the error says why. A retry is due after the
 * policy's delay for `attempt`; once the policy has no delay left, the
 * outcome is a final `fail` with the error kept.
 */
export function retryDecision<C>(options: RetryDecisionConfig<C>, job: FailedAttempt, error: string): RetryOutcome {
  let policy: RetryPolicy;
  try {
    policy = resolvePolicy(options, job);
  } catch (cause) {
    policy = options.defaultRetryPolicy;
    error = `${error} (retry policy unavailable: ${describeThrown(cause)})`;
  }
  const delay = policy.delayBeforeRetry(job.attempt, options.random);
  if (delay === null) return { kind: "fail", error };
  return { kind: "retry", runAt: options.clock.now() + delay, error };
}

/** The policy in force for `job` on this server (see {@link retryDecision}); throws when the chosen one cannot be read. */
function resolvePolicy<C>(options: RetryDecisionConfig<C>, job: FailedAttempt): RetryPolicy {
  if (job.retryPolicy !== null) return retryPolicyFromStored(job.retryPolicy);
  // Own keys only: a rescued job of a type this server has no handler for may be named like an Object member (`constructor`).
  const handler = Object.hasOwn(options.handlers, job.jobType) ? options.handlers[job.jobType] : undefined;
  if (!handler?.retry) return options.defaultRetryPolicy;
  const policy = handler.retry(options.context);
  if (!(policy instanceof RetryPolicy)) throw new Error(`the retry option of "${job.jobType}" returned ${String(policy)}, not a RetryPolicy`);
  return policy;
}

/** The error stored for an attempt whose process died or stalled past its lease. */
export function lostAttemptError(attempt: number): string {
  return `worker lost: the lease of attempt ${attempt} expired (process crashed or stalled)`;
}
