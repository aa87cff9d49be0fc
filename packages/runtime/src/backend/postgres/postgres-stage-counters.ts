/**
 * Stage counters of the PostgreSQL backend: how many jobs each stage of a
 * namespace holds, and how many unfinished jobs each topic partition holds,
 * kept in the same statement as every change, so reading them is a few
 * small index reads at any backlog (D7 in docs/semantics.md; docs/storage.md).
 *
 * Terms: a *move* is one job leaving a stage (−1) or entering one (+1); a
 * statement's *net* is the sum of its moves per (stage, topic, partition),
 * zeros dropped.
 *
 * How they are kept (since migration 5; migration 4 used triggers, see
 * `postgres-counter-migrations.ts`):
 * - Every statement that changes a job's stage declares its changes as
 *   transitions of the core table (`core/stage-transition.ts`, X13) and
 *   ends with `transitionTail` (`postgres-transition.ts`), the one path
 *   that also writes the history entry and the wake-up; the tail holds the
 *   CTEs of {@link PostgresStageCounters.countMoves}: its changed rows, which it
 *   returns anyway, become moves ({@link moves}), the moves one net, and the net two
 *   upserts (per stage, and per partition for unfinished topic jobs). A
 *   claim of 500 jobs writes two counter rows (`enqueued` −500, `running`
 *   +500). The old stage of an updated row comes from the row the
 *   statement locked before updating it (PostgreSQL 15 has no `OLD` in
 *   `RETURNING`), or is the one stage its `WHERE` allows.
 * - Why in the statement, not a trigger: statement-level triggers with
 *   transition tables copy every changed row, payload and stage history
 *   included, and aggregate them in a function call; measured on claim and
 *   finish in batches of 500 that cost about 4 µs of server CPU per job
 *   (+11 %), and a whole function call per one-row statement (a partition
 *   head's finish). The CTEs aggregate only the few columns they need.
 *   The price: a statement written later that changes a stage must go
 *   through `transitionTail`; the conformance test that compares the
 *   counters with a `GROUP BY` after a mixed workload (and checks every
 *   stored history against the transition table) catches one that does not.
 * - One upsert per table per statement: PostgreSQL does not allow a
 *   statement to update one row twice, so every move of a statement goes
 *   into one net first.
 * - Sharded: a single row per stage would serialise every claimer and
 *   finisher on its row lock until commit. Each counter is split into
 *   {@link COUNTER_SHARDS} rows; a statement writes the shard of its
 *   session (`pg_backend_pid()` modulo the shard count: no state, and the
 *   connections of a pool mostly land on different shards). A reader sums
 *   the shards. Row locks last until commit, so an application transaction
 *   that enqueued (`enqueueIn`) holds its session's counter rows until it
 *   ends: a writer on another session that shares the shard waits for it
 *   (keep such transactions short).
 * - Lock order: each upsert locks its counter rows in key order, so two
 *   single statements never lock them in opposite orders. A transaction of
 *   several statements can: a partition head's finish moves its job out of
 *   `running` (holding that row) and then claims the next head out of
 *   `enqueued`, while a claim of another session on the same shard holds
 *   `enqueued` and waits for `running`. PostgreSQL breaks such a deadlock
 *   by rolling one side back, and that side runs again: the backend's
 *   transactions (`PostgresRunner.inTransaction`) and its single
 *   statements (`PostgresRunner.execute`) alike. A caller's transaction
 *   (`enqueueIn`) is the caller's to run again.
 * - Throughput (migration 8): the stage upsert also adds the moves *into*
 *   each stage, counted before netting, to the row's cumulative `entered`;
 *   no other row is written (the dashboard's sampler turns it into
 *   per-second buckets, see `ActivityStore`).
 * - Unfinished depth: a partitioned job (`topic` set) counts while its stage
 *   is not terminal.
 */
import type * as B from "../backend.js";
import { JOB_STAGES, TERMINAL_STAGES, type JobStage } from "../../core/job-stage.js";
import { type Execute, statement, type Statement } from "./postgres-statement.js";
import { stageList } from "../shared/stage-list.js";
import { partitionDepthFromRows, topicDepthFromRows } from "../shared/depth-rows.js";

/** Rows per counter. Sessions share shards by their backend pid. */
export const COUNTER_SHARDS = 16;

