/**
 * PostgreSQL migrations 1 to 14: the queue (jobs, partitions, recurring
 * schedules, the retained log, stage counters, the dashboard's tables,
 * progress, timeouts, pause, metadata). Shipped: never edited; the next
 * number goes in postgres-job-control-migrations.ts. Applied by
 * postgres-migrations.ts.
 */
import { POSTGRES_COUNT_IN_STATEMENTS_SQL, POSTGRES_STAGE_COUNTERS_SQL } from "./postgres-counter-migrations.js";
import { dashboardMigrationSql } from "../shared/dashboard-migration.js";

export interface PostgresMigration {
  version: number;
  name: string;
  /** SQL with `{schema}` standing for the quoted schema name. */
  sql: string;
}

export const POSTGRES_QUEUE_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: "jobs",
    sql: `
CREATE TABLE {schema}.later_jobs (
  -- "C" collation: ULIDs compare bytewise, as in JavaScript, and faster than a locale's rules.
  id text COLLATE "C" PRIMARY KEY,
  namespace text NOT NULL,
  job_type text NOT NULL,
  payload text NOT NULL,
  stage text NOT NULL CHECK (stage IN ('enqueued', 'delayed', 'waiting', 'running', 'requeued', 'success', 'failed')),
  attempt integer NOT NULL DEFAULT 0,
  retry_policy text NOT NULL,
  run_at bigint NOT NULL,
  parent_id text COLLATE "C",
  lease_owner text,
  lease_expires_at bigint,
  last_error text,
  stages text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  expires_at bigint
);
-- The claim query's index: only claimable rows are in it, so it stays as
-- small as the backlog and a claim is one index range scan.
CREATE INDEX later_jobs_ready ON {schema}.later_jobs (namespace, run_at)
  WHERE stage IN ('enqueued', 'delayed', 'requeued');
-- The stuck-job sweep reads running rows only.
CREATE INDEX later_jobs_running ON {schema}.later_jobs (namespace, lease_expires_at)
  WHERE stage = 'running';
-- Releasing (or failing) continuations looks up waiting children only.
CREATE INDEX later_jobs_waiting ON {schema}.later_jobs (parent_id)
  WHERE stage = 'waiting';
CREATE INDEX later_jobs_expires ON {schema}.later_jobs (namespace, expires_at)
  WHERE expires_at IS NOT NULL;
CREATE TABLE {schema}.later_maintenance (
  namespace text NOT NULL,
  task text NOT NULL,
  last_run_at bigint NOT NULL,
  PRIMARY KEY (namespace, task)
);
`,
  },
  {
    version: 2,
    name: "partitions",
    sql: `
-- Partitioned jobs: a topic, a partition number and a sequence in it.
ALTER TABLE {schema}.later_jobs ADD COLUMN topic text, ADD COLUMN partition_no integer, ADD COLUMN seq bigint;
-- Continuations ever inserted for this job (each insert marks its parent under the row lock).
ALTER TABLE {schema}.later_jobs ADD COLUMN waiters integer NOT NULL DEFAULT 0;
-- Partitioned jobs are claimed only as partition heads, never by the
-- regular claim: they leave the ready and running indexes.
DROP INDEX {schema}.later_jobs_ready;
CREATE INDEX later_jobs_ready ON {schema}.later_jobs (namespace, run_at)
  WHERE stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL;
DROP INDEX {schema}.later_jobs_running;
CREATE INDEX later_jobs_running ON {schema}.later_jobs (namespace, lease_expires_at)
  WHERE stage = 'running' AND topic IS NULL;
-- A partition's head is the first entry of this index for its
-- (topic, partition): one probe, however many jobs wait behind it.
CREATE INDEX later_jobs_partition_head ON {schema}.later_jobs (namespace, topic, partition_no, seq)
  WHERE topic IS NOT NULL AND stage NOT IN ('success', 'failed');
-- Finished partitioned jobs, for truncatePartitionHistory. (No index of
-- every partitioned job: a head probe could pick it and walk the history.)
CREATE INDEX later_jobs_partition_done ON {schema}.later_jobs (namespace, topic, partition_no, seq)
  WHERE topic IS NOT NULL AND stage IN ('success', 'failed');
CREATE TABLE {schema}.later_topics (
  namespace text NOT NULL,
  topic text NOT NULL,
  partitions integer NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (namespace, topic)
);
-- One row per partition: the next sequence number, and the lease and
-- fencing epoch of the claim that holds its head.
CREATE TABLE {schema}.later_partitions (
  namespace text NOT NULL,
  topic text NOT NULL,
  partition_no integer NOT NULL,
  next_seq bigint NOT NULL DEFAULT 1,
  epoch bigint NOT NULL DEFAULT 0,
  lease_owner text,
  lease_expires_at bigint,
  PRIMARY KEY (namespace, topic, partition_no)
);
-- Live servers with topics, for rendezvous ownership.
CREATE TABLE {schema}.later_partition_members (
  namespace text NOT NULL,
  member_id text NOT NULL,
  expires_at bigint NOT NULL,
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
CREATE TABLE {schema}.later_recurring (
  namespace text NOT NULL,
  id text NOT NULL,
  job_type text NOT NULL,
  payload text NOT NULL,
  cron text NOT NULL,
  time_zone text NOT NULL,
  sequential smallint NOT NULL DEFAULT 0 CHECK (sequential IN (0, 1)),
  partition_no integer,
  next_run_at bigint NOT NULL,
  next_job_id text COLLATE "C",
  last_job_id text COLLATE "C",
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (namespace, id)
);
-- The pollers' due list: one index range scan.
CREATE INDEX later_recurring_due ON {schema}.later_recurring (namespace, next_run_at);
`,
  },
  { version: 4, name: "stage-counters", sql: POSTGRES_STAGE_COUNTERS_SQL },
  { version: 5, name: "count-in-statements", sql: POSTGRES_COUNT_IN_STATEMENTS_SQL },
  {
    version: 6,
    name: "retry-policy-nullable",
    // A job enqueued without an explicit retry policy stores NULL and follows the policy of the
    // server that runs it; existing rows keep theirs. A catalog change only: no table rewrite.
    sql: `ALTER TABLE {schema}.later_jobs ALTER COLUMN retry_policy DROP NOT NULL;`,
  },
  {
    version: 7,
    name: "retained-log",
    // The retained log (docs/semantics.md L1–L8): every table it needs, consumer groups' included, so the
    // sessions that add consumers and the retention sweep need no table change.
    sql: `
-- Log topics: a fixed partition count and the retention settings the sweep reads
-- (NULL: not set; retention_ms NULL means the default of seven days).
CREATE TABLE {schema}.later_log_topics (
  namespace text NOT NULL,
  topic text NOT NULL,
  partitions integer NOT NULL,
  retention_ms bigint,
  retain_records bigint,
  min_retain_until_committed smallint NOT NULL DEFAULT 0 CHECK (min_retain_until_committed IN (0, 1)),
  created_at bigint NOT NULL,
  PRIMARY KEY (namespace, topic)
);
-- One row per partition: the next offset to assign (taken with UPDATE ... RETURNING in the
-- appending transaction: its row lock serialises appenders of the partition, and a rollback
-- gives the offset back, so offsets are dense) and the oldest retained offset (moved by the
-- retention sweep).
CREATE TABLE {schema}.later_log_partitions (
  namespace text NOT NULL,
  topic text NOT NULL,
  partition_no integer NOT NULL,
  next_offset bigint NOT NULL DEFAULT 0,
  start_offset bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, topic, partition_no)
);
CREATE TABLE {schema}.later_log_records (
  namespace text NOT NULL,
  topic text NOT NULL,
  partition_no integer NOT NULL,
  "offset" bigint NOT NULL,
  key text,
  value bytea NOT NULL,
  headers text,
  "timestamp" bigint NOT NULL,
  PRIMARY KEY (namespace, topic, partition_no, "offset")
);
-- One row per consumer group and partition: the committed offset (the next one the group
-- reads; NULL: none committed) and the lease with its fencing epoch, as later_partitions
-- holds a job partition's.
CREATE TABLE {schema}.later_log_group_partitions (
  namespace text NOT NULL,
  topic text NOT NULL,
  group_name text NOT NULL,
  partition_no integer NOT NULL,
  committed_offset bigint,
  epoch bigint NOT NULL DEFAULT 0,
  lease_owner text,
  lease_expires_at bigint,
  updated_at bigint NOT NULL,
  PRIMARY KEY (namespace, topic, group_name, partition_no)
);
-- Live members of a consumer group, for rendezvous assignment (as later_partition_members).
CREATE TABLE {schema}.later_log_group_members (
  namespace text NOT NULL,
  topic text NOT NULL,
  group_name text NOT NULL,
  member_id text NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (namespace, topic, group_name, member_id)
);
`,
  },
  { version: 8, name: "dashboard", sql: dashboardMigrationSql("postgres") },
  // X8: the last value a running attempt reported with ctx.progress(value), as JSON text. No default: adding the column rewrites nothing.
  { version: 9, name: "job-progress", sql: "ALTER TABLE {schema}.later_jobs ADD COLUMN progress text;" },
  {
    version: 10,
    name: "log-records-inline",
    // A record stays in its row up to about 8 KB. By default PostgreSQL toasts a row past about
    // 2 KB: it tries to compress the value, then moves it to the TOAST table (a second heap row
    // and an index entry each), so a record of 2 KiB was written twice and read through the TOAST
    // index. 30,000 records of 2 KiB appended in batches of 1,000 (random bytes, 3 runs each,
    // alternating): 13,400-15,700 records/s toasted, 17,900-18,500 inline. Larger rows are still
    // compressed and moved out as before. Applies to rows written from now on.
    sql: "ALTER TABLE {schema}.later_log_records SET (toast_tuple_target = 8160);",
  },
  // The job types each server handles, published with its heartbeat (a JSON array of strings), so that ready jobs
  // of a type no live server handles can be shown (dashboard, `later jobs list`, metrics). A constant default:
  // adding the column rewrites nothing. A row written before it lists none until its server's next heartbeat.
  { version: 11, name: "server-job-types", sql: "ALTER TABLE {schema}.later_servers ADD COLUMN job_types text NOT NULL DEFAULT '[]';" },
  // EnqueueOptions.timeoutMs: the job's own attempt timeout (ms), which wins over
  // its type's and the server's; NULL: none given. No default: adding the column rewrites nothing.
  { version: 12, name: "job-timeout", sql: "ALTER TABLE {schema}.later_jobs ADD COLUMN timeout_ms bigint;" },
  // X4: paused job types (kind 'type') and topics (kind 'topic'), one row each while paused. Every server reads
  // the namespace's rows once per poll interval (a primary-key range: a handful of rows), never per claim.
  {
    version: 13,
    name: "paused",
    sql: `
CREATE TABLE {schema}.later_paused (
  namespace text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('type', 'topic')),
  name text NOT NULL,
  paused_at bigint NOT NULL,
  PRIMARY KEY (namespace, kind, name)
);
`,
  },
  // X10: the job's metadata (a JSON object the enqueue middleware set, e.g. a trace context), read back by the
  // claims for the attempt middleware. NULL when none was set, so a plain enqueue stores nothing more.
  { version: 14, name: "job-meta", sql: "ALTER TABLE {schema}.later_jobs ADD COLUMN meta text;" },
];
