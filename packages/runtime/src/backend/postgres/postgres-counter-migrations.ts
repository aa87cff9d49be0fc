/**
 * The migrations of the stage counters on PostgreSQL (`{schema}` stands for
 * the quoted schema). Applied migrations never change, so migration 4 is
 * kept as it was applied.
 *
 * - Migration 4 created the counter tables (sharded, see
 *   `postgres-stage-counters.ts`), seeded them by a recount, and kept them
 *   with statement-level triggers reading transition tables.
 * - Migration 5 drops those triggers: every statement that changes a job's
 *   stage now adds its own moves to the counters (`countMoves`), which costs
 *   a few rows of aggregation instead of a copy of every changed row into
 *   the transition tables. The counts themselves carry over unchanged: the
 *   triggers kept them exact up to the moment they are dropped, and the
 *   table lock taken first lets no write fall between.
 */
/** Migration 4's shard count (the shards of its triggers); its tables are still the counters' tables. */
const MIGRATION_4_SHARDS = 16;

const FINISHED = "('success', 'failed', 'cancelled')";

/**
 * One trigger function: `tables` are the transition tables it reads, with the
 * sign of their rows. One statement: the transition tables are read once
 * into the net change per (namespace, stage, topic, partition), which then
 * feeds both upserts, each in key order.
 */
const countFunction = (name: string, tables: [string, string][]) => `
CREATE FUNCTION {schema}.${name}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE my_shard int := coalesce(nullif(current_setting('later.counter_shard', true), '')::int, {schema}.later_counter_shard());
BEGIN
  WITH net AS (
    SELECT d.namespace, d.stage, d.topic, d.partition_no, sum(d.n) AS n
    FROM (${tables.map(([t, sign]) => `SELECT namespace, stage, topic, partition_no, ${sign}1 AS n FROM ${t}`).join(" UNION ALL ")}) d
    GROUP BY d.namespace, d.stage, d.topic, d.partition_no HAVING sum(d.n) <> 0
  ), stages AS (
    INSERT INTO {schema}.later_stage_counts AS c (namespace, stage, shard, n)
    SELECT namespace, stage, my_shard, sum(n) FROM net GROUP BY namespace, stage HAVING sum(n) <> 0 ORDER BY namespace, stage
    ON CONFLICT (namespace, stage, shard) DO UPDATE SET n = c.n + excluded.n
  )
  INSERT INTO {schema}.later_partition_counts AS c (namespace, topic, partition_no, shard, n)
  SELECT namespace, topic, partition_no, my_shard, sum(n) FROM net WHERE topic IS NOT NULL AND stage NOT IN ${FINISHED}
  GROUP BY namespace, topic, partition_no HAVING sum(n) <> 0 ORDER BY namespace, topic, partition_no
  ON CONFLICT (namespace, topic, partition_no, shard) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;`;

/** Migration 4 (`{schema}` stands for the quoted schema), as it was applied: migration 5 drops its triggers. */
export const POSTGRES_STAGE_COUNTERS_SQL = `
-- No write to later_jobs may fall between the recount below and the triggers.
LOCK TABLE {schema}.later_jobs IN SHARE ROW EXCLUSIVE MODE;
-- Jobs per (namespace, stage), split into shards (see postgres-stage-counters.ts); readers sum the shards.
CREATE TABLE {schema}.later_stage_counts (
  namespace text NOT NULL,
  stage text NOT NULL,
  shard smallint NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (namespace, stage, shard)
) WITH (fillfactor = 50);
-- Unfinished jobs per (namespace, topic, partition), sharded the same way.
CREATE TABLE {schema}.later_partition_counts (
  namespace text NOT NULL,
  topic text NOT NULL,
  partition_no integer NOT NULL,
  shard smallint NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (namespace, topic, partition_no, shard)
) WITH (fillfactor = 50);
CREATE SEQUENCE {schema}.later_counter_shards;
-- This session's shard: taken round robin the first time the session writes a counter, then kept.
CREATE FUNCTION {schema}.later_counter_shard() RETURNS int LANGUAGE plpgsql AS $$
DECLARE s text := nullif(current_setting('later.counter_shard', true), '');
BEGIN
  IF s IS NULL THEN
    s := (nextval('{schema}.later_counter_shards') % ${MIGRATION_4_SHARDS})::text;
    PERFORM set_config('later.counter_shard', s, false);
  END IF;
  RETURN s::int;
END $$;
${countFunction("later_jobs_count_insert", [["new_rows", "+"]])}
${countFunction("later_jobs_count_update", [
  ["new_rows", "+"],
  ["old_rows", "-"],
])}
${countFunction("later_jobs_count_delete", [["old_rows", "-"]])}
CREATE TRIGGER later_jobs_count_insert AFTER INSERT ON {schema}.later_jobs
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {schema}.later_jobs_count_insert();
CREATE TRIGGER later_jobs_count_update AFTER UPDATE ON {schema}.later_jobs
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {schema}.later_jobs_count_update();
CREATE TRIGGER later_jobs_count_delete AFTER DELETE ON {schema}.later_jobs
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {schema}.later_jobs_count_delete();
-- The recount that seeds them.
INSERT INTO {schema}.later_stage_counts (namespace, stage, shard, n)
  SELECT namespace, stage, 0, count(*) FROM {schema}.later_jobs GROUP BY namespace, stage;
INSERT INTO {schema}.later_partition_counts (namespace, topic, partition_no, shard, n)
  SELECT namespace, topic, partition_no, 0, count(*) FROM {schema}.later_jobs
  WHERE topic IS NOT NULL AND stage NOT IN ${FINISHED} GROUP BY namespace, topic, partition_no;
`;

/** Migration 5: the statements count their own moves from here on (see the module doc). */
export const POSTGRES_COUNT_IN_STATEMENTS_SQL = `
LOCK TABLE {schema}.later_jobs IN SHARE ROW EXCLUSIVE MODE;
DROP TRIGGER later_jobs_count_insert ON {schema}.later_jobs;
DROP TRIGGER later_jobs_count_update ON {schema}.later_jobs;
DROP TRIGGER later_jobs_count_delete ON {schema}.later_jobs;
DROP FUNCTION {schema}.later_jobs_count_insert();
DROP FUNCTION {schema}.later_jobs_count_update();
DROP FUNCTION {schema}.later_jobs_count_delete();
DROP FUNCTION {schema}.later_counter_shard();
DROP SEQUENCE {schema}.later_counter_shards;
`;
