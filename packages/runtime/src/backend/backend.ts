/**
 * The one database seam. The server, workers and maintenance talk to the
 * database only through {@link Backend}; nothing outside `backend/` imports
 * kysely, better-sqlite3 or pg, or asks which dialect it runs on. Each method
 * is one whole queue operation, named noun-first, taking one params object
 * and returning a named result. Real dialect gaps are
 * {@link BackendCapabilities} fields.
 *
 * Every method is scoped to the backend's namespace.
 *
 * Claim fencing: a claim is identified by `(id, attempt)`. The claim write
 * increments `attempt`; every later write of that claim (renew, finish,
 * release) matches `stage = 'running' AND attempt = <claim attempt>`, so a
 * worker whose job was rescued and re-claimed elsewhere can never overwrite
 * the newer attempt.
 */
import type { JobId } from "../core/job-id.js";
import type { JobStage, StageChange } from "../core/job-stage.js";
import type * as P from "./partition-seam.js";
import type * as R from "./recurring-seam.js";

export type * from "./partition-seam.js";
export type * from "./recurring-seam.js";

/** What a backend can and cannot do, for the few places where that matters. */
export interface BackendCapabilities {
  /**
   * The backend reports commits made by other processes through
   * {@link Backend.wakeSubscribe} (SQLite: the WAL file is watched;
   * PostgreSQL: LISTEN/NOTIFY). When false, other processes' work is found
   * by polling only.
   */
  readonly crossProcessWake: boolean;
  /** `databaseVacuum` reclaims disk space (SQLite `VACUUM`). */
  readonly supportsVacuum: boolean;
  /**
   * How many jobs a server keeps claimed (running plus buffered): `perWorker`
   * × the live workers until the worker pool has measured its pace, then
   * what the workers finish in a few claim round trips, at most `max` (and
   * never fewer than two per worker); see `ClaimPacer`. Claimed jobs wait in
   * the server's local buffer, leased, until a worker is free. Where a
   * statement costs much more than a row (PostgreSQL: a round trip and a
   * commit) larger batches buy throughput; where commits are cheap (SQLite)
   * small ones keep jobs spread evenly over processes.
   */
  readonly claimBatch: { readonly perWorker: number; readonly max: number };
}

/** A caller-owned transaction to write into (`enqueueIn`). Each backend documents which kinds it accepts. */
export type TransactionHandle = unknown;

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
  /** JSON of the retry policy in force at enqueue. */
  retryPolicy: string;
  /**
   * Partitioned job: its topic and partition. The backend gives it the
   * partition's next sequence in the same write; a topic or partition the
   * database does not hold throws `UnknownTopicError` and writes nothing.
   */
  topic?: string | undefined;
  partition?: number | undefined;
}

export interface JobInsertManyParams {
  jobs: readonly JobInsert[];
  now: number;
  /** Write into this caller-owned transaction instead of a transaction of the backend's own. */
  transaction?: TransactionHandle;
}

export interface JobInsertManyResult {
  /** Stage each job was stored in, in input order. */
  stages: JobStage[];
}

export interface JobClaimReadyParams {
  /** Lease owner recorded on each claimed job: the server's instance id. */
  owner: string;
  limit: number;
  now: number;
  leaseExpiresAt: number;
  /** Claim only these job types (the ones this server has handlers for). */
  jobTypes: readonly string[];
}

/** What one claim took, and when to look again if it came back short. */
export interface JobClaimReadyResult {
  /** The claimed jobs, oldest `runAt` first. */
  jobs: ClaimedJob[];
  /**
   * Only when fewer than `limit` jobs were claimed: the earliest `runAt`
   * after `now` among claimable jobs of these types (null: none), read in
   * the same round trip, so the fetcher knows how long it may sleep.
   */
  nextRunAt?: number | null;
}

