/**
 * The inspection reads of the SQLite backend (`backend.inspect`). One job
 * and a page of jobs are written once for both dialects
 * (`shared/inspect-statements.ts`); the counts are hand-written reads of
 * SQLite's own counter tables (one row per counter, where PostgreSQL sums
 * shards; see `sqlite-stage-counters.ts`): primary-key reads, never of the
 * jobs.
 */
import { CLAIMABLE_STAGES, JOB_STAGES, TERMINAL_STAGES, type JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { GROUP_COUNT_CAP, GROUP_WALK, UNHANDLED_WINDOW } from "../inspect-store.js";
import { GROUP_LIST_LIMIT, groupListFromRows } from "../shared/group-list-rows.js";
import { limitListFromReads } from "../shared/limit-list-rows.js";
import { JOB_GET, JOB_LIST } from "../shared/inspect-statements.js";
import { ACTIVITY_ROWS, JOB_CHILDREN, QUEUE_LENGTH_ROWS, READY_WINDOW, unhandledFromReads, WORKER_ROWS } from "../shared/dashboard-statements.js";
import { type RunStatement, sqliteCompiler } from "../shared/shared-statement.js";
import type { SqliteHost } from "./sqlite-connection.js";
import { partitionDepthFromRows, partitionListFromRows, topicDepthFromRows } from "../shared/depth-rows.js";
import { stageList, stageOneOf } from "../shared/stage-list.js";

/**
 * The partitions of the namespace, of one topic when the topic (bound
 * twice) is not null: each row's depth is its counter row, and its head one
 * probe of `later_jobs_partition_head` (whose predicate the subquery
 * repeats). The `? IS NULL OR` keeps one statement; the primary key's namespace prefix
 * bounds the scan to the namespace's partitions either way.
 */
const PARTITION_LIST = `SELECT p.topic, p.partition_no, p.lease_owner, p.lease_expires_at, coalesce(c.n, 0) AS unfinished,
    (SELECT j.id FROM later_jobs j
      WHERE j.namespace = p.namespace AND j.topic = p.topic AND j.partition_no = p.partition_no AND j.stage NOT IN ${stageList(TERMINAL_STAGES)}
      ORDER BY j.seq LIMIT 1) AS head_id
  FROM later_partitions p
  LEFT JOIN later_partition_counts c ON c.namespace = p.namespace AND c.topic = p.topic AND c.partition_no = p.partition_no
  WHERE p.namespace = ? AND (? IS NULL OR p.topic = ?) ORDER BY p.topic, p.partition_no`;

/** See `SqliteInspectStore.oldestReadyAt`: namespace (three times), then now. */
const READY = `FROM later_jobs WHERE namespace = ? AND ${stageOneOf(CLAIMABLE_STAGES)} AND topic IS NULL`;
const OLDEST_READY = `WITH RECURSIVE prio(p) AS (
  SELECT (SELECT priority ${READY} ORDER BY priority LIMIT 1)
  UNION ALL
  SELECT (SELECT priority ${READY} AND priority > prio.p ORDER BY priority LIMIT 1) FROM prio WHERE prio.p IS NOT NULL
)
SELECT min((SELECT run_at ${READY} AND priority = prio.p AND run_at <= ? ORDER BY run_at LIMIT 1)) AS run_at FROM prio WHERE p IS NOT NULL`;

/** X9, see `SqliteInspectStore.limitList`: the namespace's limits rows. */
const LIMIT_ROWS =
  "SELECT job_type, concurrency, rate_max, rate_per_ms, rate_starts, group_concurrency FROM later_limits WHERE namespace = ? ORDER BY job_type";
/** X9: running regular jobs by type; `later_jobs_running`'s predicate word for word, so that index serves it. */
const RUNNING_BY_TYPE = "SELECT job_type, count(*) AS n FROM later_jobs WHERE namespace = ? AND stage = 'running' AND topic IS NULL GROUP BY job_type";

/** `later_jobs_ready_group`'s predicate word for word (as the group claim's walk); binds namespace, type. */
const GROUPED = `namespace = ? AND job_type = ? AND ${stageOneOf(CLAIMABLE_STAGES)} AND topic IS NULL AND group_key IS NOT NULL`;
/**
 * X9, see `SqliteInspectStore.groupList`: the walk of the type's ready groups (at most the walk's rows), its
 * running jobs by group (`later_jobs_running`), and each group's due rows counted up to a cap. Binds ns, type,
 * ns, type, walk, ns, type, then ns, type, now, cap.
 */
const GROUP_ROWS = `WITH RECURSIVE g(k) AS (
  SELECT (SELECT group_key FROM later_jobs WHERE ${GROUPED} AND group_key > '' ORDER BY group_key LIMIT 1)
  UNION ALL
  SELECT (SELECT group_key FROM later_jobs WHERE ${GROUPED} AND group_key > g.k ORDER BY group_key LIMIT 1) FROM g WHERE g.k IS NOT NULL
  LIMIT ? + 0
), running(k, n) AS (
  SELECT group_key, count(*) FROM later_jobs
  WHERE namespace = ? AND stage = 'running' AND topic IS NULL AND job_type = ? AND group_key > '' GROUP BY group_key
), keyed(k, walked) AS (
  SELECT k, max(w) FROM (SELECT k, 1 AS w FROM g WHERE k IS NOT NULL UNION ALL SELECT k, 0 FROM running) GROUP BY k
)
SELECT keyed.k, coalesce(r.n, 0) AS running, keyed.walked,
  (SELECT count(*) FROM (SELECT 1 FROM later_jobs WHERE ${GROUPED} AND group_key = keyed.k AND run_at <= ? LIMIT ? + 0)) AS waiting
FROM keyed LEFT JOIN running r ON r.k = keyed.k`;

export class SqliteInspectStore implements B.InspectStore {
  constructor(private readonly host: SqliteHost) {}

  async jobGet(params: B.JobGetParams): Promise<B.JobRecord | null> {
    return JOB_GET.run(sqliteCompiler, this.read, { ...params, namespace: this.host.namespace });
  }

  async jobList(params: B.JobListParams): Promise<B.JobRecord[]> {
    return JOB_LIST.run(sqliteCompiler, this.read, { ...params, namespace: this.host.namespace });
  }

  async stageCounts(): Promise<B.JobCountByStageResult> {
    const counts = Object.fromEntries(JOB_STAGES.map((s) => [s, 0])) as Record<JobStage, number>;
    for (const r of this.host.conn().all("SELECT stage, n FROM later_stage_counts WHERE namespace = ?", this.host.namespace)) {
      if (String(r.stage) in counts) counts[r.stage as JobStage] = Number(r.n);
    }
    return { counts };
  }

  /** A sum over the counter rows, never the jobs. */
  async namespaceCounts(): Promise<B.NamespaceCount[]> {
    const rows = this.host.conn().all("SELECT namespace, sum(n) AS n FROM later_stage_counts GROUP BY namespace HAVING sum(n) > 0 ORDER BY namespace");
    return rows.map((r) => ({ namespace: String(r.namespace), jobs: Number(r.n) }));
  }

  async partitionDepth(): Promise<B.PartitionDepthResult> {
    const rows = this.host.conn().all(
      `SELECT p.topic, p.partition_no, p.lease_owner, coalesce(c.n, 0) AS unfinished FROM later_partitions p
         LEFT JOIN later_partition_counts c ON c.namespace = p.namespace AND c.topic = p.topic AND c.partition_no = p.partition_no
       WHERE p.namespace = ? ORDER BY p.topic, p.partition_no`,
      this.host.namespace,
    );
    return partitionDepthFromRows(rows);
  }

  async topicDepth(): Promise<B.TopicDepthResult> {
    const rows = this.host.conn().all(
      `SELECT t.topic, t.partitions,
         (SELECT coalesce(sum(c.n), 0) FROM later_partition_counts c WHERE c.namespace = t.namespace AND c.topic = t.topic) AS unfinished
       FROM later_topics t WHERE t.namespace = ? ORDER BY t.topic`,
      this.host.namespace,
    );
    return topicDepthFromRows(rows);
  }

  async partitionList(params: B.PartitionListParams): Promise<B.PartitionListResult> {
    return partitionListFromRows(this.host.conn().all(PARTITION_LIST, this.host.namespace, params.topic ?? null, params.topic ?? null));
  }

  async activityList(params: B.ActivityListParams): Promise<B.ActivityListResult> {
    return ACTIVITY_ROWS.run(sqliteCompiler, this.read, { ...params, namespace: this.host.namespace });
  }

  async queueLengthList(params: B.QueueLengthListParams): Promise<B.QueueLengthListResult> {
    return QUEUE_LENGTH_ROWS.run(sqliteCompiler, this.read, { ...params, namespace: this.host.namespace });
  }

  async workerList(params: B.WorkerListParams): Promise<B.WorkerListResult> {
    return WORKER_ROWS.run(sqliteCompiler, this.read, { ...params, namespace: this.host.namespace });
  }

  /** The main file's pages (`page_count * page_size`); the WAL file is not counted. */
  async databaseBytes(): Promise<number | null> {
    const row = this.host.conn().get("SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()");
    return row ? Number(row.bytes) : null;
  }

  async jobChildren(params: B.JobChildrenParams): Promise<B.JobChildEntry[]> {
    return JOB_CHILDREN.run(sqliteCompiler, this.read, { ...params, namespace: this.host.namespace });
  }

  /**
   * The oldest due ready regular job's run_at: the first due entry of each
   * priority of the ready index (namespace, priority, run_at), the
   * priorities walked one index probe each (X1), so a few probes however
   * long the backlog.
   */
  async oldestReadyAt(params: B.OldestReadyAtParams): Promise<number | null> {
    const ns = this.host.namespace;
    const [row] = await this.read({ text: OLDEST_READY, values: [ns, ns, ns, params.nowMs] });
    return row?.run_at === null || row?.run_at === undefined ? null : Number(row.run_at);
  }

  /** The live servers' rows, then the ready window (see {@link B.InspectStore.unhandledJobTypes}). */
  async unhandledJobTypes(params: B.UnhandledJobTypesParams): Promise<B.UnhandledJobTypesResult> {
    const namespace = this.host.namespace;
    const window = params.window ?? UNHANDLED_WINDOW;
    const workers = await WORKER_ROWS.run(sqliteCompiler, this.read, { nowMs: params.nowMs, namespace });
    const ready = await READY_WINDOW.run(sqliteCompiler, this.read, { nowMs: params.nowMs, window, namespace });
    return unhandledFromReads(workers, ready, window);
  }

  /** The limits rows; with any, the running jobs by type and the ready window (see {@link B.InspectStore.limitList}). */
  async limitList(params: B.LimitListParams): Promise<B.LimitListResult> {
    const namespace = this.host.namespace;
    const rows = this.host.conn().all(LIMIT_ROWS, namespace);
    if (rows.length === 0) return { limits: [], complete: true };
    const window = params.window ?? UNHANDLED_WINDOW;
    const running = this.host.conn().all(RUNNING_BY_TYPE, namespace);
    const ready = await READY_WINDOW.run(sqliteCompiler, this.read, { nowMs: params.nowMs, window, namespace });
    return limitListFromReads(rows, running, ready, window, params.nowMs);
  }

  /** One statement: the walk of the type's ready groups, each one's due rows counted, and its running jobs by group (see {@link B.InspectStore.groupList}). */
  async groupList(params: B.GroupListParams): Promise<B.GroupListResult> {
    const ns = this.host.namespace;
    const t = params.jobType;
    const rows = this.host.conn().all(GROUP_ROWS, ns, t, ns, t, GROUP_WALK, ns, t, ns, t, params.nowMs, GROUP_COUNT_CAP);
    return groupListFromRows(rows, params.limit ?? GROUP_LIST_LIMIT);
  }

  private readonly read: RunStatement = (s) => this.host.conn().read(s);
}
