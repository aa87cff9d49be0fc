/**
 * `later_recurring` row handling that is the same on every backend (times
 * as integer ms; the PostgreSQL driver returns bigints as strings, hence
 * `Number`), and the one rule both stores apply to decide whether an upsert
 * changes a schedule.
 */
import { RECURRING_SEQUENTIAL_TOPIC } from "../../core/partition/topic.js";
import type { JobInsert, RecurringAdvanceParams, RecurringSchedule, RecurringScheduleWrite, RecurringUpsertParams } from "../backend.js";
import type { Row } from "./job-rows.js";

/** The columns {@link recurringScheduleFromRow} reads (named rather than `*`, as `JOB_RECORD_COLUMNS`). */
export const RECURRING_SCHEDULE_COLUMNS = [
  "id",
  "job_type",
  "payload",
  "cron",
  "time_zone",
  "sequential",
  "partition_no",
  "next_run_at",
  "next_job_id",
  "last_job_id",
  "created_at",
  "updated_at",
] as const;

/** A `later_recurring` row as the seam's {@link RecurringSchedule}. */
export function recurringScheduleFromRow(r: Row): RecurringSchedule {
  return {
    id: String(r.id),
    jobType: String(r.job_type),
    payload: String(r.payload),
    cron: String(r.cron),
    timeZone: String(r.time_zone),
    sequential: Number(r.sequential) === 1,
    partition: r.partition_no === null || r.partition_no === undefined ? null : Number(r.partition_no),
    nextRunAt: Number(r.next_run_at),
    nextJobId: (r.next_job_id as string | null) ?? null,
    lastJobId: (r.last_job_id as string | null) ?? null,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** Same cron, time zone and mode: an upsert of `write` over `row` only updates the payload and job type. */
export function sameDefinition(row: Row, write: RecurringScheduleWrite): boolean {
  return String(row.cron) === write.cron && String(row.time_zone) === write.timeZone && (Number(row.sequential) === 1) === write.sequential;
}

/**
 * The occurrence job built from the row the compare-and-set returned
 * (`job_id`, `job_type`, `payload`, `sequential`, `partition_no`, as
 * written): a sequential schedule's occurrence goes to its partition of the
 * reserved topic.
 */
export function occurrenceJob(row: Row, occurrence: RecurringAdvanceParams["occurrence"]): JobInsert {
  const job: JobInsert = {
    id: String(row.job_id),
    jobType: String(row.job_type),
    payload: String(row.payload),
    runAt: occurrence.runAt,
    retryPolicy: occurrence.retryPolicy,
  };
  if (occurrence.meta != null) job.meta = occurrence.meta;
  if (Number(row.sequential) === 1) {
    job.topic = RECURRING_SEQUENTIAL_TOPIC;
    job.partition = Number(row.partition_no);
  }
  return job;
}

/**
 * A schedule's stored definition as statement values, in column order:
 * job type, payload, cron, time zone, sequential (0/1), partition, next run,
 * next job id, last job id (the first job's, when one is inserted), updated at.
 */
export function recurringDefinitionValues(params: RecurringUpsertParams): unknown[] {
  const s = params.schedule;
  return [
    s.jobType,
    s.payload,
    s.cron,
    s.timeZone,
    s.sequential ? 1 : 0,
    s.partition,
    params.nextRunAt,
    params.nextJobId,
    params.firstJob?.id ?? null,
    params.now,
  ];
}
