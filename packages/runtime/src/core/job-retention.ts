/**
 * Retention per job type and terminal stage (J11 in docs/semantics.md): how
 * long a finished job of one type is kept before the expiry sweep deletes
 * it. A field left unset falls back to the server's `retentionMs` (default
 * one day).
 *
 * `successMs: 0` is special: a success of the type deletes its row in the
 * statement that records it (as graphile-worker always does, BullMQ's
 * `removeOnComplete`, River Pro's ephemeral jobs). The stage counters count
 * the move into `success` and the row's removal (so throughput still sees
 * the success), continuations are released by the same statement, and a
 * `waitFor` already waiting resolves from the commit's wake-up; the job's
 * history and result are gone.
 */
import { describeValue, InvalidArgumentError } from "../errors.js";

/** How long a job type's finished jobs are kept, per terminal stage, in ms. Unset: the server's `retentionMs`. */
export interface JobRetention {
  /** A `success`; 0 deletes the row in the success write itself (no history, no result, no `later jobs show`). */
  successMs?: number | undefined;
  /** A `failed` job (retries spent, a permanent failure, a timeout); 0: deleted by the next sweep. */
  failedMs?: number | undefined;
  /** A `cancelled` job (X3) cancelled by this server; 0: deleted by the next sweep. */
  cancelledMs?: number | undefined;
}

/** The fields of {@link JobRetention}, in order. */
export const JOB_RETENTION_FIELDS = ["successMs", "failedMs", "cancelledMs"] as const;

/** The longest retention accepted (100 years), as the server's `retentionMs`. */
export const MAX_RETENTION_MS = 100 * 365 * 86_400_000;

/**
 * Checks a handler's `retention` option: an object of {@link JOB_RETENTION_FIELDS} only, each unset or an
 * integer from 0 to {@link MAX_RETENTION_MS}. Throws `INVALID_ARGUMENT` naming the job type and the field.
 */
export function checkJobRetention(jobType: string, retention: unknown): void {
  if (retention === undefined) return;
  if (retention === null || typeof retention !== "object" || Array.isArray(retention)) {
    throw new InvalidArgumentError(`handlers.${jobType}.retention must be an object { successMs?, failedMs?, cancelledMs? }, got ${describeValue(retention)}`);
  }
  for (const [field, value] of Object.entries(retention)) {
    if (!(JOB_RETENTION_FIELDS as readonly string[]).includes(field)) {
      throw new InvalidArgumentError(`handlers.${jobType}.retention: unknown field "${field}"; the fields are ${JOB_RETENTION_FIELDS.join(", ")}`);
    }
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_RETENTION_MS) {
      throw new InvalidArgumentError(
        `handlers.${jobType}.retention.${field} must be an integer from 0 to ${MAX_RETENTION_MS} (ms), got ${describeValue(value)}`,
      );
    }
  }
}

/**
 * The retention of a finish of a job type with `retention`: for a success its `successMs`, for a failure its
 * `failedMs`; undefined when the type sets none for that stage (the server's `retentionMs` applies) or the
 * outcome is a retry (not terminal).
 */
export function finishRetentionMs(retention: JobRetention | undefined, outcome: "success" | "retry" | "fail"): number | undefined {
  if (retention === undefined || outcome === "retry") return undefined;
  return outcome === "success" ? retention.successMs : retention.failedMs;
}

/** The `cancelledMs` of the job types whose retention sets one, by job type (for the cancel statements). */
export function cancelledMsByType(retentions: Readonly<Record<string, { retention?: JobRetention | undefined } | undefined>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [type, r] of Object.entries(retentions)) if (r?.retention?.cancelledMs !== undefined) out[type] = r.retention.cancelledMs;
  return out;
}
