/**
 * The recurring-schedule statements of the PostgreSQL backend
 * (`backend.recurring`). The upsert and the advance are fixed SQL run as
 * named prepared statements, hand-written for how they serialise on the
 * schedule row; the due list, the list and the delete are written once for
 * both dialects (`shared/recurring-statements.ts`).
 *
 * Concurrency (READ COMMITTED):
 * - Upsert: `INSERT … ON CONFLICT DO NOTHING` first. When two servers
 *   register a new id at once, the second waits for the first's commit, then
 *   inserts nothing and takes the row `FOR UPDATE`, which now shows the
 *   first one's definition: it only updates the payload. So a schedule is
 *   created (and its first occurrence inserted) once.
 * - Advance: one `UPDATE … WHERE next_run_at = <expected> … RETURNING`.
 *   Concurrent pollers queue on the row lock; after the winner commits, the
 *   others re-check the condition on the new row version, match nothing and
 *   insert nothing.
 * Occurrence jobs are written with the backend's own insert
 * (`PostgresJobStore.insertOn`, the body of `jobs.insertMany`) on the same transaction.
 * Lock order: schedule row, then (sequential) the partition row, then job
 * rows; no other writer takes a schedule row after those.
 */
import type * as B from "../backend.js";
import { occurrenceJob, recurringDefinitionValues, sameDefinition } from "../shared/recurring-rows.js";
import { RECURRING_DELETE, RECURRING_DUE, RECURRING_LIST } from "../shared/recurring-statements.js";
import type { PostgresJobStore } from "./postgres-job-store.js";
import { statement, type Statement } from "./postgres-statement.js";
import type { PostgresRunner } from "./postgres-runner.js";

const COLUMNS = "namespace, id, job_type, payload, cron, time_zone, sequential, partition_no, next_run_at, next_job_id, last_job_id, created_at, updated_at";

class RecurringQueries {
  readonly insertNew: Statement;
  readonly lock: Statement;
  readonly updatePayload: Statement;
  readonly replace: Statement;
  readonly advance: Statement;

  constructor(schema: string) {
    const table = `${schema}.later_recurring`;
    // $1 ns, $2 id, $3 job type, $4 payload, $5 cron, $6 zone, $7 sequential, $8 partition, $9 next run, $10 next job id, $11 last job id, $12 now
    this.insertNew = statement(`INSERT INTO ${table} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
ON CONFLICT (namespace, id) DO NOTHING RETURNING id`);
    this.lock = statement(`SELECT cron, time_zone, sequential FROM ${table} WHERE namespace = $1 AND id = $2 FOR UPDATE`);
    this.updatePayload = statement(`UPDATE ${table} SET job_type = $3, payload = $4, updated_at = $5 WHERE namespace = $1 AND id = $2`);
    this.replace = statement(`UPDATE ${table} SET job_type = $3, payload = $4, cron = $5, time_zone = $6, sequential = $7, partition_no = $8,
  next_run_at = $9, next_job_id = $10, last_job_id = coalesce($11, last_job_id), updated_at = $12
WHERE namespace = $1 AND id = $2`);
    // SET expressions read the row as it was: the reserved id, if any, becomes the occurrence's.
    this.advance = statement(`UPDATE ${table} SET next_run_at = $7, last_job_id = coalesce(next_job_id, $8), next_job_id = NULL, updated_at = $9
WHERE namespace = $1 AND id = $2 AND next_run_at = $3 AND cron = $4 AND time_zone = $5 AND sequential = $6
RETURNING last_job_id AS job_id, job_type, payload, sequential, partition_no`);
  }
}

export class PostgresRecurringStore implements B.RecurringStore {
  private readonly q: RecurringQueries;

  constructor(
    private readonly host: PostgresRunner,
    /** The job statements: an occurrence is inserted in the schedule's own transaction. */
    private readonly jobs: PostgresJobStore,
    schema: string,
  ) {
    this.q = new RecurringQueries(schema);
  }

  private get ns(): string {
    return this.host.namespace;
  }

  async upsert(params: B.RecurringUpsertParams): Promise<B.RecurringUpsertResult> {
    const s = params.schedule;
    const definition = recurringDefinitionValues(params);
    return this.host.inTransaction("recurring upsert", async (execute) => {
      const created = await execute(this.q.insertNew, [this.ns, s.id, ...definition]);
      if (created.length === 0) {
        const [row] = await execute(this.q.lock, [this.ns, s.id]);
        if (row && sameDefinition(row, s)) {
          await execute(this.q.updatePayload, [this.ns, s.id, s.jobType, s.payload, params.now]);
          return { changed: false };
        }
        await execute(this.q.replace, [this.ns, s.id, ...definition]);
      }
      if (params.firstJob) await this.jobs.insertOn(execute, { jobs: [params.firstJob], now: params.now });
      return { changed: true };
    });
  }

  async dueList(params: B.RecurringDueListParams): Promise<B.RecurringSchedule[]> {
    return RECURRING_DUE.run(this.host.compiler, this.host.shared, { ...params, namespace: this.ns });
  }

  async advance(params: B.RecurringAdvanceParams): Promise<B.RecurringAdvanceResult> {
    const s = params.schedule;
    return this.host.inTransaction("recurring advance", async (execute) => {
      const [row] = await execute(this.q.advance, [
        this.ns,
        s.id,
        s.nextRunAt,
        s.cron,
        s.timeZone,
        s.sequential ? 1 : 0,
        params.nextRunAt,
        params.occurrence.id,
        params.now,
      ]);
      if (!row) return { inserted: null };
      const job = occurrenceJob(row, params.occurrence);
      const { stages } = await this.jobs.insertOn(execute, { jobs: [job], now: params.now });
      return { inserted: { job, stage: stages[0]! } };
    });
  }

  async list(): Promise<B.RecurringScheduleListed[]> {
    return RECURRING_LIST.run(this.host.compiler, this.host.shared, { namespace: this.ns });
  }

  async delete(params: B.RecurringDeleteParams): Promise<boolean> {
    return RECURRING_DELETE.run(this.host.compiler, this.host.shared, { ...params, namespace: this.ns });
  }
}
