/**
 * The inspection reads of the PostgreSQL backend (`backend.inspect`). One
 * job and a page of jobs are written once for both dialects
 * (`shared/inspect-statements.ts`); the counts are the sums of sharded
 * counter rows that only PostgreSQL keeps (`postgres-stage-counters.ts`).
 * Every read runs through the runner's autocommit `execute`, which turns a
 * lost connection into `DatabaseUnavailableError`.
 */
import type * as B from "../backend.js";
import { GROUP_COUNT_CAP, GROUP_WALK, UNHANDLED_WINDOW } from "../inspect-store.js";
import { GROUP_LIST_LIMIT, groupListFromRows } from "../shared/group-list-rows.js";
import { limitListFromReads } from "../shared/limit-list-rows.js";
import { JOB_GET, JOB_LIST } from "../shared/inspect-statements.js";
import { ACTIVITY_ROWS, JOB_CHILDREN, QUEUE_LENGTH_ROWS, READY_WINDOW, unhandledFromReads, WORKER_ROWS } from "../shared/dashboard-statements.js";
import type { PostgresRunner } from "./postgres-runner.js";
import { PostgresStageCounters } from "./postgres-stage-counters.js";
import { inPartition, partitionOrder } from "./postgres-partition-range.js";
import { statement, type Statement } from "./postgres-statement.js";
import { GROUPED_READY } from "./postgres-group-claim.js";
import { partitionListFromRows } from "../shared/depth-rows.js";
import { stageList } from "../shared/stage-list.js";
import { CLAIMABLE_STAGES, TERMINAL_STAGES } from "../../core/job-stage.js";

export class PostgresInspectStore implements B.InspectStore {
  private readonly counters: PostgresStageCounters;
  private readonly partitionRows: Statement;
  /** See {@link oldestReadyAt}: `$1` namespace, `$2` now. */
  private readonly oldestReady: Statement;
  private readonly databaseSize = statement("SELECT pg_database_size(current_database())::bigint AS bytes");
  /** X9, see {@link limitList}: the namespace's limits rows (`$1`), unlocked. */
  private readonly limitRows: Statement;
  /** X9: running regular jobs by type of namespace `$1`; `later_jobs_running`'s predicate word for word, so that index serves it. */
  private readonly runningByType: Statement;
  /** X9, see {@link groupList}: `$1` namespace, `$2` type, `$3` now, `$4` groups walked, `$5` rows counted per group. */
  private readonly groupRows: Statement;

  constructor(private readonly host: PostgresRunner) {
    this.counters = new PostgresStageCounters(host.quoted, host.execute, host.namespace);
    const schema = host.quoted;
    // Depth: the sum of the partition's counter shards. Head: one probe of
    // later_jobs_partition_head (the subquery repeats its predicate), whatever the
    // statistics (inPartition).
    const ready = `FROM ${schema}.later_jobs WHERE namespace = $1 AND stage IN ${stageList(CLAIMABLE_STAGES)} AND topic IS NULL`;
    this.oldestReady = statement(`WITH RECURSIVE prio(p) AS (
  SELECT (SELECT priority ${ready} ORDER BY priority LIMIT 1)
  UNION ALL
  SELECT (SELECT priority ${ready} AND priority > prio.p ORDER BY priority LIMIT 1) FROM prio WHERE prio.p IS NOT NULL
)
SELECT min((SELECT run_at ${ready} AND priority = prio.p AND run_at <= $2 ORDER BY run_at LIMIT 1)) AS run_at FROM prio WHERE p IS NOT NULL`);
    this.limitRows = statement(
      `SELECT job_type, concurrency, rate_max, rate_per_ms, rate_starts, group_concurrency FROM ${schema}.later_limits WHERE namespace = $1 ORDER BY job_type`,
    );
    this.runningByType = statement(
      `SELECT job_type, count(*)::int AS n FROM ${schema}.later_jobs WHERE namespace = $1 AND stage = 'running' AND topic IS NULL GROUP BY job_type`,
    );
    // The group index's predicate in its words (GROUPED_READY, as the group claim's walk): only that index serves it.
    const grouped = `namespace = $1 AND job_type = $2 AND ${GROUPED_READY}`;
    this.groupRows = statement(`WITH RECURSIVE g AS (
  (SELECT group_key AS k FROM ${schema}.later_jobs WHERE ${grouped} AND group_key > '' ORDER BY group_key LIMIT 1)
  UNION ALL
  SELECT (SELECT group_key FROM ${schema}.later_jobs WHERE ${grouped} AND group_key > g.k ORDER BY group_key LIMIT 1) FROM g WHERE g.k IS NOT NULL
), walked AS (
  SELECT k FROM g WHERE k IS NOT NULL LIMIT $4
), running AS (
  SELECT group_key AS k, count(*)::int AS n FROM ${schema}.later_jobs
  WHERE namespace = $1 AND stage = 'running' AND topic IS NULL AND job_type = $2 AND group_key > '' GROUP BY group_key
), keyed AS (
  SELECT k, max(w) AS walked FROM (SELECT k, 1 AS w FROM walked UNION ALL SELECT k, 0 FROM running) u GROUP BY k
)
SELECT keyed.k, coalesce(r.n, 0) AS running, keyed.walked,
  (SELECT count(*)::int FROM (SELECT 1 FROM ${schema}.later_jobs WHERE ${grouped} AND group_key = keyed.k AND run_at <= $3 LIMIT $5) c) AS waiting
FROM keyed LEFT JOIN running r ON r.k = keyed.k`);
    this.partitionRows = statement(`SELECT p.topic, p.partition_no, p.lease_owner, p.lease_expires_at,
  (SELECT coalesce(sum(c.n), 0) FROM ${schema}.later_partition_counts c
    WHERE c.namespace = p.namespace AND c.topic = p.topic AND c.partition_no = p.partition_no)::bigint AS unfinished,
  (SELECT j.id FROM ${schema}.later_jobs j
    WHERE ${inPartition("j", "p.namespace", "p.topic", "p.partition_no")} AND j.stage NOT IN ${stageList(TERMINAL_STAGES)}
      AND ${PostgresStageCounters.unfinishedOf(schema, "p.namespace", "p.topic", "p.partition_no")} > 0
    ORDER BY ${partitionOrder("j")} LIMIT 1) AS head_id
FROM ${schema}.later_partitions p WHERE p.namespace = $1 AND ($2::text IS NULL OR p.topic = $2) ORDER BY p.topic, p.partition_no`);
  }

