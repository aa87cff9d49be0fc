/**
 * SQLite migrations 1 to 14: the queue (jobs, partitions, recurring
 * schedules, the retained log, stage counters, the dashboard's tables,
 * progress, timeouts, pause, metadata). Shipped: never edited (so their stage
 * lists stay literal, as shipped); the next number goes in
 * sqlite-job-control-migrations.ts. Applied by sqlite-migrations.ts.
 */
import { SQLITE_STAGE_COUNTERS_SQL } from "./sqlite-stage-counters.js";
import { dashboardMigrationSql } from "../shared/dashboard-migration.js";

export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
}

export const SQLITE_QUEUE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: "jobs",
    sql: `
CREATE TABLE later_jobs (
  id TEXT PRIMARY KEY NOT NULL,
  namespace TEXT NOT NULL,
  job_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  stage TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  retry_policy TEXT NOT NULL,
  run_at INTEGER NOT NULL,
  parent_id TEXT,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  last_error TEXT,
  stages TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER
);
-- The claim query's index: only claimable rows are in it, so it stays as
-- small as the backlog and a claim is one index range scan.
CREATE INDEX later_jobs_ready ON later_jobs (namespace, run_at)
  WHERE stage IN ('enqueued', 'delayed', 'requeued');
-- Lease renewal and the stuck-job sweep read running rows only.
CREATE INDEX later_jobs_running ON later_jobs (namespace, lease_expires_at)
  WHERE stage = 'running';
CREATE INDEX later_jobs_parent ON later_jobs (parent_id)
  WHERE parent_id IS NOT NULL;
CREATE INDEX later_jobs_expires ON later_jobs (namespace, expires_at)
  WHERE expires_at IS NOT NULL;
CREATE TABLE later_maintenance (
  namespace TEXT NOT NULL,
  task TEXT NOT NULL,
  last_run_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, task)
);
`,
  },
  {
    version: 2,
    name: "partitions",
    sql: `
-- Partitioned jobs: a topic, a partition number and a sequence in it.
ALTER TABLE later_jobs ADD COLUMN topic TEXT;
ALTER TABLE later_jobs ADD COLUMN partition_no INTEGER;
ALTER TABLE later_jobs ADD COLUMN seq INTEGER;
-- Continuations ever inserted for this job (PostgreSQL needs it to release
-- children inserted beside the parent's finish; kept here so both hold one schema).
ALTER TABLE later_jobs ADD COLUMN waiters INTEGER NOT NULL DEFAULT 0;
-- Partitioned jobs are claimed only as partition heads, never by the
-- regular claim: they leave the ready and running indexes.
DROP INDEX later_jobs_ready;
CREATE INDEX later_jobs_ready ON later_jobs (namespace, run_at)
  WHERE stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL;
DROP INDEX later_jobs_running;
CREATE INDEX later_jobs_running ON later_jobs (namespace, lease_expires_at)
  WHERE stage = 'running' AND topic IS NULL;
-- A partition's head is the first entry of this index for its
-- (topic, partition): one probe, however many jobs wait behind it.
CREATE INDEX later_jobs_partition_head ON later_jobs (namespace, topic, partition_no, seq)
  WHERE topic IS NOT NULL AND stage NOT IN ('success', 'failed');
-- Finished partitioned jobs, for truncatePartitionHistory. (No index of
-- every partitioned job: a head probe could pick it and walk the history.)
CREATE INDEX later_jobs_partition_done ON later_jobs (namespace, topic, partition_no, seq)
  WHERE topic IS NOT NULL AND stage IN ('success', 'failed');
CREATE TABLE later_topics (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  partitions INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, topic)
);
-- One row per partition: the next sequence number, and the lease and
-- fencing epoch of the claim that holds its head.
CREATE TABLE later_partitions (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  next_seq INTEGER NOT NULL DEFAULT 1,
  epoch INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  PRIMARY KEY (namespace, topic, partition_no)
);
-- Live servers with topics, for rendezvous ownership.
CREATE TABLE later_partition_members (
  namespace TEXT NOT NULL,
  member_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, member_id)
);
`,
  },
  {
    version: 3,
    name: "recurring",
    sql: `
-- Recurring schedules: the definition, and the next occurrence not yet
-- enqueued (moved by the pollers' compare-and-set).
CREATE TABLE later_recurring (
  namespace TEXT NOT NULL,
  id TEXT NOT NULL,
  job_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  cron TEXT NOT NULL,
  time_zone TEXT NOT NULL,
  sequential INTEGER NOT NULL DEFAULT 0,
  partition_no INTEGER,
  next_run_at INTEGER NOT NULL,
  next_job_id TEXT,
  last_job_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, id)
);
-- The pollers' due list: one index range scan.
CREATE INDEX later_recurring_due ON later_recurring (namespace, next_run_at);
`,
  },
  { version: 4, name: "stage-counters", sql: SQLITE_STAGE_COUNTERS_SQL },
  {
    version: 5,
    name: "retry-policy-nullable",
    // A job enqueued without an explicit retry policy stores NULL and follows the policy of the
    // server that runs it. SQLite cannot drop a NOT NULL constraint in place: the column is
    // re-added without it, the values copied (existing rows keep theirs), the old one dropped
    // (it is in no index, trigger or view, so DROP COLUMN is allowed).
    sql: `
ALTER TABLE later_jobs RENAME COLUMN retry_policy TO retry_policy_v4;
ALTER TABLE later_jobs ADD COLUMN retry_policy TEXT;
UPDATE later_jobs SET retry_policy = retry_policy_v4;
ALTER TABLE later_jobs DROP COLUMN retry_policy_v4;
`,
  },
  {
    version: 6,
    name: "retained-log",
    // The retained log (docs/semantics.md L1–L8): every table it needs, consumer groups' included, so the
    // sessions that add consumers and the retention sweep need no table change.
    sql: `
-- Log topics: a fixed partition count and the retention settings the sweep reads
-- (NULL: not set; retention_ms NULL means the default of seven days).
CREATE TABLE later_log_topics (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  partitions INTEGER NOT NULL,
  retention_ms INTEGER,
  retain_records INTEGER,
  min_retain_until_committed INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, topic)
);
-- One row per partition: the next offset to assign (taken in the appending
-- transaction, so offsets are dense) and the oldest retained offset (moved
-- by the retention sweep).
CREATE TABLE later_log_partitions (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  next_offset INTEGER NOT NULL DEFAULT 0,
  start_offset INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, topic, partition_no)
);
CREATE TABLE later_log_records (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  "offset" INTEGER NOT NULL,
  key TEXT,
  value BLOB NOT NULL,
  headers TEXT,
  "timestamp" INTEGER NOT NULL,
  PRIMARY KEY (namespace, topic, partition_no, "offset")
) WITHOUT ROWID;
-- One row per consumer group and partition: the committed offset (the next
-- one the group reads; NULL: none committed) and the lease with its fencing
-- epoch, as later_partitions holds a job partition's.
CREATE TABLE later_log_group_partitions (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  group_name TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  committed_offset INTEGER,
  epoch INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, topic, group_name, partition_no)
);
-- Live members of a consumer group, for rendezvous assignment (as later_partition_members).
CREATE TABLE later_log_group_members (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  group_name TEXT NOT NULL,
  member_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, topic, group_name, member_id)
);
`,
  },
  { version: 7, name: "dashboard", sql: dashboardMigrationSql("sqlite") },
  {
    version: 8,
    name: "log-records-rowid",
    // Records move from a WITHOUT ROWID table to a rowid table with the same columns and a
    // unique index on the key: a WITHOUT ROWID row keeps at most about 1 KB in its b-tree page
    // (4 KB pages) and spills the rest to an overflow page of its own, so a 2 KiB record took
    // two pages; a rowid table keeps up to about 4 KB in the page. Measured with bench/log.js's
    // 2 KiB records: raw inserts 10,600/s -> 13,700/s, raw replay 79-122 -> 147 MB/s. Small
    // records pay one index entry more per append. Same name and columns: the statements stay.
    sql: `
CREATE TABLE later_log_records_v8 (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  "offset" INTEGER NOT NULL,
  key TEXT,
  value BLOB NOT NULL,
  headers TEXT,
  "timestamp" INTEGER NOT NULL,
  UNIQUE (namespace, topic, partition_no, "offset")
);
INSERT INTO later_log_records_v8 (namespace, topic, partition_no, "offset", key, value, headers, "timestamp")
  SELECT namespace, topic, partition_no, "offset", key, value, headers, "timestamp" FROM later_log_records
  ORDER BY namespace, topic, partition_no, "offset";
DROP TABLE later_log_records;
ALTER TABLE later_log_records_v8 RENAME TO later_log_records;
`,
  },
  // X8: the last value a running attempt reported with ctx.progress(value), as JSON text.
  { version: 9, name: "job-progress", sql: "ALTER TABLE later_jobs ADD COLUMN progress TEXT;" },
  {
    version: 10,
    name: "log-record-batches",
    // Records are stored as record batches, as Kafka stores them: one row per partition per append,
    // holding its records' values end to end. One row per record capped both SQLite figures that
    // issue 14 sets: replay of 100-byte records read 240,000 records/s (24 MB/s; better-sqlite3
    // builds a row and a Buffer per record, and a rowid-range scan with .raw() still topped out
    // near 540,000 rows/s), and a 2 KiB record with its columns does not fit twice on a 4 KiB
    // page, so each took a page of its own and its WAL write (batched append 1.2-1.6x job bulk
    // enqueue, target 1.5x). A batch row packs a batch's values into consecutive pages. Measured
    // with bench/log.js (SQLite, 50,000 records): batched append 161,000 -> 245,000-253,000
    // records/s at 100 B and 24,000 -> 48,000-60,000 at 2 KiB (2.1-2.4x job bulk enqueue);
    // replay (second pass) 24 -> 72-100 MB/s at 100 B and 195 -> 635-687 MB/s at 2 KiB.
    // value_ends: NULL for one record, else record_count uint32 big-endian cumulative ends into
    // "values"; keys and headers: JSON arrays, one entry (string or null) per record, NULL when
    // every entry is null. All records of one append share its timestamp. A batch is deleted
    // whole, once retention's cut has passed all of its records. Existing records become one
    // batch each; the offsets stay.
    sql: `
CREATE TABLE later_log_batches (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  first_offset INTEGER NOT NULL,
  record_count INTEGER NOT NULL,
  "timestamp" INTEGER NOT NULL,
  keys TEXT,
  headers TEXT,
  value_ends BLOB,
  "values" BLOB NOT NULL,
  UNIQUE (namespace, topic, partition_no, first_offset)
);
INSERT INTO later_log_batches (namespace, topic, partition_no, first_offset, record_count, "timestamp", keys, headers, value_ends, "values")
  SELECT namespace, topic, partition_no, "offset", 1, "timestamp",
    CASE WHEN key IS NULL THEN NULL ELSE json_array(key) END,
    CASE WHEN headers IS NULL THEN NULL ELSE json_array(headers) END,
    NULL, value
  FROM later_log_records ORDER BY namespace, topic, partition_no, "offset";
DROP TABLE later_log_records;
`,
  },
  // The job types each server handles, published with its heartbeat (a JSON array of strings), so that ready jobs
  // of a type no live server handles can be shown (dashboard, `later jobs list`, metrics). A row written before
  // this migration lists none until its server's next heartbeat.
  { version: 11, name: "server-job-types", sql: "ALTER TABLE later_servers ADD COLUMN job_types TEXT NOT NULL DEFAULT '[]';" },
  // EnqueueOptions.timeoutMs: the job's own attempt timeout (ms), which wins over
  // its type's and the server's; NULL: none given. Read by the claims beside the retry policy.
  { version: 12, name: "job-timeout", sql: "ALTER TABLE later_jobs ADD COLUMN timeout_ms INTEGER;" },
  // X4: paused job types (kind 'type') and topics (kind 'topic'), one row each while paused. Every server reads
  // the namespace's rows once per poll interval (a primary-key range: a handful of rows), never per claim.
  {
    version: 13,
    name: "paused",
    sql: `
CREATE TABLE later_paused (
  namespace TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('type', 'topic')),
  name TEXT NOT NULL,
  paused_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, kind, name)
) WITHOUT ROWID;
`,
  },
  // X10: the job's metadata (a JSON object the enqueue middleware set, e.g. a trace context), read back by the
  // claims for the attempt middleware. NULL when none was set, so a plain enqueue stores nothing more.
  { version: 14, name: "job-meta", sql: "ALTER TABLE later_jobs ADD COLUMN meta TEXT;" },
];
