/**
 * New job rows on PostgreSQL (`backend.jobs.insertMany`, and the insert body
 * the partition and recurring stores run in their transactions): partition
 * sequences reserved in (topic, partition) order, the parents of
 * continuations locked and marked in id order, then one `INSERT … SELECT
 * FROM json_to_recordset($1)` for every row, which counts the rows' first
 * stages and wakes the workers (`pg_notify`).
 */
import type { JobStage } from "../../core/job-stage.js";
import { DatabaseUnavailableError, UnknownTopicError } from "../../errors.js";
import type * as B from "../backend.js";
import { batchParentIds, fanInStage, insertStage, refuseParentsInBatch } from "../shared/insert-stage.js";
import { jobInsertRow } from "../shared/job-insert-row.js";
import type { Row } from "../shared/job-rows.js";
import { callerExecutor } from "./postgres-executors.js";
import type { Execute } from "./postgres-statement.js";
import type { PostgresJobQueries } from "./postgres-job-queries.js";
import type { PostgresRunner } from "./postgres-runner.js";
import { foreignNotifyPayload } from "./postgres-wakeups.js";

export class PostgresRowInsert {
  constructor(
    private readonly host: PostgresRunner,
    private readonly q: PostgresJobQueries,
  ) {}

  private get ns(): string {
    return this.host.namespace;
  }