  async jobGet(params: B.JobGetParams): Promise<B.JobRecord | null> {
    return JOB_GET.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  async jobList(params: B.JobListParams): Promise<B.JobRecord[]> {
    return JOB_LIST.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  stageCounts(): Promise<B.JobCountByStageResult> {
    return this.counters.stageCounts();
  }

  namespaceCounts(): Promise<B.NamespaceCount[]> {
    return this.counters.namespaceCounts();
  }

  partitionDepth(): Promise<B.PartitionDepthResult> {
    return this.counters.partitionDepth();
  }

  topicDepth(): Promise<B.TopicDepthResult> {
    return this.counters.topicDepth();
  }

  async partitionList(params: B.PartitionListParams): Promise<B.PartitionListResult> {
    return partitionListFromRows(await this.host.execute(this.partitionRows, [this.host.namespace, params.topic ?? null]));
  }

  async activityList(params: B.ActivityListParams): Promise<B.ActivityListResult> {
    return ACTIVITY_ROWS.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  async queueLengthList(params: B.QueueLengthListParams): Promise<B.QueueLengthListResult> {
    return QUEUE_LENGTH_ROWS.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  async workerList(params: B.WorkerListParams): Promise<B.WorkerListResult> {
    return WORKER_ROWS.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  /** The whole database's size (every schema), as `pg_database_size` reports it. */
  async databaseBytes(): Promise<number | null> {
    const [row] = await this.host.execute(this.databaseSize, []);
    return row ? Number(row.bytes) : null;
  }

  async jobChildren(params: B.JobChildrenParams): Promise<B.JobChildEntry[]> {
    return JOB_CHILDREN.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  /**
   * The oldest due ready regular job's run_at. The ready index is
   * (namespace, priority, run_at) (X1): the first due entry of each priority,
   * its priorities walked one index probe each (a loose index scan), so the
   * read stays a few probes however long the backlog, as the claim's.
   */
  async oldestReadyAt(params: B.OldestReadyAtParams): Promise<number | null> {
    const [row] = await this.host.execute(this.oldestReady, [this.host.namespace, params.nowMs]);
    return row?.run_at === null || row?.run_at === undefined ? null : Number(row.run_at);
  }

  /** The live servers' rows, then the ready window (see {@link B.InspectStore.unhandledJobTypes}). */
  async unhandledJobTypes(params: B.UnhandledJobTypesParams): Promise<B.UnhandledJobTypesResult> {
    const namespace = this.host.namespace;
    const window = params.window ?? UNHANDLED_WINDOW;
    const workers = await WORKER_ROWS.run(this.host.compiler, this.host.shared, { nowMs: params.nowMs, namespace });
    const ready = await READY_WINDOW.run(this.host.compiler, this.host.shared, { nowMs: params.nowMs, window, namespace });
    return unhandledFromReads(workers, ready, window);
  }

  /** The limits rows; with any, the running jobs by type and the ready window (see {@link B.InspectStore.limitList}). */
  async limitList(params: B.LimitListParams): Promise<B.LimitListResult> {
    const namespace = this.host.namespace;
    const rows = await this.host.execute(this.limitRows, [namespace]);
    if (rows.length === 0) return { limits: [], complete: true };
    const window = params.window ?? UNHANDLED_WINDOW;
    const running = await this.host.execute(this.runningByType, [namespace]);
    const ready = await READY_WINDOW.run(this.host.compiler, this.host.shared, { nowMs: params.nowMs, window, namespace });
    return limitListFromReads(rows, running, ready, window, params.nowMs);
  }

  /** One statement: the walk of the type's ready groups, each one's due rows counted, and its running jobs by group (see {@link B.InspectStore.groupList}). */
  async groupList(params: B.GroupListParams): Promise<B.GroupListResult> {
    const rows = await this.host.execute(this.groupRows, [this.host.namespace, params.jobType, params.nowMs, GROUP_WALK, GROUP_COUNT_CAP]);
    return groupListFromRows(rows, params.limit ?? GROUP_LIST_LIMIT);
  }
}
