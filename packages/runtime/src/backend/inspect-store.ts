/**
 * The reads of the seam for people (`backend.inspect`): the CLI's `later
 * jobs` and the dashboard. None is on a worker's path; the counts are read
 * from the stage counters that every change keeps in its own transaction
 * (SQLite: each statement adds its moves; PostgreSQL: statement-level
 * triggers into sharded rows), so each is a few small reads at any backlog,
 * never a count of the jobs.
 */
import type { JobId } from "../core/job-id.js";
import type { JobStage, StageChange } from "../core/job-stage.js";

/** The inspection reads of one backend, scoped to its namespace (but {@link InspectStore.namespaceCounts}). */
export interface InspectStore {
  jobGet(params: JobGetParams): Promise<JobRecord | null>;
  /** A cursor page of jobs ordered by id (see {@link JobListParams.order}), filtered by stage, job type, topic, partition and a search `q`. */
  jobList(params: JobListParams): Promise<JobRecord[]>;
  /** Jobs per stage of the namespace, read from the stage counters; every stage is present (0 when none). */
  stageCounts(): Promise<JobCountByStageResult>;
  /**
   * Every namespace of the database that holds jobs, with how many, read
   * from the stage counters (never the jobs), ordered by namespace. The one
   * read that is not scoped to the backend's namespace: `later jobs list`
   * names these when the namespace it was given holds none.
   */
  namespaceCounts(): Promise<NamespaceCount[]>;
  /** Unfinished jobs per partition of every registered topic, read from the counters. */
  partitionDepth(): Promise<PartitionDepthResult>;
  /** Unfinished jobs per registered topic, read from the counters. */
  topicDepth(): Promise<TopicDepthResult>;
  /**
   * Every partition of the namespace's topics (or of one topic), by topic
   * and partition: its head, depth and lease, for `later partitions list`.
   * One statement per dialect: the partition rows, the depth from the
   * partition counters (SQLite: one row each; PostgreSQL: a sum over
   * shards) and the head from one probe each of the partition-head index,
   * so its cost is the number of partitions, never the jobs.
   */
  partitionList(params: PartitionListParams): Promise<PartitionListResult>;
  /**
   * Per-second activity buckets of the namespace since `sinceMs`
   * (inclusive), oldest first; seconds with nothing are absent. Written by
   * the servers (see `ActivityStore`): transitions into each stage sampled
   * from the counters' cumulative `entered` once a second, dispatch waits
   * flushed by each server once a second. Kept an hour. One index range read.
   */
  activityList(params: ActivityListParams): Promise<ActivityListResult>;
  /** Per-minute samples of the ready backlog and the partitions' backlog since `sinceMs`, oldest first (kept 7 days). One index range read. */
  queueLengthList(params: QueueLengthListParams): Promise<QueueLengthListResult>;
  /** Live servers of the namespace (heartbeat not expired at `nowMs`), by instance id: every server heartbeats, with or without topics. */
  workerList(params: WorkerListParams): Promise<WorkerListResult>;
  /** Size of the whole database on disk in bytes (SQLite: `page_count * page_size` of the main file; PostgreSQL: `pg_database_size(current_database())`), null if unknown. */
  databaseBytes(): Promise<number | null>;
  /** Children (continuations) of a job, at most `limit`, oldest (lowest id) first; by the index on `parent_id`. */
  jobChildren(params: JobChildrenParams): Promise<JobChildEntry[]>;
  /**
   * `runAt` of the oldest ready regular job: claimable (`enqueued`,
   * `requeued`, or `delayed` and due: a claim takes those too) with
   * `runAt <= nowMs`; null when none. One probe of the claim index.
   */
  oldestReadyAt(params: OldestReadyAtParams): Promise<number | null>;
  /**
   * Job types with ready jobs that no live server handles: every live
   * server publishes the job types it handles with its heartbeat, and a
   * ready job of a type none of them lists waits until one does (a web
   * process built from a newer schema enqueued a type no worker knows yet).
   *
   * Two small reads whatever the backlog: the live servers' rows, and the
   * job types of the first {@link UnhandledJobTypesParams.window} entries
   * of the claim index that are due (the oldest ready regular jobs:
   * `enqueued`, `requeued`, and `delayed` once due, as a claim takes them).
   * Why a window and not a count: the stage counters are per stage, not per
   * job type, and a count of one type's jobs would be a scan. Jobs that
   * nothing claims stay at the front of that index while the handled ones
   * around them are claimed, so the window finds them; `ready` counts a
   * type's jobs within it, exact when `complete` (the window held every
   * ready regular job), else a lower bound. Partitioned jobs are not read.
   */
  unhandledJobTypes(params: UnhandledJobTypesParams): Promise<UnhandledJobTypesResult>;
  /**
   * X9: every job type of the namespace with a stored limit
   * (`later_limits`), with its running jobs against `concurrency`, its
   * starts in the current rate window against `rateLimit.max`, and its
   * ready jobs that the limit holds back now. For the dashboard and the
   * `later_limit_running` / `later_limit_waiting` gauges.
   *
   * Three small reads whatever the backlog: the namespace's limits rows
   * (primary-key range), its running regular jobs by type (the
   * `later_jobs_running` index, the namespace's running jobs: bounded by its
   * servers' workers), and the job types of the first
   * {@link LimitListParams.window} due entries of the claim index (as
   * {@link unhandledJobTypes}: jobs held back by a limit stay at its front
   * while the others are claimed). Not locked: a claim in flight may change
   * the figures a moment later.
   */
  limitList(params: LimitListParams): Promise<LimitListResult>;
  /**
   * X9: the busiest groups of one job type (`EnqueueOptions.group`): each
   * group's running jobs (every server's) and its due ready jobs waiting
   * in storage, the most running plus waiting first (then by name), at
   * most {@link GroupListParams.limit}. For the dashboard's Limits panel of
   * a type with a `groupConcurrency`; never a metrics label (a group is
   * unbounded).
   *
   * One statement, bounded whatever the backlog: a skip scan of the
   * type's distinct ready groups through `later_jobs_ready_group` (one
   * index descent per group; at most {@link GROUP_WALK} groups, in name
   * order), each walked group's due rows counted through the same index
   * up to {@link GROUP_COUNT_CAP}, and the type's running jobs by group
   * through `later_jobs_running` (bounded by the workers). The jobs of the
   * type with no group are not listed (they are in no group index).
   * Not locked.
   */
  groupList(params: GroupListParams): Promise<GroupListResult>;
}

