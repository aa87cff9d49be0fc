/**
 * Kysely table types shared by every SQL backend. Times are integer
 * milliseconds since the epoch; payloads, retry policies and stage histories
 * are JSON text.
 */
import type { ColumnType } from "kysely";
import type { JobStage } from "../core/job-stage.js";

export interface LaterJobsTable {
  id: string;
  namespace: string;
  job_type: string;
  payload: string;
  stage: JobStage;
  /** Claims so far; the current claim's fencing token. */
  attempt: number;
  /** JSON of the explicit retry policy given at enqueue; null: the policy of whichever server runs the job. */
  retry_policy: string | null;
  /** `EnqueueOptions.timeoutMs`: this job's attempt timeout; null: its type's or the server's (migration 12). */
  timeout_ms: number | null;
  /** Not claimable before this time. */
  run_at: number;
  parent_id: string | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  last_error: string | null;
  /** X8: the last `ctx.progress(value)` of the job's attempts, JSON text (migration SQLite 9 / PostgreSQL 9). */
  progress: string | null;
  /** JSON array of `[stage, atMs]` pairs: the stage history. */
  stages: string;
  created_at: number;
  updated_at: number;
  /** Set on terminal jobs; the expiry sweep deletes the row after it. */
  expires_at: number | null;
  /** Partitioned jobs only: the topic, the partition and the job's place in it. */
  topic: string | null;
  partition_no: number | null;
  seq: number | null;
  /** Continuations inserted for this job so far (see the PostgreSQL finish). */
  waiters: number;
  /** X1: `EnqueueOptions.priority`, lower claimed first (migration 15). */
  priority: number;
  /** X2: `EnqueueOptions.uniqueKey`, kept after the job finished (migration 15). */
  unique_key: string | null;
  /** X2: the slot of the key this job holds: `pending` (not started), `active` (started); null: none (finished, or no key). */
  unique_slot: "pending" | "active" | null;
  /** X10: the job's metadata, a JSON object the enqueue middleware set; null: none (migration 14). */
  meta: string | null;
  /** X6: the handler's result, JSON text, stored with the success; null: none (migration 17). Left out of inserts (null). */
  result: ColumnType<string | null, string | null | undefined, string | null>;
  /** X5: a fan-in continuation's parents not yet succeeded (0 once released); null for every other job (migration 18). */
  parents_left: number | null;
  /** X9: `EnqueueOptions.group`; null: none (migration 20). */
  group_key: string | null;
}

/** X5: one parent of a fan-in continuation (migration 18); deleted with its child. */
export interface LaterJobParentsTable {
  namespace: string;
  child_id: string;
  parent_id: string;
  /** Whether this parent's success has been counted off the child's `parents_left` (once per edge). */
  succeeded: number | boolean;
}

export interface LaterTopicsTable {
  namespace: string;
  topic: string;
  partitions: number;
  created_at: number;
}

/** One row per (topic, partition): the sequence counter and the head claim's lease and fencing epoch. */
export interface LaterPartitionsTable {
  namespace: string;
  topic: string;
  partition_no: number;
  /** The sequence the next enqueued job of this partition gets. */
  next_seq: number;
  /** Bumped by every head claim (and by a forced failure): writes of an older claim are rejected. */
  epoch: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
}

/** A live server with topics; rows past `expires_at` are dead members. */
export interface LaterPartitionMembersTable {
  namespace: string;
  member_id: string;
  expires_at: number;
}

export interface LaterMigrationsTable {
  version: number;
  name: string;
  applied_at: number;
}

export interface LaterMaintenanceTable {
  namespace: string;
  task: string;
  last_run_at: number;
}

/** One row per recurring schedule: its definition and the next occurrence not yet enqueued. */
export interface LaterRecurringTable {
  namespace: string;
  /** The schedule identifier given to `enqueueRecurring`. */
  id: string;
  job_type: string;
  /** JSON text every later occurrence carries. */
  payload: string;
  /** Six-field cron, whitespace-normalised. */
  cron: string;
  time_zone: string;
  /** 1: occurrences go to `partition_no` of the reserved topic `__later_recurring`; 0: plain jobs. */
  sequential: number;
  partition_no: number | null;
  /** The next occurrence not yet enqueued; the poller's compare-and-set moves it. */
  next_run_at: number;
  /** Id reserved for the occurrence at `next_run_at` (a sequential schedule's first); null: a fresh id. */
  next_job_id: string | null;
  last_job_id: string | null;
  created_at: number;
  updated_at: number;
}

/** A retained-log topic: its fixed partition count and the retention settings the sweep reads (null: not set). */
export interface LaterLogTopicsTable {
  namespace: string;
  topic: string;
  partitions: number;
  /** Null: the default of seven days. */
  retention_ms: number | null;
  retain_records: number | null;
  /** 1: keep records some group has not committed. */
  min_retain_until_committed: number;
  created_at: number;
}

