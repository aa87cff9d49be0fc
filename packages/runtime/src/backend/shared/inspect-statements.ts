/**
 * The inspection reads that mean the same on both dialects, written once
 * (see `shared-statement.ts`): one job, and a cursor page of jobs for
 * `later jobs list` and the dashboard.
 */
import { sql } from "kysely";
import { CLAIMABLE_STAGES } from "../../core/job-stage.js";
import type { JobGetParams, JobListParams, JobRecord, OldestReadyAtParams } from "../backend.js";
import { JOB_RECORD_COLUMNS, jobRecordFromRow } from "./job-rows.js";
import { SharedStatement } from "./shared-statement.js";
import { stageList } from "./stage-list.js";

interface InNamespace {
  namespace: string;
}

export const JOB_GET = new SharedStatement<JobGetParams & InNamespace, JobRecord | null>({
  build: (db, $) => db.selectFrom("later_jobs").select(JOB_RECORD_COLUMNS).where("id", "=", $("id")).where("namespace", "=", $("namespace")),
  read: (rows) => (rows[0] ? jobRecordFromRow(rows[0]) : null),
});

/**
 * A page of jobs by id. The cursor is a plain bound on the primary key in
 * both orders, so either walk is an index range scan. One variant per order
 * and set of filters given.
 */
export const JOB_LIST = new SharedStatement<JobListParams & InNamespace, JobRecord[]>({
  variant: (p) => [p.order === "desc", p.stage !== undefined, p.jobType !== undefined, p.afterId !== undefined].join(),
  build: (db, $, p) => {
    const desc = p.order === "desc";
    let q = db.selectFrom("later_jobs").select(JOB_RECORD_COLUMNS).where("namespace", "=", $("namespace"));
    if (p.stage !== undefined) q = q.where("stage", "=", $("stage"));
    if (p.jobType !== undefined) q = q.where("job_type", "=", $("jobType"));
    if (p.afterId !== undefined) q = q.where("id", desc ? "<" : ">", $("afterId"));
    return q.orderBy("id", desc ? "desc" : "asc").limit($("limit"));
  },
  read: (rows) => rows.map(jobRecordFromRow),
});

/**
 * The due time of the oldest ready regular job: the first entry of the ready
 * index (`later_jobs_ready`: namespace, run_at, over the claimable stages of
 * regular jobs) up to now, as the claim reads it; one probe at any backlog.
 */
export const OLDEST_READY_AT = new SharedStatement<OldestReadyAtParams & InNamespace, number | null>({
  build: (db, $) =>
    db
      .selectFrom("later_jobs")
      .select("run_at")
      .where("namespace", "=", $("namespace"))
      .where(sql<boolean>`stage in ${sql.raw(stageList(CLAIMABLE_STAGES))}`)
      .where("topic", "is", null)
      .where("run_at", "<=", $("nowMs"))
      .orderBy("run_at")
      .limit(1),
  read: (rows) => (rows[0] ? Number(rows[0].run_at) : null),
});