/** A job claimed for one attempt. */
export interface ClaimedJob {
  id: JobId;
  jobType: string;
  payload: string;
  /** This claim's attempt number (1 for the first run); fences every later write. */
  attempt: number;
  /** JSON of the retry policy stored with the job (read when the attempt fails). */
  retryPolicy: string;
}

/** Identifies one claim of one job. */
export interface ClaimKey {
  id: JobId;
  attempt: number;
}

/** How one attempt ended. */
export type JobOutcome =
  | { kind: "success" }
  | { kind: "retry"; runAt: number; error: string; retryPolicy?: string | undefined }
  | { kind: "fail"; error: string };

export interface JobFinish extends ClaimKey {
  outcome: JobOutcome;
}

export interface JobFinishManyParams {
  finishes: readonly JobFinish[];
  now: number;
  /** Terminal jobs get `expiresAt = now + retentionMs`. */
  retentionMs: number;
  /** Only finish claims whose lease expired before this time (stuck-job rescue). */
  leaseExpiredBefore?: number;
}

export interface JobFinishManyResult {
  /** Claims whose write was applied; the others had lost their lease. */
  applied: ClaimKey[];
  /** Continuations that became `enqueued` because their parent succeeded. */
  released: number;
}

export interface JobReleaseManyParams {
  /** Claimed jobs that never started: they go back to their earlier stage at once. */
  claims: readonly ClaimKey[];
  now: number;
}

export interface LeaseRenewParams {
  owner: string;
  claims: readonly ClaimKey[];
  leaseExpiresAt: number;
}

export interface LeaseRenewResult {
  /** Claims still held. Any claim not listed has been lost. */
  renewed: ClaimKey[];
}

export interface JobListStuckParams {
  /** Running jobs whose lease expired before this time. */
  leaseExpiredBefore: number;
  limit: number;
}

/** A running job whose lease expired: its worker is gone. */
export interface StuckJob extends ClaimKey {
  jobType: string;
  retryPolicy: string;
}

export interface JobCountReadyParams {
  now: number;
  jobTypes: readonly string[];
}

export interface JobDeleteExpiredParams {
  now: number;
  limit: number;
}

/** A job as stored. */
export interface JobRecord {
  id: JobId;
  jobType: string;
  payload: string;
  stage: JobStage;
  attempt: number;
  runAt: number;
  parentId: JobId | null;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  lastError: string | null;
  stages: StageChange[];
  createdAt: number;
  updatedAt: number;
  expiresAt: number | null;
  /** Partitioned jobs: topic, partition and sequence; null otherwise. */
  topic: string | null;
  partition: number | null;
  seq: number | null;
}

export interface JobGetParams {
  id: JobId;
}

export interface JobListParams {
  stage?: JobStage | undefined;
  /** Only jobs of this job type. Default: every type. */
  jobType?: string | undefined;
  /**
   * `"asc"` (default): oldest id first. `"desc"`: newest first (ids are
   * ULIDs, so this is creation order), as `later jobs list` shows them.
   */
  order?: "asc" | "desc" | undefined;
  /** Cursor: list jobs after this id in `order` (greater than it for `"asc"`, less for `"desc"`). */
  afterId?: JobId | undefined;
  limit: number;
}

/** A namespace and the number of jobs it holds (every stage). */
export interface NamespaceCount {
  namespace: string;
  jobs: number;
}

export interface JobCountByStageResult {
  counts: Record<JobStage, number>;
}

export interface MaintenanceClaimParams {
  task: string;
  now: number;
  intervalMs: number;
}

export interface MigrationStatusResult {
  /** Highest applied migration, 0 for an empty database. */
  current: number;
  /** Highest migration this release ships. */
  latest: number;
  applied: { version: number; name: string; appliedAt: number }[];
  pending: { version: number; name: string }[];
}

export interface MigrationUpResult {
  applied: { version: number; name: string }[];
  current: number;
}

