/**
 * ## Terminology
 *
 * - **job**: one stored unit of work: a job type, a JSON payload, a stage.
 * - **job type**: the stable name a handler is registered under (the member
 *   name in `jobs.schema.ts`); stored with every job.
 * - **namespace**: servers on one database and namespace share one pool;
 *   other namespaces are invisible to them.
 * - **claim**: a worker moving a ready job to `running` under a lease, in
 *   one write. The claim is identified by `(jobId, attempt)`; every later
 *   write of that attempt is guarded by it (fencing), so a stale worker can
 *   never overwrite a newer attempt.
 * - **lease**: `leaseExpiresAt` on a running job, renewed while the handler
 *   runs. A lease that stays expired for a while means the worker is gone;
 *   the stuck-job sweep then retries or fails the job.
 * - **continuation**: a job with a parent; it waits until the parent succeeds.
 * - **expiry**: terminal jobs keep their row until `expiresAt`, then the
 *   sweep deletes them in small batches.
 *
 * ## Job stages
 *
 * ```text
 *   enqueue ──► enqueued ──────────────┐
 *   enqueueDelayed ──► delayed ──(due)─┤
 *   enqueueContinue ─► waiting ─(parent succeeds)─► enqueued
 *                         │                        │
 *                  (parent fails)                  ▼ claim
 *                         ▼                     running ──(resolve)──► success
 *                       failed ◄──(retries spent / decode error)──┤
 *                                                  │ (throw, retries left;
 *                                                  ▼  or lease abandoned)
 *                                               requeued ──(due)──► running
 *
 *   cancel (X3): enqueued | delayed | waiting | requeued | running ──► cancelled
 *                (a running attempt's signal aborts; its waiting continuations are cancelled with it)
 * ```
 *
 * `success`, `failed` and `cancelled` are terminal. Every change is appended to the job's
 * stage history with its time; a put-back at shutdown and a
 * `PermanentJobError` failure also with a note ({@link StageNote}). From outside (X7): `retry` puts a `failed`
 * job back to `enqueued` (failed ──retry──► enqueued, a partitioned one at
 * its partition's end), and a `cancelled` one likewise; `delete` removes a
 * terminal job; `cancel` (X3) ends an unfinished one `cancelled` at once,
 * noted with its reason.
 * Every legal change, by kind, is in `STAGE_TRANSITIONS` (`stage-transition.ts`, X13).
 */
export type JobStage = "enqueued" | "delayed" | "waiting" | "running" | "requeued" | "success" | "failed" | "cancelled";

/** Every stage, in lifecycle order. */
export const JOB_STAGES: readonly JobStage[] = ["enqueued", "delayed", "waiting", "running", "requeued", "success", "failed", "cancelled"];

/**
 * Stages a worker may claim from once the job's `runAt` has passed: the
 * ready-index predicate of both backends, and the claim and ready-count
 * filters (SQL lists are rendered by `backend/shared/stage-list.ts`).
 */
export const CLAIMABLE_STAGES: readonly JobStage[] = ["enqueued", "delayed", "requeued"];

/** The terminal stages as a literal tuple, so {@link TerminalStage} follows {@link TERMINAL_STAGES}. */
const TERMINAL = ["success", "failed", "cancelled"] as const satisfies readonly JobStage[];

/** Terminal stages: the job will not run again and expires after the retention period. */
export const TERMINAL_STAGES: readonly JobStage[] = TERMINAL;

/** A terminal stage (`waitFor`'s `stage`, X6): a member of {@link TERMINAL_STAGES}. */
export type TerminalStage = (typeof TERMINAL)[number];

/**
 * Stages `retry` puts back to `enqueued` (docs/semantics.md X7): a job that failed for
 * good, or one cancelled (X3).
 */
export const RETRYABLE_STAGES: readonly JobStage[] = ["failed", "cancelled"];

/**
 * Stages `cancel` ends `cancelled` (docs/semantics.md X3): every unfinished
 * stage. A `running` job's attempt is told through its lease renewal.
 */
export const CANCELLABLE_STAGES: readonly JobStage[] = ["enqueued", "delayed", "waiting", "running", "requeued"];

/**
 * Every stage but the terminal ones: the job may still run. A partition's
 * head is its unfinished job with the lowest sequence, and a partition's
 * depth counts its unfinished jobs.
 */
export const UNFINISHED_STAGES: readonly JobStage[] = JOB_STAGES.filter((s) => !TERMINAL_STAGES.includes(s));

/**
 * The notes a history entry can carry (docs/semantics.md J1), stored only
 * for changes whose usual reading would mislead: `shutdown`, a job put back
 * at a shutdown's deadline (J9, the attempt not counted as a failure);
 * `permanent`, a failure from `PermanentJobError` (J3, no retry tried).
 * Plain changes carry none, so the common writes stay as short as before.
 * A `cancelled` entry carries the reason given to `cancel` (X3), when one
 * was, as its note (free text, not one of these).
 */
export type StageNote = "shutdown" | "permanent";

/** One entry of a job's stage history. */
export interface StageChange {
  stage: JobStage;
  /** When the change was stored, ms since the epoch. */
  at: number;
  /**
   * Why, when the change is not the usual one ({@link StageNote}); absent on
   * plain changes. Typed as any string: a reader shows a note it does not
   * know (one written by a newer release) as it is.
   */
  note?: string;
}

/**
 * Parses the stored `stages` column: a JSON array of `[stage, atMs]` or
 * `[stage, atMs, note]` entries (docs/storage.md). The note is kept only
 * when it is a non-empty string.
 */
export function parseStageHistory(text: string): StageChange[] {
  return (JSON.parse(text) as [JobStage, number, unknown?][]).map(([stage, at, note]) =>
    typeof note === "string" && note !== "" ? { stage, at, note } : { stage, at },
  );
}
