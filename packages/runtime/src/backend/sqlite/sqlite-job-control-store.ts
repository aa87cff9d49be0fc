/**
 * Retry, delete and cancel from outside on SQLite (`backend.control`; see
 * `job-control-store.ts`). Each call is one `BEGIN IMMEDIATE` transaction:
 * a select of at most `limit` rows, then one set-based write over them
 * (`id IN json_each(?)`), the counters written from the rows read, in the
 * same transaction. A filter walks terminal rows through the expiry index
 * (`expires_at IS NOT NULL` holds exactly for terminal jobs).
 */
import { CANCELLABLE_STAGES, RETRYABLE_STAGES, TERMINAL_STAGES, type JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import { retryableRow } from "../shared/retryable-row.js";
import { stageList } from "../shared/stage-list.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { StageDeltas, type SqliteStageCounters } from "./sqlite-stage-counters.js";

/** What the store needs of the job store ({@link SqliteJobStore}): connection, namespace, counters. */
export interface SqliteJobControlHost {
  readonly namespace: string;
  conn(): SqliteConnection;
  readonly counters: SqliteStageCounters;
}

export class SqliteJobControlStore implements B.JobControlStore {
  constructor(private readonly host: SqliteJobControlHost) {}

  async retryMany(params: B.JobRetryManyParams): Promise<B.JobControlResult> {
    const c = this.host.conn();
    return c.immediate(() => {
      const rows = this.select(c, RETRYABLE_STAGES, params.target, params.limit);
      if (rows.length === 0) return { ids: [] };
      const ids = rows.map((r) => String(r.id));
      c.run(
        `UPDATE later_jobs SET stage = 'enqueued', run_at = ?, updated_at = ?, expires_at = NULL, lease_owner = NULL, lease_expires_at = NULL,
           stages = json_insert(stages, '$[#]', json_array('enqueued', CAST(? AS INTEGER)))
         WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))`,
        params.now,
        params.now,
        params.now,
        this.host.namespace,
        JSON.stringify(ids),
      );
      // Partitioned rows go to the end of their partition, in their old relative order.
      const partitioned = rows.filter((r) => r.topic !== null).sort((a, b) => Number(a.seq) - Number(b.seq));
      for (const r of partitioned) {
        const next = c.get(
          "UPDATE later_partitions SET next_seq = next_seq + 1 WHERE namespace = ? AND topic = ? AND partition_no = ? RETURNING next_seq - 1 AS seq",
          this.host.namespace,
          r.topic,
          r.partition_no,
        );
        c.run("UPDATE later_jobs SET seq = ? WHERE id = ? AND namespace = ?", next?.seq ?? null, r.id, this.host.namespace);
      }
      const deltas = new StageDeltas();
      for (const r of rows) deltas.move(r.stage, "enqueued", r.topic, r.partition_no);
      this.host.counters.write(deltas);
      return { ids };
    });
  }

  async deleteMany(params: B.JobDeleteManyParams): Promise<B.JobControlResult> {
    const c = this.host.conn();
    return c.immediate(() => {
      const rows = this.select(c, TERMINAL_STAGES, params.target, params.limit);
      if (rows.length === 0) return { ids: [] };
      const ids = rows.map((r) => String(r.id));
      c.run("DELETE FROM later_jobs WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))", this.host.namespace, JSON.stringify(ids));
      const deltas = new StageDeltas();
      for (const r of rows) deltas.move(r.stage, null, r.topic, r.partition_no);
      this.host.counters.write(deltas);
      return { ids };
    });
  }

  /**
   * X3: the picked rows, then their waiting continuations level by level (one
   * `UPDATE … WHERE parent_id IN json_each(?)` per level), end `cancelled`; a
   * running partition head frees its partition (epoch moved on).
   */
  async cancelMany(params: B.JobCancelManyParams): Promise<B.JobControlResult> {
    const c = this.host.conn();
    return c.immediate(() => {
      const rows = this.select(c, CANCELLABLE_STAGES, params.target, params.limit);
      if (rows.length === 0) return { ids: [] };
      const ids = rows.map((r) => String(r.id));
      const deltas = new StageDeltas();
      const entry = params.reason === null ? "json_array('cancelled', CAST(? AS INTEGER))" : "json_array('cancelled', CAST(? AS INTEGER), ?)";
      const set = `stage = 'cancelled', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, expires_at = ?, stages = json_insert(stages, '$[#]', ${entry})`;
      const head = [params.now, params.expiresAt, params.now, ...(params.reason === null ? [] : [params.reason])];
      c.run(`UPDATE later_jobs SET ${set} WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))`, ...head, this.host.namespace, JSON.stringify(ids));
      for (const r of rows) deltas.move(r.stage, "cancelled", r.topic, r.partition_no);
      for (const r of rows.filter((r) => r.stage === "running" && r.topic !== null)) {
        c.run(
          "UPDATE later_partitions SET lease_owner = NULL, lease_expires_at = NULL, epoch = epoch + 1 WHERE namespace = ? AND topic = ? AND partition_no = ?",
          this.host.namespace,
          r.topic,
          r.partition_no,
        );
      }
      for (let parents = ids; parents.length > 0; ) {
        const children = c.all(
          `UPDATE later_jobs SET ${set} WHERE namespace = ? AND stage = 'waiting' AND parent_id IN (SELECT value FROM json_each(?)) RETURNING id, topic, partition_no`,
          ...head,
          this.host.namespace,
          JSON.stringify(parents),
        );
        for (const k of children) deltas.move("waiting", "cancelled", k.topic, k.partition_no);
        parents = children.map((k) => String(k.id));
      }
      this.host.counters.write(deltas);
      return { ids };
    });
  }

  async countMatching(params: B.JobCountMatchingParams): Promise<number> {
    if (params.action === "cancel") {
      const { stage = null, jobType = null } = params.filter;
      const row = this.host
        .conn()
        .get(
          `SELECT count(*) AS n FROM later_jobs WHERE namespace = ? AND stage IN ${stageList(CANCELLABLE_STAGES)} AND (? IS NULL OR stage = ?) AND (? IS NULL OR job_type = ?)`,
          this.host.namespace,
          stage,
          stage,
          jobType,
          jobType,
        );
      return Number(row?.n ?? 0);
    }
    const stages = params.action === "retry" ? RETRYABLE_STAGES : TERMINAL_STAGES;
    const rows = this.select(this.host.conn(), stages, { filter: { ...params.filter, afterId: undefined } }, -1, "count(*) AS n");
    return Number(rows[0]?.n ?? 0);
  }

  /** Up to `limit` rows (-1: every row) of the target in `stages`, in id order, inside the caller's transaction. */
  private select(
    c: SqliteConnection,
    stages: readonly JobStage[],
    target: B.JobControlTarget,
    limit: number,
    columns = "id, stage, topic, partition_no, seq",
  ): Row[] {
    const cols = `SELECT ${columns} FROM later_jobs`;
    const only = stages === RETRYABLE_STAGES ? ` AND ${retryableRow()}` : "";
    if ("ids" in target) {
      return c.all(
        `${cols} WHERE namespace = ? AND stage IN ${stageList(stages)}${only} AND id IN (SELECT value FROM json_each(?)) ORDER BY id LIMIT ?`,
        this.host.namespace,
        JSON.stringify(target.ids),
        limit,
      );
    }
    const { stage = null, jobType = null, afterId = null } = target.filter;
    const terminal = stages === CANCELLABLE_STAGES ? "1 = 1" : "expires_at IS NOT NULL";
    return c.all(
      `${cols} WHERE namespace = ? AND ${terminal} AND stage IN ${stageList(stages)}${only}
         AND (? IS NULL OR stage = ?) AND (? IS NULL OR job_type = ?) AND (? IS NULL OR id > ?)${limit < 0 ? "" : " ORDER BY id LIMIT ?"}`,
      this.host.namespace,
      stage,
      stage,
      jobType,
      jobType,
      afterId,
      afterId,
      ...(limit < 0 ? [] : [limit]),
    );
  }
}