/** At most this many ready groups of a type are walked by {@link InspectStore.groupList}. */
export const GROUP_WALK = 1_000;
/** At most this many due ready rows of one group are counted by {@link InspectStore.groupList}. */
export const GROUP_COUNT_CAP = 1_000;

export interface GroupListParams {
  /** The job type whose groups are read. */
  jobType: string;
  /** Jobs due after it are not waiting. */
  nowMs: number;
  /** How many groups to return, the busiest first. Default 5. */
  limit?: number | undefined;
}

export interface GroupListResult {
  /** The busiest groups: most `running + waiting` first, then by group. */
  groups: GroupEntry[];
  /**
   * True when every ready group was walked and no group's count reached
   * {@link GROUP_COUNT_CAP}, so the figures and the order are exact; false:
   * `waiting` is a lower bound and a group beyond the walk may be missing.
   */
  complete: boolean;
}

/** One group of a job type as {@link InspectStore.groupList} read it. */
export interface GroupEntry {
  group: string;
  /** Its jobs of the type in `running` now, every server's. */
  running: number;
  /** Its due ready jobs of the type (`enqueued`, `requeued`, due `delayed`), up to {@link GROUP_COUNT_CAP}. */
  waiting: number;
}

export interface LimitListParams {
  /** The rate window ends here (`(nowMs − perMs, nowMs]`); jobs due after it are not ready. */
  nowMs: number;
  /** How many of the oldest ready jobs are read for `ready` and `waiting`. Default {@link UNHANDLED_WINDOW}. */
  window?: number | undefined;
}

