/**
 * The recurring-schedule statements of the SQLite backend
 * (`backend.recurring`). The upsert and the advance are hand-written: every
 * one runs in one `BEGIN IMMEDIATE` transaction of {@link SqliteConnection},
 * the write lock taken before the schedule row is read, so two processes
 * upserting one schedule, or two pollers advancing it, run one after the
 * other and the second sees the first's work. Occurrence jobs are written
 * with the job store's own insert (`insertRows`, the body of
 * `jobs.insertMany`) inside that same transaction. The due list, the list
 * and the delete are written once for both dialects
 * (`shared/recurring-statements.ts`).
 */
import type { JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { occurrenceJob, recurringDefinitionValues, sameDefinition } from "../shared/recurring-rows.js";
import { RECURRING_DELETE, RECURRING_DUE, RECURRING_LIST } from "../shared/recurring-statements.js";
import { type RunStatement, sqliteCompiler } from "../shared/shared-statement.js";
import type { SqliteConnection } from "./sqlite-connection.js";

/** What the store needs: the connection, namespace and job insert of the job store ({@link SqliteJobStore}). */
export interface SqliteRecurringHost {
  readonly namespace: string;
  conn(): SqliteConnection;
  /** Inserts jobs inside the caller's `immediate` transaction (see `SqliteJobStore.insertRows`). */
  insertRows(jobs: readonly B.JobInsert[], now: number): JobStage[];
}

export class SqliteRecurringStore implements B.RecurringStore {
  constructor(private readonly host: SqliteRecurringHost) {}

  private get ns(): string {
    return this.host.namespace;
  }

  async upsert(params: B.RecurringUpsertParams): Promise<B.RecurringUpsertResult> {
    const c = this.host.conn();
    const s = params.schedule;
    return c.immediate(() => {
      const existing = c.get("SELECT cron, time_zone, sequential FROM later_recurring WHERE namespace = ? AND id = ?", this.ns, s.id);
      if (existing && sameDefinition(existing, s)) {
        c.run(
          "UPDATE later_recurring SET job_type = ?, payload = ?, updated_at = ? WHERE namespace = ? AND id = ?",
          s.jobType,
          s.payload,
          params.now,
          this.ns,
          s.id,
        );
        return { changed: false };
      }
      if (params.firstJob) this.host.insertRows([params.firstJob], params.now);
      c.run(
        `INSERT INTO later_recurring (namespace, id, job_type, payload, cron, time_zone, sequential, partition_no, next_run_at, next_job_id, last_job_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (namespace, id) DO UPDATE SET job_type = excluded.job_type, payload = excluded.payload, cron = excluded.cron,
           time_zone = excluded.time_zone, sequential = excluded.sequential, partition_no = excluded.partition_no, next_run_at = excluded.next_run_at,
           next_job_id = excluded.next_job_id, last_job_id = coalesce(excluded.last_job_id, later_recurring.last_job_id), updated_at = excluded.updated_at`,
        this.ns,
        s.id,
        ...recurringDefinitionValues(params),
        params.now,
      );
      return { changed: true };
    });
  }

  dueList(params: B.RecurringDueListParams): Promise<B.RecurringSchedule[]> {
    return RECURRING_DUE.run(sqliteCompiler, this.read, { ...params, namespace: this.ns });
  }

  async advance(params: B.RecurringAdvanceParams): Promise<B.RecurringAdvanceResult> {
    const c = this.host.conn();
    const s = params.schedule;
    return c.immediate(() => {
      // SET expressions read the row as it was: the reserved id, if any, becomes the occurrence's.
      const row = c.get(
        `UPDATE later_recurring SET next_run_at = ?, last_job_id = coalesce(next_job_id, ?), next_job_id = NULL, updated_at = ?
         WHERE namespace = ? AND id = ? AND next_run_at = ? AND cron = ? AND time_zone = ? AND sequential = ?
         RETURNING last_job_id AS job_id, job_type, payload, sequential, partition_no`,
        params.nextRunAt,
        params.occurrence.id,
        params.now,
        this.ns,
        s.id,
        s.nextRunAt,
        s.cron,
        s.timeZone,
        s.sequential ? 1 : 0,
      );
      if (!row) return { inserted: null };
      const job = occurrenceJob(row, params.occurrence);
      const [stage] = this.host.insertRows([job], params.now);
      return { inserted: { job, stage: stage! } };
    });
  }

  list(): Promise<B.RecurringScheduleListed[]> {
    return RECURRING_LIST.run(sqliteCompiler, this.read, { namespace: this.ns });
  }

  delete(params: B.RecurringDeleteParams): Promise<boolean> {
    return RECURRING_DELETE.run(sqliteCompiler, this.write, { ...params, namespace: this.ns });
  }

  private readonly read: RunStatement = (s) => this.host.conn().read(s);
  private readonly write: RunStatement = (s) => this.host.conn().write(s);
}
