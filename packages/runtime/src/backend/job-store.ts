/**
 * The job part of the seam (`backend.jobs`): the worker pool's claim,
 * finish, release and renewal, the publisher's insert, and the reads and
 * deletes of the stuck-job rescue, autoscaling and the expiry sweep.
 *
 * Claim fencing: a claim is identified by `(id, attempt)`. The claim write
 * increments `attempt`; every later write of that claim (renew, finish,
 * release) matches `stage = 'running' AND attempt = <claim attempt>`, so a
 * worker whose job was rescued and re-claimed elsewhere can never overwrite
 * the newer attempt.
 */
import type { JobId } from "../core/job-id.js";
import type { JobStage } from "../core/job-stage.js";
import type { LimitsSetParams, LimitsSetResult, LimitsUngroupedAdoptResult } from "./job-limits.js";
import type {
  JobClaimReadyParams,
  JobClaimReadyResult,
  JobFinishManyParams,
  JobFinishManyResult,
  JobReleaseManyParams,
  JobReleaseManyResult,
  LeaseRenewParams,
  JobProgressSetParams,
  LeaseRenewResult,
  JobListStuckParams,
  StuckJob,
  JobCountReadyParams,
  JobDeleteExpiredParams,
} from "./job-claim.js";

export type * from "./job-claim.js";

