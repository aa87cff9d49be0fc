/**
 * The PostgreSQL statements off the hot path (maintenance, inspection,
 * dashboard reads), built with Kysely on the backend's pool: clear and
 * type-checked against `schema.ts`, and rare enough that compiling a query
 * per call costs nothing that matters. bigint columns come back as strings
 * and are turned into numbers here.
 */
import { sql, type Kysely } from "kysely";
import type * as B from "../backend.js";
import type { LaterDatabase } from "../schema.js";
import { jobRecordFromRow, type Row } from "../shared/job-rows.js";

export class PostgresKyselyQueries {
  constructor(
    private readonly db: Kysely<LaterDatabase>,
    private readonly namespace: string,
  ) {}

  async jobListStuck(params: B.JobListStuckParams): Promise<B.StuckJob[]> {
    const rows = await this.db
      .selectFrom("later_jobs")
      .select(["id", "attempt", "job_type", "retry_policy"])
      .where("namespace", "=", this.namespace)
      .where("stage", "=", "running")
      .where("topic", "is", null)
      .where("lease_expires_at", "<", params.leaseExpiredBefore)
      .orderBy("lease_expires_at")
      .limit(params.limit)
      .execute();
    return rows.map((r) => ({ id: r.id, attempt: Number(r.attempt), jobType: r.job_type, retryPolicy: r.retry_policy }));
  }

  async jobCountReady(params: B.JobCountReadyParams): Promise<number> {
    const row = await this.db
      .selectFrom("later_jobs")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("namespace", "=", this.namespace)
      .where("stage", "in", ["enqueued", "delayed", "requeued"])
      .where("topic", "is", null)
      .where("run_at", "<=", params.now)
      .where("job_type", "=", sql<string>`any(${[...params.jobTypes]}::text[])`)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async jobGet(params: B.JobGetParams): Promise<B.JobRecord | null> {
    const row = await this.db.selectFrom("later_jobs").selectAll().where("id", "=", params.id).where("namespace", "=", this.namespace).executeTakeFirst();
    return row ? jobRecordFromRow(row as unknown as Row) : null;
  }

  async jobList(params: B.JobListParams): Promise<B.JobRecord[]> {
    const desc = params.order === "desc";
    let q = this.db
      .selectFrom("later_jobs")
      .selectAll()
      .where("namespace", "=", this.namespace)
      .orderBy("id", desc ? "desc" : "asc")
      .limit(params.limit);
    if (params.afterId !== undefined) q = q.where("id", desc ? "<" : ">", params.afterId);
    if (params.stage !== undefined) q = q.where("stage", "=", params.stage);
    if (params.jobType !== undefined) q = q.where("job_type", "=", params.jobType);
    return (await q.execute()).map((r) => jobRecordFromRow(r as unknown as Row));
  }

  /** One upsert: inserts the task's row, or moves its time only when the last run is at least `intervalMs` old. */
  async maintenanceClaim(params: B.MaintenanceClaimParams): Promise<boolean> {
    const result = await this.db
      .insertInto("later_maintenance")
      .values({ namespace: this.namespace, task: params.task, last_run_at: params.now })
      .onConflict((oc) =>
        oc
          .columns(["namespace", "task"])
          .doUpdateSet({ last_run_at: (eb) => eb.ref("excluded.last_run_at") })
          .where("later_maintenance.last_run_at", "<=", params.now - params.intervalMs),
      )
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }
}
