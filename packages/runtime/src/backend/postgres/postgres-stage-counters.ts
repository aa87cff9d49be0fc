/**
 * Stage counters of the PostgreSQL backend: how many jobs each stage of a
 * namespace holds, and how many unfinished jobs each topic partition holds,
 * kept by triggers on `later_jobs` in the same transaction as every change,
 * so reading them is a few small index reads at any backlog (DESIGN §4, D7).
 *
 * How they are kept (migration 4):
 * - Statement-level `AFTER` triggers with transition tables, one per event
 *   (PostgreSQL allows transition tables only on single-event triggers
 *   without a column list): INSERT reads `NEW TABLE`, DELETE `OLD TABLE`,
 *   UPDATE both. Each computes the net change per (namespace, stage) as the
 *   rows in the new table minus the rows in the old one, and writes only
 *   non-zero changes: a claim of 500 jobs is two counter writes (`enqueued`
 *   −500, `running` +500), a lease renewal nets to zero and writes nothing.
 *   Every statement that changes a stage is counted, including ones written
 *   later, without remembering to.
 * - Sharded: a single row per stage would serialise every claimer and
 *   finisher on its row lock until commit. Each counter is split into
 *   {@link COUNTER_SHARDS} rows; a database session takes a shard the first
 *   time it writes (round robin over a sequence, kept in the session setting
 *   `later.counter_shard`), so up to that many sessions never wait on one
 *   another's counter rows. A reader sums the shards. Row locks last until
 *   commit, so an application transaction that enqueued (`enqueueIn`) holds
 *   its session's counter rows until it ends: a writer on another session
 *   that shares the shard waits for it (keep such transactions short).
 * - One statement per trigger call: the transition tables are read once into
 *   the net change per (namespace, stage, topic, partition), which feeds both
 *   upserts. Measured on claim and finish in batches of 500 on one
 *   connection (bench/README.md, "Stage counters on and off"): about 4 µs
 *   of server CPU per job (36.8 against 33.0 µs, +11 %), most of it the
 *   transition tables' copies of every changed row and their aggregation;
 *   two statements each reading the tables cost about twice that. A
 *   statement of one row (a partition head's finish) pays a whole trigger
 *   call for one job.
 * - Lock order: each upsert locks its counter rows in key order, and every
 *   trigger call runs the same plan, so two statements never lock them in
 *   opposite orders. (Two multi-statement transactions of sessions sharing a
 *   shard can still deadlock; the backend's transactions run again after a
 *   deadlock, as for job rows.)
 * - Unfinished depth: a partitioned job (`topic` set) counts while its stage
 *   is not terminal (`success`, `failed`, `cancelled`).
 * - Seeded by a recount in the migration's transaction, which first locks
 *   `later_jobs` against writes, so no change falls between the recount and
 *   the triggers.
 */
import type * as B from "../backend.js";
import { JOB_STAGES, type JobStage } from "../../core/job-stage.js";
import type { Execute } from "./postgres-executors.js";
import { statement, type Statement } from "./postgres-job-queries.js";

/** Rows per counter. A session keeps its shard; sessions beyond this many share shards round robin. */
export const COUNTER_SHARDS = 16;

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

/** Migration 4 (`{schema}` stands for the quoted schema). */
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
    s := (nextval('{schema}.later_counter_shards') % ${COUNTER_SHARDS})::text;
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

/**
 * The readers of the counters: each sums a counter's shards, a handful of
 * rows per stage or partition, never the jobs.
 */
export class PostgresStageCounters {
  private readonly byStage: Statement;
  private readonly byPartition: Statement;
  private readonly byTopic: Statement;
  private readonly byNamespace: Statement;

  constructor(
    schema: string,
    private readonly execute: Execute,
    private readonly namespace: string,
  ) {
    const counts = `${schema}.later_partition_counts`;
    this.byNamespace = statement(
      `SELECT namespace, sum(n)::bigint AS n FROM ${schema}.later_stage_counts GROUP BY namespace HAVING sum(n) > 0 ORDER BY namespace`,
    );
    this.byStage = statement(`SELECT stage, sum(n)::bigint AS n FROM ${schema}.later_stage_counts WHERE namespace = $1 GROUP BY stage`);
    this.byPartition = statement(`SELECT p.topic, p.partition_no, p.lease_owner,
  (SELECT coalesce(sum(c.n), 0) FROM ${counts} c WHERE c.namespace = p.namespace AND c.topic = p.topic AND c.partition_no = p.partition_no)::bigint AS unfinished
FROM ${schema}.later_partitions p WHERE p.namespace = $1 ORDER BY p.topic, p.partition_no`);
    this.byTopic = statement(`SELECT t.topic, t.partitions,
  (SELECT coalesce(sum(c.n), 0) FROM ${counts} c WHERE c.namespace = t.namespace AND c.topic = t.topic)::bigint AS unfinished
FROM ${schema}.later_topics t WHERE t.namespace = $1 ORDER BY t.topic`);
  }

  /** Jobs per stage of the namespace; every stage is present (0 when none). */
  async stageCounts(): Promise<B.JobCountByStageResult> {
    const counts = Object.fromEntries(JOB_STAGES.map((s) => [s, 0])) as Record<JobStage, number>;
    for (const r of await this.execute(this.byStage, [this.namespace])) {
      if (String(r.stage) in counts) counts[r.stage as JobStage] = Number(r.n);
    }
    return { counts };
  }

  /** Every namespace holding jobs, with how many (a sum over the counter rows, never the jobs). */
  async namespaceCounts(): Promise<B.NamespaceCount[]> {
    return (await this.execute(this.byNamespace, [])).map((r) => ({ namespace: String(r.namespace), jobs: Number(r.n) }));
  }

  /** Unfinished jobs and the lease owner of every partition of the namespace's topics. */
  async partitionDepth(): Promise<B.PartitionDepthResult> {
    const rows = await this.execute(this.byPartition, [this.namespace]);
    return {
      partitions: rows.map((r) => ({
        topic: String(r.topic),
        partition: Number(r.partition_no),
        unfinished: Number(r.unfinished),
        leaseOwner: (r.lease_owner as string | null) ?? null,
      })),
    };
  }

  /** Unfinished jobs per topic of the namespace. */
  async topicDepth(): Promise<B.TopicDepthResult> {
    const rows = await this.execute(this.byTopic, [this.namespace]);
    return { topics: rows.map((r) => ({ topic: String(r.topic), partitions: Number(r.partitions), unfinished: Number(r.unfinished) })) };
  }
}