/** The job statements of one backend, scoped to its namespace. `Trx`: the caller-owned transactions its inserts accept. */
export interface JobStore<Trx = unknown> {
  /**
   * Inserts jobs in one transaction: the backend's own, or the caller's
   * (`params.transaction`). A continuation's stage follows its parent:
   * `waiting`, `enqueued` (parent succeeded) or `failed` (parent failed).
   * An unknown parent throws `ParentNotFoundError` and writes nothing; so
   * does a parent of the same batch, on every dialect (J5): a parent must be
   * stored by an earlier insert (the public API cannot name a job of its
   * own batch as parent). A job stored `failed` gets its expiry
   * (`params.retentionMs`, J11).
   *
   * SQLite: `BEGIN IMMEDIATE`, one prepared insert per job; into a caller's
   * Kysely transaction, Kysely statements compiled once. PostgreSQL: one
   * `INSERT … SELECT FROM json_to_recordset($1)` for the whole batch, in
   * autocommit when no job has a parent or a partition; otherwise in a
   * transaction that first reserves the partitions' sequences and
   * share-locks the parents, so a parent cannot finish between reading its
   * stage and inserting its continuation (run again, up to three times,
   * when PostgreSQL rolls it back for a deadlock). With `transaction`, the
   * same statements run on the caller's Kysely transaction or `pg` client.
   */
  insertMany(params: JobInsertManyParams<Trx>): Promise<JobInsertManyResult>;
  /**
   * X2: for each of `inserts`, in order, inserts one job that holds its
   * `uniqueKey` among the unfinished jobs of its type, or, when the key is
   * held, does what its `uniqueMode` says (see `EnqueueOptions.uniqueMode`),
   * race-safe across processes through the unique index on (namespace,
   * job_type, unique_key, unique_slot): a job not started yet holds the
   * `pending` slot, a started one (running, or put back / requeued after a
   * run) the `active` slot, and a finish clears the slot. Resolves to, per
   * insert, the job that now stands for the enqueue and what happened.
   * Several inserts are written together (the publisher writes concurrent
   * unique enqueues so), each seeing the ones before it, so two of one key
   * do what they would one after the other: on SQLite in one transaction; on
   * PostgreSQL in one statement when their keys are distinct (an insert that
   * lost a race to another writer runs again in a statement of its own),
   * else in one transaction. Never on a caller's transaction, never
   * partitioned.
   */
  insertUniqueMany(params: JobInsertUniqueManyParams): Promise<JobInsertUniqueManyResult>;
  /**
   * Claims up to `limit` ready jobs (lowest priority number first, then oldest `runAt`) in one write: stage `running`, `attempt + 1`, a lease.
   *
   * X9: with `limitedTypes`, those types are claimed first by a limited
   * step, within their stored limits (`later_limits`), then `jobTypes` by
   * the plain claim with what is left. The limited step, per type in type
   * order: lock the type's limits row (PostgreSQL `FOR UPDATE`, which
   * serialises the limited claims of one type across servers; SQLite has
   * one writer already), count its running regular jobs (through the
   * partial index `later_jobs_running`, the namespace's running jobs), count its starts in the rate window (the
   * row's `rate_starts`), claim up to the free slots with the plain claim
   * statement narrowed to the type, and store the new starts; a type
   * without a stored row is claimed unlimited. When the rate window holds a
   * type back, the time it opens is folded into `nextRunAt`. Without
   * `limitedTypes` (no limit on the server) the claim is the one statement
   * it always was. SQLite: all in one `immediate` transaction; PostgreSQL:
   * the limited step in one transaction, then the plain claim in autocommit.
   */
  claimReady(params: JobClaimReadyParams): Promise<JobClaimReadyResult>;
  /**
   * X9: stores the limits of a starting server's job types and returns
   * what was stored before, so the server can warn when they differ (the
   * last server started wins). `limits`: the types with a limit, upserted;
   * every other type of `jobTypes` has its row deleted (no limit). One
   * transaction; a type's recent starts are kept when its row is updated.
   */
  limitsSet(params: LimitsSetParams): Promise<LimitsSetResult>;
  /**
   * X9: moves the ready jobs with no group stored (NULL) of the namespace's
   * group-limited types to their type's ungrouped group (`''`,
   * shared/ungrouped-group.ts) and returns how many. Such rows are written
   * before a server stores the type's group limit (`limitsSet` moves those
   * of that moment), or, on PostgreSQL, by an insert whose statement began
   * before that commit; a group claim does not read them (doing so read
   * every ready row ahead of them at each claim). Run by the stuck-job
   * rescue each interval. Nothing is read when the namespace has no group
   * limit.
   */
  limitsUngroupedAdopt(): Promise<LimitsUngroupedAdoptResult>;
  /**
   * Stores attempt outcomes in one transaction, each guarded by its claim.
   * Success releases waiting continuations; a final failure fails them, down
   * the chain, with the reason.
   *
   * J11: a batch where some finish carries its own `retentionMs` is split by
   * retention class (`shared/finish-retention.ts`): the successes with 0 are
   * deleted by the statement that records them (PostgreSQL `finishDiscard`, one
   * statement; SQLite a DELETE in place of the success UPDATE, in the same
   * transaction as the rest), counted as `succeed` then `discard`; each other
   * class is written by the statements of a batch without per-type retention,
   * with its retention. PostgreSQL writes the classes one after the other
   * (each fenced by its claims), SQLite in one transaction. A batch without
   * any `retentionMs` is written exactly as before.
   */
  finishMany(params: JobFinishManyParams): Promise<JobFinishManyResult>;
  /**
   * Puts claims back at shutdown, in one write: claimed jobs no worker
   * started, and jobs whose handler was still running at the shutdown
   * deadline. Each goes back to its stage before the claim (`enqueued`, or
   * `requeued` after an earlier attempt), ready now, its lease cleared and
   * the attempt undone (not counted as a failure). Fenced by the claim
   * (`stage = 'running' AND attempt`), so a job already rescued and taken by
   * another server is untouched. SQLite: one `BEGIN IMMEDIATE`, one update
   * per claim; PostgreSQL: one statement over `unnest` of the claims.
   */
  releaseMany(params: JobReleaseManyParams): Promise<JobReleaseManyResult>;
  /** Extends the leases of the given claims in one write; of the claims lost, tells which were cancelled (X3). */
  leaseRenew(params: LeaseRenewParams): Promise<LeaseRenewResult>;
  /**
   * Stores a running attempt's progress (X8, `ctx.progress`): only while the
   * job is `running` attempt `attempt` under `owner`'s claim, so a stalled
   * attempt whose job was taken over writes nothing. Resolves to whether it
   * was stored. One statement written once (`job-statements.ts`); it
   * changes no stage, so no counter.
   */
  progressSet(params: JobProgressSetParams): Promise<boolean>;
  /** Running jobs whose lease expired before the given time. */
  listStuck(params: JobListStuckParams): Promise<StuckJob[]>;
  /**
   * Ready jobs of these types (due now): the backlog autoscaling reads. A
   * query over the partial index of claimable rows, not a counter: which
   * delayed and requeued jobs are ready depends on the time.
   */
  countReady(params: JobCountReadyParams): Promise<number>;
  /** Deletes up to `limit` expired rows; returns how many. */
  deleteExpired(params: JobDeleteExpiredParams): Promise<number>;
  /**
   * The stage, result and last error of the jobs `ids` of this namespace
   * (X6, `waitFor`); an id not stored (never enqueued, deleted, expired) is
   * left out. One indexed read for any number of ids. With `markAwaited`
   * (PostgreSQL), the rows are first marked awaited in the same statement
   * (`UPDATE … SET awaited = true … RETURNING`), so every later statement
   * that makes one terminal notifies the done channel; a row already
   * terminal is returned as such (the caller LISTENs before calling, so no
   * wake-up is lost between the two). SQLite has no mark (its waiters wake
   * on every commit) and ignores it.
   */
  readOutcomes(params: JobReadOutcomesParams): Promise<JobOutcomeRow[]>;
}

