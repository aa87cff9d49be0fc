import { InvalidConfigError, describeValue } from "../../errors.js";
import type { RandomSource } from "../clock.js";

/** How the delay before retry number `n` (1-based) grows. */
export type RetryBackoff =
  | { kind: "fixed"; delayMs: number }
  | {
      kind: "exponential";
      /** Delay before the first retry. */
      initialMs: number;
      /** Growth factor per retry. */
      factor: number;
      /** Upper bound of the delay before jitter. */
      maxMs: number;
      /** Jitter as a fraction of the delay: the delay is scaled by a uniform factor in [1 - jitter, 1 + jitter]. */
      jitter: number;
    };

/** A policy as a JSON object (`toJSON`); the form `later_jobs.retry_policy` held before the shorter one of {@link storedRetryPolicy}, and still read. */
export interface RetryPolicyJson {
  maxRetries: number;
  backoff: RetryBackoff;
}

/**
 * How many times a failing job is retried, and how long to wait before each
 * retry. A job's first run is not a retry: `fixed(3, ...)` means up to four
 * runs in all.
 *
 * Which policy a failed job follows is decided by the server that runs it:
 * the policy given explicitly at enqueue (stored with the job), else the job
 * type's own (a handler's `retry` option), else that server's
 * `defaultRetryPolicy`, else {@link RetryPolicy.default}. A handler that
 * throws `PermanentJobError` fails its job at once, whatever the policy.
 */
export class RetryPolicy {
  readonly maxRetries: number;
  readonly backoff: RetryBackoff;

  private constructor(maxRetries: number, backoff: RetryBackoff) {
    if (!Number.isInteger(maxRetries) || maxRetries < 0) {
      throw new InvalidConfigError(`retry count must be an integer >= 0, got ${String(maxRetries)}`);
    }
    validateBackoff(backoff);
    this.maxRetries = maxRetries;
    this.backoff = backoff;
  }

  /** `retries` retries, each `delayMs` after the failure. */
  static fixed(retries: number, delayMs: number): RetryPolicy {
    return new RetryPolicy(retries, { kind: "fixed", delayMs });
  }

  /**
   * `retries` retries with delays `initialMs * factor^(n-1)`, capped at
   * `maxMs`, each scaled by a random factor in [1 - jitter, 1 + jitter].
   * Defaults: 1 s initial, factor 2, 10 min cap, jitter 0.2.
   */
  static exponential(retries: number, options: { initialMs?: number; factor?: number; maxMs?: number; jitter?: number } = {}): RetryPolicy {
    return new RetryPolicy(retries, {
      kind: "exponential",
      initialMs: options.initialMs ?? 1_000,
      factor: options.factor ?? 2,
      maxMs: options.maxMs ?? 600_000,
      jitter: options.jitter ?? 0.2,
    });
  }

  /** Fail on the first error. */
  static noRetries(): RetryPolicy {
    return new RetryPolicy(0, { kind: "fixed", delayMs: 0 });
  }

  /** The server default: 6 retries, exponential from 1 s, factor 2, cap 10 min, jitter ±20 %. */
  static default(): RetryPolicy {
    return RetryPolicy.exponential(6);
  }

  /** Rebuilds a policy from its JSON object form ({@link RetryPolicyJson}). */
  static fromJson(json: RetryPolicyJson): RetryPolicy {
    return new RetryPolicy(json.maxRetries, json.backoff);
  }

  toJSON(): RetryPolicyJson {
    return { maxRetries: this.maxRetries, backoff: this.backoff };
  }

  /**
   * The delay before retry `retry` (1-based), or `null` when the policy has
   * no retries left, so the job fails for good.
   */
  delayBeforeRetry(retry: number, random: RandomSource = Math.random): number | null {
    if (retry > this.maxRetries) return null;
    const b = this.backoff;
    if (b.kind === "fixed") return b.delayMs;
    const base = Math.min(b.maxMs, b.initialMs * b.factor ** (retry - 1));
    const scale = 1 - b.jitter + 2 * b.jitter * random();
    return Math.max(0, Math.round(base * scale));
  }
}

/**
 * The stored form of an explicit retry policy (`later_jobs.retry_policy`), or null for none (the job follows the
 * server that runs it): a JSON array of its numbers, `[maxRetries, delayMs]` for a fixed backoff and
 * `[maxRetries, initialMs, factor, maxMs, jitter]` for an exponential one. Every job row carries it and every
 * claim and finish writes the row again, so its size is paid on each write: the default policy is 21 characters
 * this way, against 105 as the {@link RetryPolicyJson} object that rows written before held (still read, see
 * {@link retryPolicyFromStored}).
 */
export function storedRetryPolicy(policy: RetryPolicy | null | undefined): string | null {
  if (!policy) return null;
  const b = policy.backoff;
  return JSON.stringify(b.kind === "fixed" ? [policy.maxRetries, b.delayMs] : [policy.maxRetries, b.initialMs, b.factor, b.maxMs, b.jitter]);
}

/**
 * The policy of a stored `retry_policy` text: the array form {@link storedRetryPolicy} writes, or the
 * {@link RetryPolicyJson} object of rows written before it. Throws (`InvalidConfigError`, or a `SyntaxError`
 * for text that is not JSON) when the text is neither.
 */
export function retryPolicyFromStored(text: string): RetryPolicy {
  const v = JSON.parse(text) as unknown;
  if (Array.isArray(v) && v.every((x) => typeof x === "number")) {
    if (v.length === 2) return RetryPolicy.fixed(v[0]!, v[1]!);
    if (v.length === 5) return RetryPolicy.exponential(v[0]!, { initialMs: v[1]!, factor: v[2]!, maxMs: v[3]!, jitter: v[4]! });
  } else if (v !== null && typeof v === "object" && !Array.isArray(v)) return RetryPolicy.fromJson(v as RetryPolicyJson);
  throw new InvalidConfigError(`stored retry policy ${text.slice(0, 100)} is neither [retries, delayMs] nor [retries, initialMs, factor, maxMs, jitter]`);
}

function validateBackoff(b: RetryBackoff): void {
  const finiteNonNegative = (name: string, v: number) => {
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      throw new InvalidConfigError(`retry ${name} must be a finite number >= 0, got ${describeValue(v)}`);
    }
  };
  if (b.kind === "fixed") {
    finiteNonNegative("delay", b.delayMs);
    return;
  }
  finiteNonNegative("initial delay", b.initialMs);
  finiteNonNegative("max delay", b.maxMs);
  if (typeof b.factor !== "number" || !(b.factor >= 1) || !Number.isFinite(b.factor)) {
    throw new InvalidConfigError(`retry factor must be a finite number >= 1, got ${String(b.factor)}`);
  }
  if (typeof b.jitter !== "number" || !(b.jitter >= 0 && b.jitter <= 1)) {
    throw new InvalidConfigError(`retry jitter must be between 0 and 1, got ${String(b.jitter)}`);
  }
}
