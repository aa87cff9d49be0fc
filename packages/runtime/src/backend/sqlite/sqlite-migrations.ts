/**
 * SQLite migrations: numbered, forward-only, each applied once and recorded
 * in `later_migrations`. Never edit a shipped migration; add the next number.
 * So their stage lists stay literal, as shipped, instead of following the
 * stage sets of `core/job-stage.ts`; the statements that must match an
 * index's predicate render the same list from those sets.
 */
import type * as B from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { SQLITE_STAGE_COUNTERS_SQL } from "./sqlite-stage-counters.js";
import { dashboardMigrationSql } from "../shared/dashboard-migration.js";

export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
}

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
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
  {
    version: 15,
    name: "priority-unique",
    sql: `
-- X1: EnqueueOptions.priority, lower first. The ready index leads with it, so
-- a claim's ORDER BY priority, run_at LIMIT n walks the index, never sorts.
ALTER TABLE later_jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
DROP INDEX later_jobs_ready;
CREATE INDEX later_jobs_ready ON later_jobs (namespace, priority, run_at)
  WHERE stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL;
-- X2: EnqueueOptions.uniqueKey, kept for display; unique_slot is 'pending' (not
-- started) or 'active' (started, until finished), NULL once finished or without a key.
ALTER TABLE later_jobs ADD COLUMN unique_key TEXT;
ALTER TABLE later_jobs ADD COLUMN unique_slot TEXT;
CREATE UNIQUE INDEX later_jobs_unique ON later_jobs (namespace, job_type, unique_key, unique_slot)
  WHERE unique_slot IS NOT NULL;
`,
  },
  // cancel (docs/semantics.md X3): the terminal stage `cancelled`. No CHECK on stage here, but SQLite uses a
  // partial index only when the query's WHERE contains its predicate word for word: the head probe and the
  // history truncation render TERMINAL_STAGES, which gained `cancelled`, so both partition indexes are rebuilt
  // with the new list (they hold partitioned rows only).
  {
    version: 16,
    name: "cancelled-stage",
    sql: `DROP INDEX later_jobs_partition_head;
CREATE INDEX later_jobs_partition_head ON later_jobs (namespace, topic, partition_no, seq)
  WHERE topic IS NOT NULL AND stage NOT IN ('success', 'failed', 'cancelled');
DROP INDEX later_jobs_partition_done;
CREATE INDEX later_jobs_partition_done ON later_jobs (namespace, topic, partition_no, seq)
  WHERE topic IS NOT NULL AND stage IN ('success', 'failed', 'cancelled');
`,
  },
  // X6: a handler's resolved value as JSON text (NULL: none), written with the success. No `awaited`
  // column here (PostgreSQL has one): waiters wake on the WAL watcher, which sees every commit.
  { version: 17, name: "job-result", sql: "ALTER TABLE later_jobs ADD COLUMN result TEXT;" },
  {
    version: 18,
    name: "fan-in",
    // X5: a continuation of several parents (see the PostgreSQL migration 18): parents_left on
    // the child (NULL on every other job), one edge per parent, deleted with the child.
    sql: `
ALTER TABLE later_jobs ADD COLUMN parents_left INTEGER;
CREATE TABLE later_job_parents (
  namespace TEXT NOT NULL,
  child_id TEXT NOT NULL,
  parent_id TEXT NOT NULL,
  succeeded INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (child_id, parent_id)
) WITHOUT ROWID;
CREATE INDEX later_job_parents_parent ON later_job_parents (namespace, parent_id);
CREATE TRIGGER later_job_parents_delete AFTER DELETE ON later_jobs WHEN OLD.parents_left IS NOT NULL
BEGIN
  DELETE FROM later_job_parents WHERE child_id = OLD.id;
END;
`,
  },
  {
    version: 19,
    name: "limits",
    // X9: per job type limits and the recent starts of rate-limited types (see the PostgreSQL migration 19).
    sql: `
CREATE TABLE later_limits (
  namespace TEXT NOT NULL,
  job_type TEXT NOT NULL,
  concurrency INTEGER,
  rate_max INTEGER,
  rate_per_ms INTEGER,
  rate_starts TEXT NOT NULL DEFAULT '[]',
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, job_type)
) WITHOUT ROWID;
`,
  },
  {
    version: 20,
    name: "groups",
    // X9 groups: the group column, the ready index of grouped rows only, the group limit and the walk's cursor (see the PostgreSQL migration 20).
    sql: `
ALTER TABLE later_jobs ADD COLUMN group_key TEXT;
-- SQLite evaluates a partial index's predicate for every row it writes, and an IN list there builds
-- an ephemeral table each time (about 1.3 µs a row, measured): the ready indexes write their stage term
-- as a disjunction (stageOneOf in shared/stage-list.ts; the queries repeat it), and the grouped one
-- tests group_key first, so an ungrouped row stops there. later_jobs_ready is rebuilt in that form.
DROP INDEX later_jobs_ready;
CREATE INDEX later_jobs_ready ON later_jobs (namespace, priority, run_at)
  WHERE (stage = 'enqueued' OR stage = 'delayed' OR stage = 'requeued') AND topic IS NULL;
CREATE INDEX later_jobs_ready_group ON later_jobs (namespace, job_type, group_key, run_at)
  WHERE group_key IS NOT NULL AND (stage = 'enqueued' OR stage = 'delayed' OR stage = 'requeued') AND topic IS NULL;
ALTER TABLE later_limits ADD COLUMN group_concurrency INTEGER;
ALTER TABLE later_limits ADD COLUMN group_cursor TEXT;
`,
  },
  {
    version: 21,
    name: "partition-runs",
    // P3 runs: the last sequence of the run the partition's lease holder claimed (NULL: none recorded), and,
    // after a claim found a dead owner's run, the sequence up to which heads are claimed alone (NULL: none).
    // Nullable, no default: adding them rewrites no row.
    sql: `ALTER TABLE later_partitions ADD COLUMN run_until_seq INTEGER;
ALTER TABLE later_partitions ADD COLUMN careful_until_seq INTEGER;
`,
  },
  {
    version: 22,
    name: "ungrouped-group",
    // X9: as PostgreSQL 24 (the ungrouped jobs of a group-limited type stored with the group key '', their own index
    // in (priority, run_at) order, the rows already stored moved). New rows get their key from the inserts, which read
    // the group-limited types once per transaction (an AFTER INSERT trigger doing it cost about 0.9 µs a row: SQLite
    // copies the whole new row for a trigger).
    sql: `
CREATE INDEX later_jobs_ready_ungrouped ON later_jobs (namespace, job_type, priority, run_at)
  WHERE group_key = '' AND (stage = 'enqueued' OR stage = 'delayed' OR stage = 'requeued') AND topic IS NULL;
UPDATE later_jobs SET group_key = '' WHERE group_key IS NULL AND topic IS NULL AND stage NOT IN ('success', 'failed', 'cancelled')
  AND EXISTS (SELECT 1 FROM later_limits l WHERE l.namespace = later_jobs.namespace AND l.job_type = later_jobs.job_type AND l.group_concurrency IS NOT NULL);
`,
  },
];