/** The database seam. See the module doc for the rules every method keeps. */
export interface Backend {
  /** `"sqlite"` or `"postgres"`, for messages only. */
  readonly kind: string;
  readonly namespace: string;
  readonly capabilities: BackendCapabilities;
  /** The command that migrates this database, for error messages. */
  readonly migrateHint: string;

  /** Opens connections. Idempotent. Throws `DatabaseUnavailableError` when the database cannot be opened. */
  open(): Promise<void>;
  /** Closes what the backend opened; never closes a caller-owned database or pool. Idempotent. */
  close(): Promise<void>;

  migrationStatus(): Promise<MigrationStatusResult>;
  /** Applies pending migrations; safe when several processes run it at once. */
  migrationUp(): Promise<MigrationUpResult>;

  /**
   * Inserts jobs in one transaction. A continuation's stage follows its
   * parent: `waiting`, `enqueued` (parent succeeded) or `failed` (parent
   * failed). An unknown parent throws `ParentNotFoundError` and writes
   * nothing.
   */
  jobInsertMany(params: JobInsertManyParams): Promise<JobInsertManyResult>;
  /** Claims up to `limit` ready jobs (oldest `runAt` first) in one write: stage `running`, `attempt + 1`, a lease. */
  jobClaimReady(params: JobClaimReadyParams): Promise<JobClaimReadyResult>;
  /**
   * Stores attempt outcomes in one transaction, each guarded by its claim.
   * Success releases waiting continuations; a final failure fails them, down
   * the chain, with the reason.
   */
  jobFinishMany(params: JobFinishManyParams): Promise<JobFinishManyResult>;
  /** Returns claimed-but-unstarted jobs to their stage before the claim, undoing the attempt. */
  jobReleaseMany(params: JobReleaseManyParams): Promise<void>;
  /** Extends the leases of the given claims in one write. */
  leaseRenew(params: LeaseRenewParams): Promise<LeaseRenewResult>;
  /** Running jobs whose lease expired before the given time. */
  jobListStuck(params: JobListStuckParams): Promise<StuckJob[]>;
  /**
   * Ready jobs of these types (due now): the backlog autoscaling reads. A
   * query over the partial index of claimable rows, not a counter: which
   * delayed and requeued jobs are ready depends on the time.
   */
  jobCountReady(params: JobCountReadyParams): Promise<number>;
  /** Deletes up to `limit` expired rows; returns how many. */
  jobDeleteExpired(params: JobDeleteExpiredParams): Promise<number>;
  jobGet(params: JobGetParams): Promise<JobRecord | null>;
  /** A cursor page of jobs ordered by id (see {@link JobListParams.order}), filtered by stage and job type. */
  jobList(params: JobListParams): Promise<JobRecord[]>;
  /**
   * Jobs per stage of the namespace, read from the stage counters that
   * every change keeps in its own transaction (SQLite: each statement adds
   * its moves; PostgreSQL: statement-level triggers into sharded rows): a
   * few small reads at any backlog, never a count of the jobs.
   */
  jobCountByStage(): Promise<JobCountByStageResult>;
  /**
   * Every namespace of the database that holds jobs, with how many, read
   * from the stage counters (never the jobs), ordered by namespace. The one
   * read that is not scoped to the backend's namespace: `later jobs list`
   * names these when the namespace it was given holds none.
   */
  namespaceCounts(): Promise<NamespaceCount[]>;
  /**
   * Takes this interval's turn at a maintenance task: true for exactly one
   * caller per `intervalMs` across every process, tracked in the database so
   * it survives restarts.
   */
  maintenanceClaim(params: MaintenanceClaimParams): Promise<boolean>;
  /** Reclaims space freed by deleted rows (only when `capabilities.supportsVacuum`). */
  databaseVacuum(): Promise<void>;
  /**
   * Records the topics in the database, with one row per partition, unless
   * present. A topic stored with another partition count throws
   * `PartitionCountMismatchError` and writes nothing.
   */
  topicRegister(params: P.TopicRegisterParams): Promise<void>;
  /** Claims the ready heads of unleased partitions among `partitions`, at most one per partition. */
  partitionHeadClaim(params: P.PartitionHeadClaimParams): Promise<P.PartitionHeadClaimResult>;
  /** Stores a head's outcome if its claim still holds the partition lease, then frees the lease or claims the next head. */
  partitionHeadFinish(params: P.PartitionHeadFinishParams): Promise<P.PartitionHeadFinishResult>;
  /** Extends the leases of held head claims whose epoch is still current. */
  partitionLeaseRenew(params: P.PartitionLeaseRenewParams): Promise<P.PartitionLeaseRenewResult>;
  /** Registers or refreshes a member and returns the live ones (dead rows are deleted on the way). */
  partitionMemberHeartbeat(params: P.PartitionMemberHeartbeatParams): Promise<P.PartitionMemberHeartbeatResult>;
  /** Deregisters a member at once (graceful shutdown). */
  partitionMemberRemove(params: P.PartitionMemberRemoveParams): Promise<void>;
  /**
   * Fails the partition's head at once, whatever its stage or lease, with
   * its waiting continuations, and frees the partition (bumping its epoch, so
   * the old claim's writes are rejected). Returns the failed job id, or null
   * when the partition has no unfinished job.
   */
  partitionHeadForceFail(params: P.PartitionHeadForceFailParams): Promise<string | null>;
  /** Deletes the partition's terminal jobs but the newest `keep` (by sequence); returns how many. */
  partitionHistoryTruncate(params: P.PartitionHistoryTruncateParams): Promise<number>;
  /** Unfinished jobs per partition of every registered topic, read from the counters (as {@link jobCountByStage}). */
  partitionDepth(): Promise<P.PartitionDepthResult>;
  /** Unfinished jobs per registered topic, read from the counters (as {@link jobCountByStage}). */
  topicDepth(): Promise<P.TopicDepthResult>;

