/**
 * SQLite migrations 15 on: job control (priority, unique jobs, the cancelled
 * stage, results, fan-in, limits and groups) and partition runs. Never edit a
 * shipped migration; add the next number at the end. Applied by
 * sqlite-migrations.ts, after sqlite-queue-migrations.ts's.
 */
import type { SqliteMigration } from "./sqlite-queue-migrations.js";

export const SQLITE_JOB_CONTROL_MIGRATIONS: readonly SqliteMigration[] = [
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
