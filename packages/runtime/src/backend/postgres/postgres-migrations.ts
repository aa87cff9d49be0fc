/**
 * PostgreSQL migrations: numbered, forward-only, each applied once and
 * recorded in `<schema>.later_migrations`. Never edit a shipped migration;
 * add the next number.
 *
 * Concurrency: `migrationUp` runs in one transaction that first takes
 * `pg_advisory_xact_lock` on a key derived from the schema name, so two
 * servers starting at once with `autoMigrate` serialise: the second waits,
 * then finds the work done and applies nothing. DDL is transactional in
 * PostgreSQL, so a failed migration leaves nothing half-applied.
 */
import type pg from "pg";
import type * as B from "../backend.js";
import { POSTGRES_COUNT_IN_STATEMENTS_SQL, POSTGRES_STAGE_COUNTERS_SQL } from "./postgres-counter-migrations.js";
import { dashboardMigrationSql } from "../shared/dashboard-migration.js";

export interface PostgresMigration {
  version: number;
  name: string;
  /** SQL with `{schema}` standing for the quoted schema name. */
  sql: string;
}

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
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
  {
    version: 15,
    name: "priority-unique",
    sql: `
-- X1: EnqueueOptions.priority, lower first. The ready index leads with it, so
-- a claim's ORDER BY priority, run_at LIMIT n walks the index, never sorts.
-- A constant default: adding the columns rewrites no row.
ALTER TABLE {schema}.later_jobs ADD COLUMN priority smallint NOT NULL DEFAULT 0,
  ADD COLUMN unique_key text, ADD COLUMN unique_slot text;
DROP INDEX {schema}.later_jobs_ready;
CREATE INDEX later_jobs_ready ON {schema}.later_jobs (namespace, priority, run_at)
  WHERE stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL;
-- X2: EnqueueOptions.uniqueKey, kept for display; unique_slot is 'pending' (not
-- started) or 'active' (started, until finished), NULL once finished or without a key.
CREATE UNIQUE INDEX later_jobs_unique ON {schema}.later_jobs (namespace, job_type, unique_key, unique_slot)
  WHERE unique_slot IS NOT NULL;
`,
  },
  // cancel (docs/semantics.md X3): the terminal stage `cancelled`. The stage CHECK of migration 1 (named
  // later_jobs_stage_check by PostgreSQL) is replaced; NOT VALID skips a scan of every row, which all passed
  // the stricter old check. The partition indexes' predicates follow TERMINAL_STAGES, which the head probe and
  // the history truncation render: with the old lists a cancelled row would stay in the head index, and the
  // done index would no longer match the truncation's predicate. Rebuilt here (they hold partitioned rows only).
  {
    version: 16,
    name: "cancelled-stage",
    sql: `ALTER TABLE {schema}.later_jobs DROP CONSTRAINT later_jobs_stage_check;
ALTER TABLE {schema}.later_jobs ADD CONSTRAINT later_jobs_stage_check
  CHECK (stage IN ('enqueued', 'delayed', 'waiting', 'running', 'requeued', 'success', 'failed', 'cancelled')) NOT VALID;
DROP INDEX {schema}.later_jobs_partition_head;
CREATE INDEX later_jobs_partition_head ON {schema}.later_jobs (namespace, topic, partition_no, seq)
  WHERE topic IS NOT NULL AND stage NOT IN ('success', 'failed', 'cancelled');
DROP INDEX {schema}.later_jobs_partition_done;
CREATE INDEX later_jobs_partition_done ON {schema}.later_jobs (namespace, topic, partition_no, seq)
  WHERE topic IS NOT NULL AND stage IN ('success', 'failed', 'cancelled');
`,
  },
  // X6: a handler's resolved value as JSON text (NULL: none), written by the success itself; and
  // `awaited`, set by waitFor, so that the statements making a job terminal notify the done channel
  // only for jobs someone waits for (nothing extra for the rest). Both are metadata-only additions.
  {
    version: 17,
    name: "job-result",
    sql: "ALTER TABLE {schema}.later_jobs ADD COLUMN result text, ADD COLUMN awaited boolean NOT NULL DEFAULT false;",
  },
  {
    version: 18,
    name: "fan-in",
    // X5: a continuation of several parents. parents_left (NULL on every other job, which the
    // single-parent statements never read) counts its parents not yet succeeded; the edges keep
    // which parents they are and whether each has counted (succeeded: a parent's release runs
    // once per edge however often it is asked). Edges go with their child: a trigger that fires
    // only for a fan-in child (its WHEN reads the deleted row, no call for any other job).
    sql: `
ALTER TABLE {schema}.later_jobs ADD COLUMN parents_left integer;
CREATE TABLE {schema}.later_job_parents (
  namespace text NOT NULL,
  child_id text COLLATE "C" NOT NULL,
  parent_id text COLLATE "C" NOT NULL,
  succeeded boolean NOT NULL DEFAULT false,
  PRIMARY KEY (child_id, parent_id)
);
CREATE INDEX later_job_parents_parent ON {schema}.later_job_parents (namespace, parent_id);
CREATE FUNCTION {schema}.later_job_parents_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {schema}.later_job_parents WHERE child_id = OLD.id;
  RETURN NULL;
END $$;
CREATE TRIGGER later_job_parents_delete AFTER DELETE ON {schema}.later_jobs
  FOR EACH ROW WHEN (OLD.parents_left IS NOT NULL) EXECUTE FUNCTION {schema}.later_job_parents_delete();
`,
  },
  {
    version: 19,
    name: "limits",
    // X9: the limits in force per job type (the last server started with a handler for the type writes them;
    // NULL: no such limit). rate_starts: JSON array of the claim times (ms) of the type's last rate_max starts,
    // oldest first, written by the limited claim under the row's lock (see `limitedClaim`). A group limit
    // (X9's groupConcurrency, planned) takes a column here and a table of its own keyed by (namespace, job_type,
    // group). No index of its own: a limited claim counts the type's running jobs through `later_jobs_running`
    // (an index every claim and finish of every job would maintain costs the servers without limits).
    sql: `
CREATE TABLE {schema}.later_limits (
  namespace text NOT NULL,
  job_type text NOT NULL,
  concurrency integer,
  rate_max integer,
  rate_per_ms bigint,
  rate_starts text NOT NULL DEFAULT '[]',
  updated_at bigint NOT NULL,
  PRIMARY KEY (namespace, job_type)
);
`,
  },
  {
    version: 20,
    name: "groups",
    // X9 groups: EnqueueOptions.group (NULL: none) and the type's groupConcurrency. A nullable column with no
    // default: adding it rewrites no row. later_jobs_ready_group holds the ready rows that carry a group ONLY
    // (partial on group_key IS NOT NULL): an ungrouped job, the common case, gains no index maintenance on its
    // insert, claim or finish. A limited claim walks the distinct ready groups of a type through it (one index
    // descent per group) and reads each group's oldest ready rows in run_at order, so a group's backlog is never
    // scanned. group_cursor: the last group a claim of the type looked at, where the next claim's walk starts
    // (round-robin across claims); written under the limits row's lock.
    sql: `
ALTER TABLE {schema}.later_jobs ADD COLUMN group_key text;
CREATE INDEX later_jobs_ready_group ON {schema}.later_jobs (namespace, job_type, group_key, run_at)
  WHERE stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL AND group_key IS NOT NULL;
ALTER TABLE {schema}.later_limits ADD COLUMN group_concurrency integer, ADD COLUMN group_cursor text;
`,
  },
  {
    version: 21,
    name: "partition-runs",
    // P3 runs: as SQLite 21 (the last sequence of the claimed run; the sequence up to which heads are claimed
    // alone after a dead owner's run). Nullable, no default: adding them rewrites no row.
    sql: `
ALTER TABLE {schema}.later_partitions ADD COLUMN run_until_seq bigint, ADD COLUMN careful_until_seq bigint;
`,
  },
  {
    version: 22,
    name: "group-index-predicate",
    // later_jobs_ready_group's stage term written as the stages a claimable row is not (the same rows, by
    // the stage CHECK): a statement over grouped ready rows says it in these words, which prove this index's
    // predicate and not later_jobs_ready's (`stage IN (...)`), so the planner cannot take later_jobs_ready
    // for it. On a table filled since it was last analyzed it did, estimating one row, and sorted the
    // namespace's every ready job per group probed (see GROUPED_READY in postgres-group-claim.ts).
    sql: `
DROP INDEX {schema}.later_jobs_ready_group;
CREATE INDEX later_jobs_ready_group ON {schema}.later_jobs (namespace, job_type, group_key, run_at)
  WHERE stage NOT IN ('waiting', 'running', 'success', 'failed', 'cancelled') AND topic IS NULL AND group_key IS NOT NULL;
`,
  },
  {
    version: 23,
    name: "column-statistics",
    // No planner statistics for the columns no statement filters, joins or sorts on: the job's payload, its
    // history, result, error, progress, metadata and retry policy. ANALYZE (the `analyze` task's, autovacuum's)
    // otherwise sorts the sampled values of each of them, the widest of the table, for statistics nothing reads:
    // an ANALYZE of 120,000 jobs took about a tenth less without them (7-byte payloads: 196 against 179 ms;
    // 600-byte: 562 against 503). Applying it again changes nothing (a migration rewind need not undo it).
    sql: `
ALTER TABLE {schema}.later_jobs
  ALTER COLUMN payload SET STATISTICS 0, ALTER COLUMN stages SET STATISTICS 0, ALTER COLUMN result SET STATISTICS 0,
  ALTER COLUMN last_error SET STATISTICS 0, ALTER COLUMN progress SET STATISTICS 0, ALTER COLUMN meta SET STATISTICS 0,
  ALTER COLUMN retry_policy SET STATISTICS 0;
`,
  },
  {
    version: 24,
    name: "ungrouped-group",
    // X9: the ungrouped jobs of a type with a group limit are stored with the group key '' (shared/ungrouped-group.ts),
    // so the claim's walk over the type's groups reaches them in their turn; until now they were read after every
    // group, and a backlog of more groups than a claim's slots kept them waiting until it drained. Their own index,
    // in (priority, run_at) order as X1 wants within that group, holds those rows only: no other insert writes to it.
    // The rows already stored for such types move to '' here; later ones as they are inserted.
    sql: `
CREATE INDEX later_jobs_ready_ungrouped ON {schema}.later_jobs (namespace, job_type, priority, run_at)
  WHERE stage NOT IN ('waiting', 'running', 'success', 'failed', 'cancelled') AND topic IS NULL AND group_key = '';
UPDATE {schema}.later_jobs j SET group_key = '' FROM {schema}.later_limits l
  WHERE l.namespace = j.namespace AND l.job_type = j.job_type AND l.group_concurrency IS NOT NULL
    AND j.group_key IS NULL AND j.topic IS NULL AND j.stage NOT IN ('success', 'failed', 'cancelled');
`,
  },
  {
    version: 25,
    name: "group-indexes-without-posting-lists",
    // X9: the group claim's indexes keep one entry per row. A B-tree merges entries of equal keys into one posting list
    // (deduplication, on by default), and the jobs of one group enqueued together share a key, (namespace, job_type,
    // group_key, run_at). A probe that stops at a group's oldest claimable row (`LIMIT 1`, a share's `LIMIT n`) may mark
    // a dead entry as such only when the whole list it lies in is dead, so the group's claimed rows stayed in front of it
    // and every later probe read them again, a heap visit each: 100,000 jobs of 1,000 groups enqueued in batches read
    // 5.1 million dead entries in their 104,000 probes (about 50 a probe); one entry a row, 113,000. Existing posting
    // lists stay until their rows are done; nothing is rebuilt. `later_jobs_ready` keeps its lists: the plain claim reads
    // a range in full, and without them its server spent more per job (bench/README.md, eighteenth session).
    sql: `
ALTER INDEX {schema}.later_jobs_ready_group SET (deduplicate_items = off);
ALTER INDEX {schema}.later_jobs_ready_ungrouped SET (deduplicate_items = off);
`,
  },
  {
    version: 26,
    name: "group-keys-bytewise",
    // X9: group keys compare byte by byte (the "C" collation), as the ids do and as SQLite compares every key. The
    // group claim's walk compares keys at every step (`group_key > previous`, a B-tree range read to the end of a
    // page): in the database's collation that is a locale comparison per entry, a tenth of a grouped job's server
    // time on a database created with ICU's en-US collation (grouped processing 1.08x after this; unchanged where
    // the database's collation is C.UTF-8). The walk's order becomes the keys' byte order on every database and
    // backend. The table is not rewritten; the two group indexes are rebuilt (they hold claimable grouped rows only).
    sql: `
ALTER TABLE {schema}.later_jobs ALTER COLUMN group_key TYPE text COLLATE "C";
ALTER TABLE {schema}.later_limits ALTER COLUMN group_cursor TYPE text COLLATE "C";
`,
  },
];

