/**
 * The inspection reads of the PostgreSQL backend (`backend.inspect`). One
 * job and a page of jobs are written once for both dialects
 * (`shared/inspect-statements.ts`); the counts are the sums of sharded
 * counter rows that only PostgreSQL keeps (`postgres-stage-counters.ts`).
 * Every read runs through the runner's autocommit `execute`, which turns a
 * lost connection into `DatabaseUnavailableError`.
 */
import type * as B from "../backend.js";
import { UNHANDLED_WINDOW } from "../inspect-store.js";
import { JOB_GET, JOB_LIST } from "../shared/inspect-statements.js";
import {
  ACTIVITY_ROWS,
  JOB_CHILDREN,
  OLDEST_READY_AT,
  QUEUE_LENGTH_ROWS,
  READY_WINDOW,
  unhandledFromReads,
  WORKER_ROWS,
} from "../shared/dashboard-statements.js";
import type { PostgresRunner } from "./postgres-runner.js";
import { PostgresStageCounters } from "./postgres-stage-counters.js";
import { inPartition, partitionOrder } from "./postgres-job-queries.js";
import { statement, type Statement } from "./postgres-statement.js";
import { partitionListFromRows } from "../shared/depth-rows.js";
import { stageList } from "../shared/stage-list.js";
import { TERMINAL_STAGES } from "../../core/job-stage.js";

export class PostgresInspectStore implements B.InspectStore {
  private readonly counters: PostgresStageCounters;
  private readonly partitionRows: Statement;
  private readonly databaseSize = statement("SELECT pg_database_size(current_database())::bigint AS bytes");

  constructor(private readonly host: PostgresRunner) {
    this.counters = new PostgresStageCounters(host.quoted, host.execute, host.namespace);
    const schema = host.quoted;
    // Depth: the sum of the partition's counter shards. Head: one probe of
    // later_jobs_partition_head (the subquery repeats its predicate), whatever the
    // statistics (inPartition).
    this.partitionRows = statement(`SELECT p.topic, p.partition_no, p.lease_owner, p.lease_expires_at,
  (SELECT coalesce(sum(c.n), 0) FROM ${schema}.later_partition_counts c
    WHERE c.namespace = p.namespace AND c.topic = p.topic AND c.partition_no = p.partition_no)::bigint AS unfinished,
  (SELECT j.id FROM ${schema}.later_jobs j
    WHERE ${inPartition("j", "p.namespace", "p.topic", "p.partition_no")} AND j.stage NOT IN ${stageList(TERMINAL_STAGES)}
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

  async oldestReadyAt(params: B.OldestReadyAtParams): Promise<number | null> {
    return OLDEST_READY_AT.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  /** The live servers' rows, then the ready window (see {@link B.InspectStore.unhandledJobTypes}). */
  async unhandledJobTypes(params: B.UnhandledJobTypesParams): Promise<B.UnhandledJobTypesResult> {
    const namespace = this.host.namespace;
    const window = params.window ?? UNHANDLED_WINDOW;
    const workers = await WORKER_ROWS.run(this.host.compiler, this.host.shared, { nowMs: params.nowMs, namespace });
    const ready = await READY_WINDOW.run(this.host.compiler, this.host.shared, { nowMs: params.nowMs, window, namespace });
    return unhandledFromReads(workers, ready, window);
  }
}