  /**
   * In autocommit when no job has a parent or a partition; otherwise in a
   * transaction (run again after a deadlock: it holds partition and parent
   * rows while its insert also updates the stage counters); or on the
   * caller's transaction (`enqueueIn`, never run again: its commit is the
   * caller's).
   *
   * Run again after a lost connection, never stored twice. A connection
   * lost between the commit and its reply leaves the jobs stored while the
   * call sees an error; the insert is then run again on another connection
   * (the runner's autocommit retry; here, up to three tries of the
   * transaction), and since the job ids are made before the first try:
   * - autocommit: the insert skips ids already stored (`ON CONFLICT (id) DO
   *   NOTHING`, see `PostgresJobQueries.insert`), so nothing is counted or
   *   notified twice;
   * - transaction: a try after a lost connection first locks the
   *   partitions and parents a first try would still hold (it waits for a
   *   first try still committing), then reads the ids: found, it returns
   *   the stages they were stored in, and takes no partition sequence and
   *   marks no parent again; not found, it inserts as the first try did.
   */
  async insertMany(params: B.JobInsertManyParams<B.PostgresTransaction>): Promise<B.JobInsertManyResult> {
    if (params.jobs.length === 0) return { stages: [] };
    if (params.transaction !== undefined) return this.insertOn(callerExecutor(params.transaction), params, true);
    if (!params.jobs.some((j) => j.parentId || j.parentIds || j.topic !== undefined)) return this.insertOn(this.host.execute, params);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.host.inTransaction(
          "enqueue",
          async (execute) => (attempt > 1 && (await this.storedBefore(execute, params))) || this.insertOn(execute, params),
        );
      } catch (error) {
        if (attempt >= 3 || !(error instanceof DatabaseUnavailableError) || !error.transient) throw error;
      }
    }
  }

  /**
   * The result of a first try that committed (see {@link insertMany}), or
   * null when none did. Locks in the insert's order (partitions, then
   * parents) before reading, so a first try still committing is waited for.
   */
  private async storedBefore(execute: Execute, params: B.JobInsertManyParams<unknown>): Promise<B.JobInsertManyResult | null> {
    for (const g of partitionGroups(params.jobs)) await execute(this.q.lockPartition, [this.ns, g.topic, g.partition]);
    const parentIds = batchParentIds(params.jobs);
    if (parentIds.length > 0) await execute(this.q.lockJobs, [parentIds, this.ns]);
    const rows = await execute(this.q.storedInserts, [params.jobs.map((j) => j.id), this.ns]);
    if (rows.length === 0) return null;
    const stages = new Map(rows.map((r) => [String(r.id), r.stage as JobStage]));
    // One statement stored every row of the batch, or none.
    return { stages: params.jobs.map((j) => stages.get(j.id)!) };
  }

  /**
   * Inserts a batch on one executor: partition sequences first, then the
   * parents of continuations (locked and marked), then one
   * `INSERT … SELECT FROM json_to_recordset($1)` for every row. `foreign`:
   * the executor is the caller's transaction, whose commit must wake this
   * process's workers too.
   */
  async insertOn(execute: Execute, params: B.JobInsertManyParams<unknown>, foreign = false): Promise<B.JobInsertManyResult> {
    refuseParentsInBatch(params.jobs); // before any statement, on the caller's transaction too
    // Partition rows first, then parents: the lock order of a head's finish (partition, then its job rows).
    const seqs = await this.reserveSequences(execute, params.jobs);
    // Every parent of the batch, fan-in ones too (X5), locked and marked in id order in one statement.
    const parentIds = batchParentIds(params.jobs);
    const parents = new Map<string, Row>();
    if (parentIds.length > 0) {
      for (const row of await execute(this.q.readParents, [parentIds, this.ns])) parents.set(String(row.id), row);
    }
    const stages: JobStage[] = [];
    const edges: { child_id: string; parent_id: string; succeeded: boolean }[] = [];
    const rows = params.jobs.map((job, i) => {
      const { stage, error, expiresAt, parentsLeft } = job.parentIds
        ? fanInStage(job, params.now, parents, params.retentionMs)
        : insertStage(job, params.now, job.parentId ? parents.get(job.parentId) : undefined, params.retentionMs);
      stages.push(stage);
      if (job.parentIds)
        for (const parent of job.parentIds) edges.push({ child_id: job.id, parent_id: parent, succeeded: parents.get(parent)?.stage === "success" });
      const own = jobInsertRow(job, stage);
      return {
        id: own.id,
        job_type: own.job_type,
        payload: own.payload,
        stage: own.stage,
        retry_policy: own.retry_policy,
        timeout_ms: own.timeout_ms,
        run_at: own.run_at,
        parent_id: job.parentId ?? null,
        last_error: error,
        // Left out of the JSON (undefined) on the common unfinished row; json_to_recordset reads a missing key as NULL.
        expires_at: expiresAt ?? undefined,
        topic: job.topic ?? null,
        partition_no: job.partition ?? null,
        seq: seqs[i] ?? null,
        // Left out when none (X10): NULL, and a plain enqueue's JSON is no longer.
        meta: job.meta ?? undefined,
        // Left out (undefined) at the default 0; the insert reads a missing key as 0.
        priority: job.priority || undefined,
        // A fan-in child only (X5); left out (NULL) on every other row.
        parents_left: parentsLeft,
        // X9: left out (NULL) when the job has no group.
        group_key: job.group ?? undefined,
      };
    });
    const [channel, payload] = this.host.notifyArgs;
    await execute(this.q.insert, [JSON.stringify(rows), this.ns, params.now, channel, foreign ? foreignNotifyPayload(this.ns) : payload]);
    if (edges.length > 0) await execute(this.q.insertParents, [JSON.stringify(edges), this.ns]);
    return { stages };
  }

  /**
   * Sequence numbers of the partitioned jobs (by index; none for the rest),
   * reserved one partition at a time in (topic, partition) order, so two
   * writers never lock partition rows in opposite orders.
   */
  private async reserveSequences(execute: Execute, jobs: readonly B.JobInsert[]): Promise<(number | undefined)[]> {
    const seqs: (number | undefined)[] = [];
    for (const g of partitionGroups(jobs)) {
      const [row] = await execute(this.q.reserveSeq, [this.ns, g.topic, g.partition, g.indexes.length]);
      if (!row) throw new UnknownTopicError(g.topic, g.partition);
      g.indexes.forEach((index, k) => {
        seqs[index] = Number(row.first) + k;
      });
    }
    return seqs;
  }
}

/** The partitioned jobs of a batch (their indexes), by partition, in (topic, partition) order: the order every writer locks partition rows in. */
function partitionGroups(jobs: readonly B.JobInsert[]): { topic: string; partition: number; indexes: number[] }[] {
  const groups = new Map<string, { topic: string; partition: number; indexes: number[] }>();
  jobs.forEach((job, i) => {
    if (job.topic === undefined) return;
    const key = `${job.topic}\0${String(job.partition).padStart(10, "0")}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { topic: job.topic, partition: job.partition ?? -1, indexes: [] }));
    g.indexes.push(i);
  });
  return [...groups.keys()].sort().map((key) => groups.get(key)!);
}