/** Advisory-lock class id for migrations ("LATR"); the object id is `hashtext(schema)`. */
const MIGRATION_LOCK_CLASS = 0x4c415452;

/** Applied and pending migrations; a schema without `later_migrations` is version 0. */
export async function readMigrationStatus(pool: pg.Pool, quoted: string): Promise<B.MigrationStatusResult> {
  const exists = await pool.query<{ t: string | null }>("SELECT to_regclass($1) AS t", [`${quoted}.later_migrations`]);
  const rows = exists.rows[0]?.t
    ? (
        await pool.query<{ version: number; name: string; applied_at: string }>(
          `SELECT version, name, applied_at FROM ${quoted}.later_migrations ORDER BY version`,
        )
      ).rows
    : [];
  const applied = rows.map((r) => ({ version: Number(r.version), name: String(r.name), appliedAt: Number(r.applied_at) }));
  const current = applied.reduce((m, r) => Math.max(m, r.version), 0);
  const latest = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;
  const pending = POSTGRES_MIGRATIONS.filter((m) => m.version > current).map(({ version, name }) => ({ version, name }));
  return { current, latest, applied, pending };
}

/** Applies pending migrations in one transaction under the schema's advisory lock. */
export async function applyMigrations(pool: pg.Pool, schema: string, quoted: string): Promise<{ version: number; name: string }[]> {
  const client = await pool.connect();
  const applied: { version: number; name: string }[] = [];
  let broken: unknown;
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [MIGRATION_LOCK_CLASS, schema]);
    // Look before creating: CREATE SCHEMA IF NOT EXISTS needs the CREATE
    // privilege on the database even when the schema is already there.
    const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${quoted}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${quoted}.later_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`);
    const row = await client.query<{ v: number }>(`SELECT coalesce(max(version), 0) AS v FROM ${quoted}.later_migrations`);
    const current = Number(row.rows[0]?.v ?? 0);
    for (const m of POSTGRES_MIGRATIONS) {
      if (m.version <= current) continue;
      await client.query(m.sql.replaceAll("{schema}", quoted));
      await client.query(`INSERT INTO ${quoted}.later_migrations (version, name, applied_at) VALUES ($1, $2, $3)`, [m.version, m.name, Date.now()]);
      applied.push({ version: m.version, name: m.name });
    }
    await client.query("COMMIT");
    return applied;
  } catch (error) {
    broken = error;
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release(broken instanceof Error ? broken : undefined);
  }
}
