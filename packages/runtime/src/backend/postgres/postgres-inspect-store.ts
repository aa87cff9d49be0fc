/**
 * The inspection reads of the PostgreSQL backend (`backend.inspect`). One
 * job and a page of jobs are written once for both dialects
 * (`shared/inspect-statements.ts`); the counts are the sums of sharded
 * counter rows that only PostgreSQL keeps (`postgres-stage-counters.ts`).
 * Every read runs through the runner's autocommit `execute`, which turns a
 * lost connection into `DatabaseUnavailableError`.
 */
import type * as B from "../backend.js";
import { JOB_GET, JOB_LIST } from "../shared/inspect-statements.js";
import type { PostgresRunner } from "./postgres-runner.js";
import { PostgresStageCounters } from "./postgres-stage-counters.js";

export class PostgresInspectStore implements B.InspectStore {
  private readonly counters: PostgresStageCounters;

  constructor(private readonly host: PostgresRunner) {
    this.counters = new PostgresStageCounters(host.quoted, host.execute, host.namespace);
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

  partitionList(params: B.PartitionListParams): Promise<B.PartitionListResult> {
    return this.counters.partitionList(params);
  }
}
