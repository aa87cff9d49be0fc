/**
 * Retry, delete and cancel from outside (`backend.control`, docs/semantics.md X7): what an
 * operator does to stored jobs through the server, a publisher, the CLI or
 * the dashboard's actions. Each method takes either a list of ids (the
 * by-id form) or a filter (the list's filter: stage and job type) and
 * changes at most `limit` jobs in one transaction, set-based (one
 * statement selects the rows, one changes them), so the caller loops a
 * filter in batches and no batch holds a long transaction. Jobs in a stage
 * the action does not apply to are never touched: the method skips them and
 * returns only what it changed; the caller tells a refused id from an
 * unknown one by reading it (`inspect.jobGet`).
 *
 * Every change adds its moves to the stage counters (and the partition
 * depth counters) in the same transaction, as every other stage change.
 *
 * Pause and resume (X4) are here too: `pauseSet`, `pausedList` and
 * `pauseTargetKnown`, over `later_paused` (no job row changes).
 */
import type { JobId } from "../core/job-id.js";
import type { JobStage } from "../core/job-stage.js";

/** The control statements of one backend, scoped to its namespace. */
export interface JobControlStore {
  /**
   * Puts up to `limit` retryable jobs (`RETRYABLE_STAGES`: `failed`) back
   * to `enqueued`, ready at `now`: a stage-history entry is appended (the
   * history is kept), the expiry cleared, `last_error` kept until the next
   * attempt overwrites it, and `attempt` kept (claims are fenced by
   * `(id, attempt)`, so it never goes back). A partitioned job takes its
   * partition's next sequence: it goes to the end of its partition, after
   * what is queued there now, so the partition's order is kept.
   *
   * SQLite: one `BEGIN IMMEDIATE`: the selecting `UPDATE … RETURNING`, then
   * one sequence reservation per partitioned row. PostgreSQL: one statement
   * (rows locked `FOR UPDATE` in id order, sequences reserved per partition,
   * counters, one `pg_notify`), run again after a deadlock.
   */
  retryMany(params: JobRetryManyParams): Promise<JobControlResult>;
  /**
   * Deletes up to `limit` terminal jobs (`success`, `failed`). A terminal
   * job has no waiting continuations (they were released or failed with
   * it), so nothing waits on a deleted row. SQLite: one `DELETE …
   * RETURNING` in `BEGIN IMMEDIATE`; PostgreSQL: one statement.
   */
  deleteMany(params: JobDeleteManyParams): Promise<JobControlResult>;
  /**
   * Ends up to `limit` unfinished jobs (`CANCELLABLE_STAGES`) `cancelled`
   * (docs/semantics.md X3), in one transaction: a `cancelled` history entry
   * noted with `reason` (none when null), the lease cleared, `expiresAt`
   * set (terminal), `attempt` and `last_error` kept. The waiting
   * continuations of each, down the chain, are cancelled with it (same
   * note), counted too but not returned. A `running` job's attempt is
   * fenced out (its row is no longer `running`): its worker learns it at
   * its next lease renewal (`leaseRenew`'s `cancelled`); a running
   * partition head also frees its partition (the epoch moves on, as
   * `forceFailHead`), so the partition goes on with its next job.
   * PostgreSQL: one statement, which also sends the wake-up (a partition
   * may go on) and, when a running job was cancelled, the cancel
   * notification (`cancelSubscribe`) so its server renews at once.
   */
  cancelMany(params: JobCancelManyParams): Promise<JobControlResult>;
  /**
   * How many jobs a filter form would take now (the CLI's confirmation):
   * one `count(*)` over the terminal rows of the expiry index (cancel: the
   * unfinished rows), the filter's `afterId` ignored. A read for an operator, never on a worker's path.
   */
  countMatching(params: JobCountMatchingParams): Promise<number>;
  /**
   * Pauses (`paused: true`: inserts the row, `paused_at` = `now`) or resumes
   * (deletes it) one job type or topic of the namespace (docs/semantics.md
   * X4); resolves true when that changed something, false when it already
   * was so. One statement (written once, `shared/pause-statements.ts`); a
   * resume that deleted a row sends the wake-up (PostgreSQL: the backend's
   * `pg_notify`; SQLite: the commit itself, seen by other processes' WAL
   * watchers), so idle servers read the paused set again at once.
   */
  pauseSet(params: PauseSetParams): Promise<boolean>;
  /** Every paused job type and topic of the namespace, by kind then name: one primary-key range read, what each server reads once per poll interval. */
  pausedList(): Promise<PausedTarget[]>;
  /**
   * Whether the namespace knows a job type or topic, so that pausing a typo is
   * refused: a topic is known when `later_topics` holds it; a job type when a
   * server row lists it (`later_servers.job_types`), a recurring schedule is of
   * it, or a job of it is stored (an `EXISTS` over `later_jobs`, which has no
   * job-type index: an operator's read, never on a worker's path).
   */
  pauseTargetKnown(params: PauseTargetRef): Promise<boolean>;
}

/** What {@link JobControlStore.pauseSet} pauses or resumes: a job type (`type`) or a topic. */
export interface PauseTargetRef {
  kind: "type" | "topic";
  name: string;
}

export interface PauseSetParams extends PauseTargetRef {
  paused: boolean;
  now: number;
}

/** One paused job type or topic, and since when. */
export interface PausedTarget extends PauseTargetRef {
  pausedAt: number;
}

export interface JobCountMatchingParams {
  action: "retry" | "delete" | "cancel";
  filter: JobControlFilter;
}

/** Which jobs: these ids, or every job matching a filter (at most `limit` of either per call). */
export type JobControlTarget = { ids: readonly JobId[] } | { filter: JobControlFilter };

/** The list's filter. Jobs outside the action's stages never match, whatever the filter says. */
export interface JobControlFilter {
  /** Only jobs in this stage. Default: every stage the action applies to. */
  stage?: JobStage | undefined;
  /** Only jobs of this job type. Default: every type. */
  jobType?: string | undefined;
  /**
   * Only jobs with a greater id: the walk's cursor, the last id of the
   * previous batch, so one walk takes each job once (a job that fails again
   * after its batch is not taken twice) and never rereads skipped rows.
   */
  afterId?: JobId | undefined;
}

export interface JobRetryManyParams {
  target: JobControlTarget;
  now: number;
  /** At most this many jobs change (the batch size of a filter). */
  limit: number;
}

export interface JobCancelManyParams {
  target: JobControlTarget;
  /** The history note of the change (the caller's reason); null: none. */
  reason: string | null;
  now: number;
  /** When the cancelled rows expire (now + the retention period). */
  expiresAt: number;
  /**
   * J11: the `cancelledMs` of the job types that set one (handler option `retention`, schema tag
   * `@retainCancelled`): a cancelled row of such a type (its continuations too) expires at `now` + its
   * type's; others at {@link expiresAt}. Absent or null: all at `expiresAt`.
   */
  retentionMsByType?: Readonly<Record<string, number>> | null;
  limit: number;
}

export interface JobDeleteManyParams {
  target: JobControlTarget;
  limit: number;
}

/** What one call changed. */
export interface JobControlResult {
  /** The jobs retried or deleted, in id order; ids not listed were skipped (another stage) or unknown. */
  ids: JobId[];
}
