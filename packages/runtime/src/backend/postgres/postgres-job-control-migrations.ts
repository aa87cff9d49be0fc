/**
 * PostgreSQL migrations 15 on: job control (priority, unique jobs, the
 * cancelled stage, results, fan-in, limits and groups) and partition runs.
 * Never edit a shipped migration; add the next number at the end. Applied by
 * postgres-migrations.ts, after postgres-queue-migrations.ts's.
 */
import type { PostgresMigration } from "./postgres-queue-migrations.js";

export const POSTGRES_JOB_CONTROL_MIGRATIONS: readonly PostgresMigration[] = [
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
];