export interface JobReadOutcomesParams {
  ids: readonly JobId[];
  /** Mark the rows awaited first (PostgreSQL; see {@link JobStore.readOutcomes}). Default false. */
  markAwaited?: boolean | undefined;
}

/** One job as `waitFor` reads it. */
export interface JobOutcomeRow {
  id: JobId;
  stage: JobStage;
  /** The success's result as JSON text; null: none (not finished, failed, or the handler returned nothing). */
  result: string | null;
  /** The last attempt's error; null when none failed. */
  error: string | null;
}

/** One job to insert. */
export interface JobInsert {
  id: JobId;
  jobType: string;
  /** The payload, already encoded as JSON text. */
  payload: string;
  /** Not before this time (ms). Jobs with `runAt > now` are stored `delayed`. */
  runAt: number;
  /** Continuation: the job waits for this parent to succeed. */
  parentId?: JobId | undefined;
  /**
   * Fan-in continuation (X5), instead of {@link parentId}: two or more
   * distinct parent ids, sorted (the publisher folds repeats and sorts,
   * `parentsOf`). The job waits for all of them to succeed.
   */
  parentIds?: readonly JobId[] | undefined;
  /**
   * JSON of the retry policy given explicitly at enqueue (an `EnqueueOptions.retryPolicy`,
   * or a publisher's `defaultRetryPolicy` given in its options); null when none was, so
   * the job follows the policy of the server that runs it (see `retryDecision`).
   */
  retryPolicy: string | null;
  /**
   * The job's own attempt timeout in ms (`EnqueueOptions.timeoutMs`), which
   * wins over its type's `timeoutMs` and the server's `jobTimeoutMs`.
   * Default (undefined or null): none stored.
   */
  timeoutMs?: number | null | undefined;
  /**
   * Partitioned job: its topic and partition. The backend gives it the
   * partition's next sequence in the same write; a topic or partition the
   * database does not hold throws `UnknownTopicError` and writes nothing.
   */
  topic?: string | undefined;
  partition?: number | undefined;
  /** X1: lower is claimed first among ready regular jobs; default (undefined) 0. Never given with a topic (partitions keep sequence order). */
  priority?: number | undefined;
  /** X9: `EnqueueOptions.group` (1 to 200 characters), stored as `group_key`; default (undefined or null): none, NULL. Never given with a topic. */
  group?: string | null | undefined;
  /**
   * The job's metadata (X10): JSON text of an object the enqueue middleware
   * set (a trace context, ...), handed back to the attempt middleware.
   * Default (undefined or null): none, stored NULL.
   */
  meta?: string | null | undefined;
}

export interface JobInsertManyParams<Trx = unknown> {
  jobs: readonly JobInsert[];
  now: number;
  /**
   * A job stored terminal at its insert (a continuation whose parent had
   * already failed, stored `failed`) gets `expiresAt = now + retentionMs`,
   * as a finish gives one (J11), so the expiry sweep deletes it and the
   * filter forms of `control` see it. Default: one day, the servers' default
   * `retentionMs`. Jobs stored unfinished get no expiry.
   */
  retentionMs?: number | undefined;
  /** Write into this caller-owned transaction instead of a transaction of the backend's own (`enqueueIn`). */
  transaction?: Trx | undefined;
}

export interface JobInsertUniqueParams {
  /** The job to insert (its `id` made by the caller: a run again after a lost reply finds it). */
  job: JobInsert;
  uniqueKey: string;
  uniqueMode: "keep" | "replace" | "afterActive";
  now: number;
}

export interface JobInsertUniqueManyParams {
  /** At least one. */
  inserts: readonly JobInsertUniqueParams[];
}

export interface JobInsertUniqueManyResult {
  /** One per insert, in order. */
  results: JobInsertUniqueResult[];
}

export interface JobInsertUniqueResult {
  /** The job standing for the enqueue: `job.id` when inserted, else the unfinished job of the key. */
  id: JobId;
  /** `inserted`: a new job; `existing`: nothing written; `replaced`: the key's job not yet started took the payload (and, for `replace`, the run time). */
  outcome: "inserted" | "existing" | "replaced";
  /** The stage of job `id` after the write. */
  stage: JobStage;
}

export interface JobInsertManyResult {
  /** Stage each job was stored in, in input order. */
  stages: JobStage[];
}
