import type { ClaimedJob, JobOutcome } from "../backend/backend.js";
import { retryDecision, type RetryDecisionConfig } from "../core/retry/retry-decision.js";
import { InvalidResultError } from "../errors.js";

/**
 * The outcome of an attempt whose handler resolved to `value` (X6): a
 * success carrying the value as JSON text, or, for a value that cannot be
 * stored, a failure with an `INVALID_RESULT` reason, retried per policy
 * like any failure (the next attempt may well return something storable;
 * a handler that always does exhausts its retries and fails). Only called
 * for a value other than `undefined` (no result: the shared success).
 *
 * What cannot be stored: over {@link InvalidResultError.limit} bytes of JSON
 * text (UTF-8), or a value `JSON.stringify` throws on (a BigInt, a cycle)
 * or turns into nothing (a function, a symbol). Values JSON changes but
 * holds (a `Date` becomes its ISO string, `NaN` becomes null, a `Map` `{}`)
 * are stored as `JSON.stringify` writes them: results are not validated
 * against a declared type at run time (the `Results` interface types them
 * at compile time only).
 */
export function resultOutcome<C>(options: RetryDecisionConfig<C>, job: ClaimedJob, value: unknown): JobOutcome {
  let text: string | undefined;
  let why: string;
  try {
    text = JSON.stringify(value);
    why = `JSON.stringify turned the ${typeof value} into nothing; return JSON data (or nothing)`;
  } catch (cause) {
    why = `it is not JSON (${(cause as Error)?.message ?? String(cause)}); return JSON data: no BigInt, cycle or function`;
  }
  if (text !== undefined) {
    // A string's UTF-8 size is at most 3 bytes per UTF-16 unit: measured only near the limit.
    if (text.length * 3 <= InvalidResultError.limit) return { kind: "success", result: text };
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes <= InvalidResultError.limit) return { kind: "success", result: text };
    why = `its JSON is ${bytes} bytes, over the limit of ${InvalidResultError.limit} (64 KiB); store large data elsewhere and return a reference`;
  }
  const error = new InvalidResultError(job.jobType, why);
  return retryDecision(options, job, `${error.code}: ${error.message}`);
}