/** Applied and pending migrations (`later_migrations` is created by {@link SqliteConnection.open}). */
export function readSqliteMigrationStatus(c: SqliteConnection): B.MigrationStatusResult {
  const rows = c.all("SELECT version, name, applied_at FROM later_migrations ORDER BY version");
  const applied = rows.map((r) => ({ version: Number(r.version), name: String(r.name), appliedAt: Number(r.applied_at) }));
  const current = applied.reduce((m, r) => Math.max(m, r.version), 0);
  const latest = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]!.version;
  const pending = SQLITE_MIGRATIONS.filter((m) => m.version > current).map(({ version, name }) => ({ version, name }));
  return { current, latest, applied, pending };
}

/** Applies pending migrations in one `BEGIN IMMEDIATE`: a second process starting at once waits, then sees the work done. */
export function applySqliteMigrations(c: SqliteConnection): { version: number; name: string }[] {
  const applied: { version: number; name: string }[] = [];
  c.immediate(() => {
    const current = Number((c.db.prepare("SELECT coalesce(max(version), 0) AS v FROM later_migrations").get() as Row).v);
    for (const m of SQLITE_MIGRATIONS) {
      if (m.version <= current) continue;
      c.db.exec(m.sql);
      c.db.prepare("INSERT INTO later_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(m.version, m.name, Date.now());
      applied.push({ version: m.version, name: m.name });
    }
  });
  return applied;
}