export interface LimitListResult {
  /** Every limited job type of the namespace, by type. */
  limits: LimitEntry[];
  /** True when the window held every ready regular job, so `ready` and `waiting` are exact; false: lower bounds. */
  complete: boolean;
}

/** One limited job type as {@link InspectStore.limitList} read it. */
export interface LimitEntry {
  jobType: string;
  /** Stored `concurrency`; null: none. */
  concurrency: number | null;
  /** Stored `groupConcurrency` (at most this many running per group); null: none. See {@link InspectStore.groupList}. */
  groupConcurrency: number | null;
  /** Stored `rateLimit`; null: none. */
  rateLimit: { max: number; perMs: number } | null;
  /** Its regular jobs in `running` now, every server's. */
  running: number;
  /** Its starts in the rate window ending now; 0 without a rate limit. */
  startsInWindow: number;
  /** Its due ready regular jobs (within the window: see {@link LimitListResult.complete}). */
  ready: number;
  /**
   * Of `ready`, those the limit holds back now: `ready` less the slots the
   * limit leaves free (`concurrency − running`, `max − startsInWindow`), never
   * below 0. Ready jobs within the free slots wait for a worker, not for the limit.
   */
  waiting: number;
}

/** Default {@link UnhandledJobTypesParams.window}. */
export const UNHANDLED_WINDOW = 1_000;

export interface UnhandledJobTypesParams {
  /** Servers whose heartbeat expired by then are not live; jobs due after it are not ready. */
  nowMs: number;
  /** How many of the oldest ready jobs are read. Default {@link UNHANDLED_WINDOW}. */
  window?: number | undefined;
}

export interface UnhandledJobTypesResult {
  /** Types with ready jobs and no live server handling them, most jobs first. */
  jobTypes: UnhandledJobType[];
  /** True when the window held every ready regular job, so `ready` is exact; false: each `ready` is a lower bound. */
  complete: boolean;
}

/** A job type with ready jobs that no live server handles. */
export interface UnhandledJobType {
  jobType: string;
  /** Its ready jobs (within the window: see {@link UnhandledJobTypesResult.complete}). */
  ready: number;
}

export interface ActivityListParams {
  sinceMs: number;
}

export interface ActivityListResult {
  buckets: ActivityBucket[];
}

/** What happened in one second of the namespace. */
export interface ActivityBucket {
  /** Start of the second, ms since the epoch. */
  at: number;
  /** Transitions into each stage during that second (inserts included); stages with none are absent. */
  entered: Partial<Record<JobStage, number>>;
  /** Claims of regular jobs that second. */
  regular: DispatchWaitBucket;
  /** Claims of partition heads that second. */
  partitioned: DispatchWaitBucket;
}

/** Claims of one second and how long their jobs waited to be claimed: wait = claim time − max(runAt, the time the job became ready). */
export interface DispatchWaitBucket {
  claims: number;
  waitTotalMs: number;
  waitMaxMs: number;
}

export interface QueueLengthListParams {
  sinceMs: number;
}

export interface QueueLengthListResult {
  samples: QueueLengthSample[];
}

/** One per-minute sample, read from the counters when it was taken. */
export interface QueueLengthSample {
  /** Start of the minute, ms since the epoch. */
  at: number;
  /** Jobs in `enqueued` or `requeued` (partitioned ones included). */
  ready: number;
  /** Unfinished jobs of every partition of the namespace's topics. */
  partitionBacklog: number;
}

export interface WorkerListParams {
  nowMs: number;
}

export interface WorkerListResult {
  workers: WorkerEntry[];
}

