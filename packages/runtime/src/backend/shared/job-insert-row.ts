/**
 * The part of a new job's `later_jobs` row that comes from its
 * {@link JobInsert} alone, built once for every insert of every backend
 * (SQLite's inserts and its caller-transaction insert, PostgreSQL's batch
 * and unique inserts). The rest of a row differs by insert and stays with
 * it: the namespace, `attempt` 0, the first stage-history entry and the
 * times, and what only that insert writes (parent, error, expiry, partition
 * and sequence, fan-in count; unique key and slot).
 */
import type { JobStage } from "../../core/job-stage.js";
import type { JobInsert } from "../backend.js";

/** The columns of {@link JobInsertRow}, in the order {@link jobInsertValues} gives their values. */
export const JOB_INSERT_COLUMNS = ["id", "job_type", "payload", "stage", "retry_policy", "timeout_ms", "run_at", "priority", "meta", "group_key"] as const;

/** {@link JOB_INSERT_COLUMNS} as SQL: `id, job_type, ...`. */
export const JOB_INSERT_COLUMN_LIST = JOB_INSERT_COLUMNS.join(", ");

/** A new job's own columns, with the stored defaults: no timeout, no meta and no group are NULL, no priority 0. */
export interface JobInsertRow {
  id: string;
  job_type: string;
  payload: string;
  stage: JobStage;
  retry_policy: string | null;
  timeout_ms: number | null;
  run_at: number;
  priority: number;
  meta: string | null;
  /** X9: the job's group; NULL: none. */
  group_key: string | null;
}

/** `job`'s own columns, stored in `stage` (decided by the insert: `insertStage`, `fanInStage`, `dueStage`). */
export function jobInsertRow(job: JobInsert, stage: JobStage): JobInsertRow {
  return {
    id: job.id,
    job_type: job.jobType,
    payload: job.payload,
    stage,
    retry_policy: job.retryPolicy,
    timeout_ms: job.timeoutMs ?? null,
    run_at: job.runAt,
    priority: job.priority ?? 0,
    meta: job.meta ?? null,
    group_key: job.group ?? null,
  };
}

/** {@link jobInsertRow}'s values in {@link JOB_INSERT_COLUMNS} order, for a statement with positional parameters. */
export function jobInsertValues(job: JobInsert, stage: JobStage): unknown[] {
  const row = jobInsertRow(job, stage);
  return JOB_INSERT_COLUMNS.map((column) => row[column]);
}
