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
  /** A cursor page of jobs ordered by id (see {@link JobListParams.order}), filtered by stage and job type. */
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
   * `runAt` of the oldest ready regular job (enqueued, requeued or delayed,
   * due by `nowMs`), or null when none: one probe of the ready index (the
   * claim's), whatever the backlog. For `later_queue_oldest_ready_age_seconds`.
   */
  oldestReadyAt(params: OldestReadyAtParams): Promise<number | null>;
  /**
   * Every partition of the namespace's topics (or of one topic), by topic
   * and partition: its head, depth and lease, for `later partitions list`.
   * One statement per dialect: the partition rows, the depth from the
   * partition counters (SQLite: one row each; PostgreSQL: a sum over
   * shards) and the head from one probe each of the partition-head index,
   * so its cost is the number of partitions, never the jobs.
   */
  partitionList(params: PartitionListParams): Promise<PartitionListResult>;
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

export interface OldestReadyAtParams {
  /** Jobs due by this time (ms since the epoch) are ready. */
  nowMs: number;
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