/** One live server as its last heartbeat described it. */
export interface WorkerEntry {
  instanceId: string;
  /** `os.hostname()` of its process. */
  host: string;
  pid: number;
  /** Worker slots of its pool. */
  workers: number;
  /** Jobs it was running (regular and partition heads). */
  busy: number;
  lastSeenAt: number;
  /** The job types it handles, as its last heartbeat published them. */
  jobTypes: string[];
}

export interface JobChildrenParams {
  id: JobId;
  limit: number;
}

export interface JobChildEntry {
  id: JobId;
  jobType: string;
  stage: JobStage;
}

export interface OldestReadyAtParams {
  nowMs: number;
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
  /** The last value an attempt reported with `ctx.progress(value)`, as JSON text; null when none did. */
  progress: string | null;
  stages: StageChange[];
  createdAt: number;
  updatedAt: number;
  expiresAt: number | null;
  /** Partitioned jobs: topic, partition and sequence; null otherwise. */
  topic: string | null;
  partition: number | null;
  seq: number | null;
  /** X1: `EnqueueOptions.priority` (lower claimed first); 0 when none was given. */
  priority: number;
  /** X2: `EnqueueOptions.uniqueKey`, kept after the job finished; null when none was given. */
  uniqueKey: string | null;
  /** X2: the key's slot the job holds: `pending` (not started), `active` (started, unfinished); null once finished or without a key. */
  uniqueSlot: "pending" | "active" | null;
  /** The handler's result as JSON text (X6), stored with the success; null: none (unfinished, failed, or it returned nothing). */
  result: string | null;
  /** X10: the metadata the enqueue middleware stored (JSON text of an object, e.g. tracing's `traceparent`); null: none. */
  meta: string | null;
  /** X9: `EnqueueOptions.group` (or the schema's `@group` field); null when none was given. */
  group: string | null;
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
  /** Only jobs of this topic. Default: every job, partitioned or not. */
  topic?: string | undefined;
  /** Only jobs of this partition (of `topic` when given, else of any topic). */
  partition?: number | undefined;
  /**
   * Search: jobs whose id starts with `q`, or whose job type starts with
   * `q`. Default: no search.
   */
  q?: string | undefined;
  /** Cursor: list jobs after this id in `order` (greater than it for `"asc"`, less for `"desc"`). */
  afterId?: JobId | undefined;
  limit: number;
}

/** A namespace and the number of jobs it holds (every stage). */
export interface NamespaceCount {
  namespace: string;
  jobs: number;
}

/** What {@link InspectStore.stageCounts} returns. */
export interface JobCountByStageResult {
  counts: Record<JobStage, number>;
}

/** Read from the counters kept with every change (never a count of the jobs). */
export interface PartitionDepthResult {
  /** Every partition of the namespace's topics, by topic and partition: its unfinished jobs (not `success`, `failed` or `cancelled`) and lease owner. */
  partitions: { topic: string; partition: number; unfinished: number; leaseOwner: string | null }[];
}

/** Read from the counters kept with every change (never a count of the jobs). */
export interface TopicDepthResult {
  /** Every topic of the namespace, by name: its partition count and unfinished jobs over all its partitions. */
  topics: { topic: string; partitions: number; unfinished: number }[];
}

export interface PartitionListParams {
  /** Only this topic's partitions. Default: every topic of the namespace. */
  topic?: string | undefined;
}

/** What {@link InspectStore.partitionList} returns. */
export interface PartitionListResult {
  partitions: PartitionListEntry[];
}

/** One partition as `later partitions list` shows it. */
export interface PartitionListEntry {
  topic: string;
  partition: number;
  /** The partition's head: its unfinished job with the lowest sequence, which every later one waits for; null when the partition is empty. */
  headJobId: JobId | null;
  /** Unfinished jobs (not `success` or `failed`), the head included, read from the counters. */
  depth: number;
  /** The server (member id) whose claim of the head holds the partition lease, or null when no claim holds it. Kept after the lease expires, until the next claim. */
  leaseOwner: string | null;
  /** When that lease expires unless renewed (ms since the epoch); null when there is none. */
  leaseExpiresAt: number | null;
}