/** One per log partition: the next offset an append takes, and the oldest retained offset. */
export interface LaterLogPartitionsTable {
  namespace: string;
  topic: string;
  partition_no: number;
  next_offset: number;
  start_offset: number;
}

/** A retained-log record on PostgreSQL (SQLite stores {@link LaterLogBatchesTable}); `value` is bytes (bytea), `headers` JSON text. */
export interface LaterLogRecordsTable {
  namespace: string;
  topic: string;
  partition_no: number;
  offset: number;
  key: string | null;
  value: Uint8Array;
  headers: string | null;
  timestamp: number;
}

/**
 * A batch of retained-log records on SQLite (migration 10): the records one
 * append wrote to one partition, offsets `first_offset` to `first_offset +
 * record_count - 1`, sharing one timestamp. See
 * `sqlite/sqlite-log-statements.ts` for the encoding.
 */
export interface LaterLogBatchesTable {
  namespace: string;
  topic: string;
  partition_no: number;
  first_offset: number;
  record_count: number;
  timestamp: number;
  /** JSON array of each record's key (string or null); null when every key is null. */
  keys: string | null;
  /** JSON array of each record's headers JSON text (or null); null when no record has headers. */
  headers: string | null;
  /** `record_count` uint32 big-endian cumulative ends of the values in `values`; null for a batch of one. */
  value_ends: Uint8Array | null;
  /** The values end to end. */
  values: Uint8Array;
}

/** One per consumer group and log partition: the committed offset (the next one the group reads) and the lease with its fencing epoch. */
export interface LaterLogGroupPartitionsTable {
  namespace: string;
  topic: string;
  group_name: string;
  partition_no: number;
  committed_offset: number | null;
  epoch: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  updated_at: number;
}

/** A live member of a consumer group (heartbeat until `expires_at`). */
export interface LaterLogGroupMembersTable {
  namespace: string;
  topic: string;
  group_name: string;
  member_id: string;
  expires_at: number;
}

/** Per-second activity of a namespace (dashboard): one row per second and series. */
export interface LaterActivityTable {
  namespace: string;
  /** Start of the second, ms since the epoch. */
  at: number;
  /** `entered:<stage>` (transitions into the stage), `regular` or `partitioned` (claims and their dispatch wait). */
  series: string;
  /** Transitions, or claims. */
  n: number;
  /** Claims: the sum of their waits (ms); 0 for `entered:` rows. */
  total_ms: number;
  /** Claims: the longest wait (ms); 0 for `entered:` rows. */
  max_ms: number;
}

/** The cumulative `entered` count per stage at the last activity sample, to turn the next one into a delta. */
export interface LaterActivityMarksTable {
  namespace: string;
  stage: string;
  entered: number;
  sampled_at: number;
}

/** Per-minute samples of the backlog (dashboard). */
export interface LaterQueueLengthTable {
  namespace: string;
  at: number;
  ready: number;
  partition_backlog: number;
}

/** Every live server of a namespace, by its heartbeat (dashboard's worker list). */
export interface LaterServersTable {
  namespace: string;
  instance_id: string;
  host: string;
  pid: number;
  workers: number;
  busy: number;
  last_seen_at: number;
  expires_at: number;
  /** The job types the server handles, a JSON array of strings (migration 11). */
  job_types: string;
}

/** A paused job type or topic of a namespace (docs/semantics.md X4, migration 13): a row while paused. */
export interface LaterPausedTable {
  namespace: string;
  /** `type` (a job type) or `topic`. */
  kind: string;
  name: string;
  paused_at: number;
}

export interface LaterDatabase {
  later_jobs: LaterJobsTable;
  later_job_parents: LaterJobParentsTable;
  later_migrations: LaterMigrationsTable;
  later_maintenance: LaterMaintenanceTable;
  later_topics: LaterTopicsTable;
  later_partitions: LaterPartitionsTable;
  later_partition_members: LaterPartitionMembersTable;
  later_recurring: LaterRecurringTable;
  later_log_topics: LaterLogTopicsTable;
  later_log_partitions: LaterLogPartitionsTable;
  /** PostgreSQL only. */
  later_log_records: LaterLogRecordsTable;
  /** SQLite only. */
  later_log_batches: LaterLogBatchesTable;
  later_log_group_partitions: LaterLogGroupPartitionsTable;
  later_log_group_members: LaterLogGroupMembersTable;
  later_activity: LaterActivityTable;
  later_activity_marks: LaterActivityMarksTable;
  later_queue_length: LaterQueueLengthTable;
  later_servers: LaterServersTable;
  later_paused: LaterPausedTable;
}
