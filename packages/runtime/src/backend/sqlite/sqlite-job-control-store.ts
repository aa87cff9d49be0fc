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
import { PauseStatements } from "../shared/pause-statements.js";
import { sqliteCompiler } from "../shared/shared-statement.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { StageDeltas, type SqliteStageCounters } from "./sqlite-stage-counters.js";
import { type SqliteTransition, SQLITE_TRANSITIONS as T } from "./sqlite-transition.js";

/** What the store needs of the job store ({@link SqliteJobStore}): connection, namespace, counters. */
export interface SqliteJobControlHost {
  readonly namespace: string;
  conn(): SqliteConnection;
  readonly counters: SqliteStageCounters;
}

export class SqliteJobControlStore implements B.JobControlStore {
  /** X4: written once; a write in its own `BEGIN IMMEDIATE`, whose commit other processes' WAL watchers see (the resume's wake-up). */
  private readonly pauses: PauseStatements;

  constructor(private readonly host: SqliteJobControlHost) {
    this.pauses = new PauseStatements(
      sqliteCompiler,
      (s) => host.conn().read(s),
      (s) => host.conn().write(s),
      host.namespace,
    );
  }

  async pauseSet(params: B.PauseSetParams): Promise<boolean> {
    return this.pauses.set(params);
  }

  async pausedList(): Promise<B.PausedTarget[]> {
    return this.pauses.list();
  }

  async pauseTargetKnown(params: B.PauseTargetRef): Promise<boolean> {
    return this.pauses.known(params);
  }

  async retryMany(params: B.JobRetryManyParams): Promise<B.JobControlResult> {
    const c = this.host.conn();
    return c.immediate(() => {
      const rows = this.select(c, RETRYABLE_STAGES, params.target, params.limit);
      if (rows.length === 0) return { ids: [] };
      const ids = rows.map((r) => String(r.id));
      c.run(
        `UPDATE later_jobs SET ${T.retry.stage}, run_at = ?, updated_at = ?, expires_at = NULL, lease_owner = NULL, lease_expires_at = NULL,
           ${T.retry.history}
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
      T.retry.count(deltas, rows, (r) => r.stage, "enqueued");
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
      T.delete.count(deltas, rows, (r) => r.stage, null);
      this.host.counters.write(deltas);
      return { ids };
    });
  }

  /**
   * X3: the picked rows (`cancel`), then their waiting continuations level by
   * level (`cancelChild`, one `UPDATE … WHERE parent_id IN json_each(?)` per
   * level), end `cancelled`, noted with the reason when one was given; a
   * running partition head frees its partition (epoch moved on). The commit
   * is the wake-up (a partition may go on) and, for a running job, the news
   * its server's next renewal reads.
   */
  async cancelMany(params: B.JobCancelManyParams): Promise<B.JobControlResult> {
    const c = this.host.conn();
    return c.immediate(() => {
      const rows = this.select(c, CANCELLABLE_STAGES, params.target, params.limit);
      if (rows.length === 0) return { ids: [] };
      const ids = rows.map((r) => String(r.id));
      const [own, child] = params.reason === null ? [T.cancel, T.cancelChild] : [T.cancelReason, T.cancelChildReason];
      const set = (t: SqliteTransition) =>
        `${t.stage}, unique_slot = NULL, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?,
         expires_at = coalesce(? + (? ->> job_type), ?), ${t.history}`;
      const byType = params.retentionMsByType ? JSON.stringify(params.retentionMsByType) : null;
      const head = [params.now, params.now, byType, params.expiresAt, params.now, ...(params.reason === null ? [] : [params.reason])];
      const deltas = new StageDeltas();
      c.run(
        `UPDATE later_jobs SET ${set(own)} WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))`,
        ...head,
        this.host.namespace,
        JSON.stringify(ids),
      );
      own.count(deltas, rows, (r) => r.stage, "cancelled");
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
          // Single-parent children by parent_id; fan-in children (X5) through their edges.
          `UPDATE later_jobs SET ${set(child)} WHERE namespace = ? AND stage = 'waiting'
             AND (parent_id IN (SELECT value FROM json_each(?))
               OR id IN (SELECT child_id FROM later_job_parents WHERE namespace = ? AND parent_id IN (SELECT value FROM json_each(?))))
           RETURNING id, topic, partition_no`,
          ...head,
          this.host.namespace,
          JSON.stringify(parents),
          this.host.namespace,
          JSON.stringify(parents),
        );
        child.count(deltas, children, "waiting", "cancelled");
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
        `${cols} WHERE namespace = ? AND stage IN ${stageList(stages)}${only} AND id IN (SELECT value FROM json_each(?)) ORDER BY id LIMIT ? + 0`,
        this.host.namespace,
        JSON.stringify(target.ids),
        limit,
      );
    }
    const { stage = null, jobType = null, afterId = null } = target.filter;
    const terminal = stages === CANCELLABLE_STAGES ? "1 = 1" : "expires_at IS NOT NULL";
    return c.all(
      `${cols} WHERE namespace = ? AND ${terminal} AND stage IN ${stageList(stages)}${only}
         AND (? IS NULL OR stage = ?) AND (? IS NULL OR job_type = ?) AND (? IS NULL OR id > ?)${limit < 0 ? "" : " ORDER BY id LIMIT ? + 0"}`,
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