const TERMINAL = stageList(TERMINAL_STAGES);

/**
 * The moves of rows a statement changed: `rows` is a CTE (or subquery) with
 * columns `topic` and `partition_no`; `from` and `to` are SQL expressions of
 * the stage each row left and entered (a column, or a literal such as
 * `'running'`), null for an insert (`from`) or a delete (`to`).
 */
export function moves(rows: string, from: string | null, to: string | null): string {
  // Counted per set first: the net then groups a few rows, not one per job and direction.
  const side = (stage: string, sign: string) =>
    `SELECT (${stage})::text AS stage, topic, partition_no, ${sign}count(*)::int AS n FROM ${rows} GROUP BY 1, topic, partition_no`;
  return [to === null ? null : side(to, ""), from === null ? null : side(from, "-")].filter((s) => s !== null).join(" UNION ALL ");
}

/**
 * The readers of the counters: each sums a counter's shards, a handful of
 * rows per stage or partition, never the jobs.
 */
export class PostgresStageCounters {
  /**
   * The CTEs that add a statement's moves to the counters, to place after
   * the statement's own CTEs (the text starts with a comma). `schema` is the
   * quoted schema, `namespace` the SQL of the statement's namespace (a
   * parameter such as `$1`), `moved` the statement's {@link moves} joined
   * with `UNION ALL`. The CTEs return nothing: PostgreSQL runs a
   * data-modifying CTE whether or not the statement reads it.
   *
   * Static so that the benchmark can replace it (bench/counters-off.js
   * measures the same build with the counters off); nothing else does.
   */
  static countMoves(schema: string, namespace: string, moved: string): string {
    const shard = `(pg_backend_pid() % ${COUNTER_SHARDS})::smallint`;
    return `, counter_net AS (
  SELECT stage, topic, partition_no, sum(n)::int AS n, coalesce(sum(n) FILTER (WHERE n > 0), 0)::int AS entered
  FROM (${moved}) m GROUP BY stage, topic, partition_no HAVING sum(n) <> 0 OR sum(n) FILTER (WHERE n > 0) > 0
), counted_stages AS (
  INSERT INTO ${schema}.later_stage_counts AS c (namespace, stage, shard, n, entered)
  SELECT ${namespace}, stage, ${shard}, sum(n)::bigint, sum(entered)::bigint FROM counter_net GROUP BY stage ORDER BY stage
  ON CONFLICT (namespace, stage, shard) DO UPDATE SET n = c.n + excluded.n, entered = c.entered + excluded.entered
), counted_partitions AS (
  INSERT INTO ${schema}.later_partition_counts AS c (namespace, topic, partition_no, shard, n)
  SELECT ${namespace}, topic, partition_no, ${shard}, sum(n)::bigint FROM counter_net WHERE topic IS NOT NULL AND stage NOT IN ${TERMINAL}
  GROUP BY topic, partition_no HAVING sum(n) <> 0 ORDER BY topic, partition_no
  ON CONFLICT (namespace, topic, partition_no, shard) DO UPDATE SET n = c.n + excluded.n
)`;
  }

  /**
   * SQL (bigint) of partition (`ns`, `topic`, `partition`, SQL expressions)'s unfinished jobs: the sum of its
   * counter rows (at most {@link COUNTER_SHARDS}). They change in the statements that change its jobs, so a
   * statement's snapshot sees both alike. It bounds the probes from a partition's start (its head, its next
   * run: `inPartition`), a range that would otherwise read on to the namespace's end when it finds fewer jobs
   * than it looks for (see postgres-partition-range.ts): none when it is 0, at most that many rows.
   *
   * Static so that the benchmark can replace it with the counters (bench/counters-off.js); nothing else does.
   */
  static unfinishedOf(schema: string, ns: string, topic: string, partition: string): string {
    return `(SELECT coalesce(sum(c.n), 0) FROM ${schema}.later_partition_counts c WHERE c.namespace = ${ns} AND c.topic = ${topic} AND c.partition_no = ${partition})`;
  }

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
    return partitionDepthFromRows(rows);
  }

  /** Unfinished jobs per topic of the namespace. */
  async topicDepth(): Promise<B.TopicDepthResult> {
    const rows = await this.execute(this.byTopic, [this.namespace]);
    return topicDepthFromRows(rows);
  }
}
