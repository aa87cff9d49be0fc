/**
 * The job statements that mean the same on both dialects, written once (see
 * `shared-statement.ts`): the reads of the stuck-job rescue and of
 * autoscaling, off the hot path. The hot writes (insert, claim, finish,
 * release, renew) are written per dialect: they lock, notify and append to
 * the stage history in ways that differ. Also the progress write of a
 * running attempt, a plain fenced update.
 */
import { sql } from "kysely";
import type { JobCountReadyParams, JobListStuckParams, JobProgressSetParams, StuckJob } from "../backend.js";
import { storedPolicy } from "./job-rows.js";
import { SharedStatement, unplanned } from "./shared-statement.js";
import { claimableStageTerm } from "./stage-list.js";

interface InNamespace {
  namespace: string;
}

/** Running jobs whose lease expired, most overdue first; through the running index (its predicate is literal here, as the index's). */
export const STUCK_JOBS = new SharedStatement<JobListStuckParams & InNamespace, StuckJob[]>({
  build: (db, $) =>
    db
      .selectFrom("later_jobs")
      .select(["id", "attempt", "job_type", "retry_policy"])
      .where("namespace", "=", $("namespace"))
      .where("stage", "=", sql.lit("running"))
      .where("topic", "is", null)
      .where("lease_expires_at", "<", $("leaseExpiredBefore"))
      .orderBy("lease_expires_at")
      .limit(unplanned($("limit"))),
  read: (rows) => rows.map((r) => ({ id: String(r.id), attempt: Number(r.attempt), jobType: String(r.job_type), retryPolicy: storedPolicy(r.retry_policy) })),
});

/** Ready jobs of the given types, counted over the ready index; one variant per number of types (a server's list never changes). */
export const READY_COUNT = new SharedStatement<JobCountReadyParams & InNamespace, number>({
  variant: (p) => String(p.jobTypes.length),
  build: (db, $, p) =>
    db
      .selectFrom("later_jobs")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("namespace", "=", $("namespace"))
      .where(claimableStageTerm(db))
      .where("topic", "is", null)
      .where("run_at", "<=", $("now"))
      .where("job_type", "in", $.list("jobTypes", p.jobTypes.length)),
  read: (rows) => Number(rows[0]?.n ?? 0),
});

/** A running attempt's progress, fenced by its claim (owner and attempt); returns the row when it was stored. */
export const PROGRESS_SET = new SharedStatement<JobProgressSetParams & InNamespace, boolean>({
  build: (db, $) =>
    db
      .updateTable("later_jobs")
      .set({ progress: $("progress") })
      .where("namespace", "=", $("namespace"))
      .where("id", "=", $("id"))
      .where("stage", "=", sql.lit("running"))
      .where("attempt", "=", $("attempt"))
      .where("lease_owner", "=", $("owner"))
      .returning("id"),
  read: (rows) => rows.length > 0,
});
