/**
 * The recurring-schedule statements that mean the same on both dialects,
 * written once (see `shared-statement.ts`): the pollers' due list, the list
 * and the delete. The upsert and the advance are written per dialect: they
 * serialise on the schedule row in ways that differ (`BEGIN IMMEDIATE` on
 * SQLite, row locks on PostgreSQL).
 */
import type { RecurringDeleteParams, RecurringDueListParams, RecurringSchedule, RecurringScheduleListed } from "../backend.js";
import { RECURRING_SCHEDULE_COLUMNS, recurringScheduleFromRow } from "./recurring-rows.js";
import { SharedStatement, unplanned } from "./shared-statement.js";

interface InNamespace {
  namespace: string;
}

/** Schedules due at `now`, earliest first: one range scan of the due index. */
export const RECURRING_DUE = new SharedStatement<RecurringDueListParams & InNamespace, RecurringSchedule[]>({
  build: (db, $) =>
    db
      .selectFrom("later_recurring")
      .select(RECURRING_SCHEDULE_COLUMNS)
      .where("namespace", "=", $("namespace"))
      .where("next_run_at", "<=", $("now"))
      .orderBy("next_run_at")
      .orderBy("id")
      .limit(unplanned($("limit"))),
  read: (rows) => rows.map(recurringScheduleFromRow),
});

/** Every schedule, ordered by id, with its latest enqueued occurrence's run time (a lookup of that job by primary key). */
export const RECURRING_LIST = new SharedStatement<InNamespace, RecurringScheduleListed[]>({
  build: (db, $) =>
    db
      .selectFrom("later_recurring")
      .select(RECURRING_SCHEDULE_COLUMNS)
      .select((eb) =>
        eb
          .selectFrom("later_jobs")
          .select("later_jobs.run_at")
          .whereRef("later_jobs.namespace", "=", "later_recurring.namespace")
          .whereRef("later_jobs.id", "=", "later_recurring.last_job_id")
          .as("last_run_at"),
      )
      .where("namespace", "=", $("namespace"))
      .orderBy("id"),
  read: (rows) =>
    rows.map((r) => ({ ...recurringScheduleFromRow(r), lastRunAt: r.last_run_at === null || r.last_run_at === undefined ? null : Number(r.last_run_at) })),
});

/** Deletes a schedule; a row comes back when there was one. */
export const RECURRING_DELETE = new SharedStatement<RecurringDeleteParams & InNamespace, boolean>({
  build: (db, $) => db.deleteFrom("later_recurring").where("namespace", "=", $("namespace")).where("id", "=", $("id")).returning("id"),
  read: (rows) => rows.length > 0,
});