  /**
   * Calls `listener` (soon, coalesced) after another process may have
   * committed work. A latency hint only: correctness never depends on it.
   * Returns the unsubscribe function.
   */
  wakeSubscribe(listener: () => void): () => void;

  // ---- recurring schedules (SQL in sqlite/postgres-recurring-store.ts) ----

  /**
   * Registers or updates a schedule in one transaction. Same id with the
   * same cron, time zone and mode: updates its payload and job type only
   * (`changed: false`, no job). Otherwise (new id, or any of those differs)
   * writes the whole row and inserts `firstJob`, through the same insert as
   * `jobInsertMany`. A job already enqueued for the old definition is left
   * as is. Concurrent upserts of one id serialise on its row (SQLite:
   * `BEGIN IMMEDIATE`; PostgreSQL: `INSERT … ON CONFLICT DO NOTHING`, then
   * `SELECT … FOR UPDATE`), so exactly one of them reports `changed`.
   */
  recurringUpsert(params: R.RecurringUpsertParams): Promise<R.RecurringUpsertResult>;
  /** Schedules with `nextRunAt <= now`, earliest first, at most `limit`. */
  recurringDueList(params: R.RecurringDueListParams): Promise<R.RecurringSchedule[]>;
  /**
   * Enqueues one occurrence: compare-and-set of the row's `nextRunAt` (and
   * definition) to `nextRunAt`, and the occurrence's job insert (the
   * `jobInsertMany` insert: a sequential occurrence takes its partition's
   * next sequence), in one transaction. Exactly one of any number of
   * concurrent callers for the same occurrence inserts it (PostgreSQL: the
   * losers wait on the row lock, then match no row).
   */
  recurringAdvance(params: R.RecurringAdvanceParams): Promise<R.RecurringAdvanceResult>;
  /** Every schedule of the namespace, ordered by id. */
  recurringList(): Promise<R.RecurringSchedule[]>;
  /** Deletes a schedule (jobs already enqueued stay); false when there was none. */
  recurringDelete(params: R.RecurringDeleteParams): Promise<boolean>;
}
