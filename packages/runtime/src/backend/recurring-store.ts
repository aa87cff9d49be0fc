/**
 * The recurring-schedule part of the seam (`backend.recurring`).
 *
 * One row per schedule (`later_recurring`). `nextRunAt` is the next
 * occurrence not yet enqueued; every server's poller lists the due rows and
 * enqueues an occurrence with {@link RecurringStore.advance}, a
 * compare-and-set on the row in the same transaction as the occurrence's
 * job insert, so exactly one poller wins each occurrence however many run.
 */
import type { JobStage } from "../core/job-stage.js";
import type { JobInsert } from "./job-store.js";

/** The recurring-schedule statements of one backend, scoped to its namespace. */
export interface RecurringStore {
  /**
   * Registers or updates a schedule in one transaction. Same id with the
   * same cron, time zone and mode: updates its payload and job type only
   * (`changed: false`, no job). Otherwise (new id, or any of those differs)
   * writes the whole row and inserts `firstJob`, through the same insert as
   * `jobs.insertMany`. A job already enqueued for the old definition is left
   * as is. Concurrent upserts of one id serialise on its row (SQLite:
   * `BEGIN IMMEDIATE`; PostgreSQL: `INSERT … ON CONFLICT DO NOTHING`, then
   * `SELECT … FOR UPDATE`), so exactly one of them reports `changed`.
   */
  upsert(params: RecurringUpsertParams): Promise<RecurringUpsertResult>;
  /** Schedules with `nextRunAt <= now`, earliest first, at most `limit`. */
  dueList(params: RecurringDueListParams): Promise<RecurringSchedule[]>;
  /**
   * Enqueues one occurrence: compare-and-set of the row's `nextRunAt` (and
   * definition) to `nextRunAt`, and the occurrence's job insert (the
   * `jobs.insertMany` insert: a sequential occurrence takes its partition's
   * next sequence), in one transaction. Exactly one of any number of
   * concurrent callers for the same occurrence inserts it (PostgreSQL: the
   * losers wait on the row lock, then match no row).
   */
  advance(params: RecurringAdvanceParams): Promise<RecurringAdvanceResult>;
  /**
   * Every schedule of the namespace, ordered by id, each with the run time
   * of its latest enqueued occurrence (read from that job's row, one
   * correlated lookup by primary key per schedule).
   */
  list(): Promise<RecurringScheduleListed[]>;
  /** Deletes a schedule (jobs already enqueued stay); false when there was none. */
  delete(params: RecurringDeleteParams): Promise<boolean>;
}

/** A recurring schedule as stored. */
export interface RecurringSchedule {
  /** The identifier given to `enqueueRecurring`, unique per namespace. */
  id: string;
  jobType: string;
  /** The payload every later occurrence carries, encoded as JSON text. */
  payload: string;
  /** Six-field cron expression (seconds first), whitespace-normalised. */
  cron: string;
  /** IANA time zone the cron fields are read in. */
  timeZone: string;
  /** Occurrences are partitioned jobs on the reserved topic `__later_recurring`, so they never overlap. */
  sequential: boolean;
  /** Sequential schedules: the partition of `__later_recurring` their occurrences go to. Null otherwise. */
  partition: number | null;
  /** Time (ms) of the next occurrence not yet enqueued. */
  nextRunAt: number;
  /**
   * The id the occurrence at `nextRunAt` gets when the poller enqueues it:
   * a sequential schedule's first occurrence, whose id the upsert already
   * returned. Null: the poller gives it a fresh id.
   */
  nextJobId: string | null;
  /** The latest occurrence enqueued (or the first one, inserted by the upsert); null before any. */
  lastJobId: string | null;
  createdAt: number;
  updatedAt: number;
}

/** A schedule as {@link RecurringStore.list} returns it. */
export interface RecurringScheduleListed extends RecurringSchedule {
  /**
   * The run time (ms) of the occurrence `lastJobId` names: the one already
   * enqueued, before `nextRunAt`. Null when none was enqueued yet or its job
   * is gone (deleted after its retention).
   */
  lastRunAt: number | null;
}

/** What {@link RecurringStore.upsert} writes: the schedule's definition. */
export type RecurringScheduleWrite = Pick<RecurringSchedule, "id" | "jobType" | "payload" | "cron" | "timeZone" | "sequential" | "partition">;

export interface RecurringUpsertParams {
  schedule: RecurringScheduleWrite;
  /** New or changed schedule: the first occurrence to insert now (its `runAt` is in the future, so it is stored `delayed`), or null to insert none. */
  firstJob: JobInsert | null;
  /** New or changed schedule: the stored next occurrence not yet enqueued. */
  nextRunAt: number;
  /** New or changed schedule: the id reserved for the occurrence at `nextRunAt` (see {@link RecurringSchedule.nextJobId}), or null. */
  nextJobId: string | null;
  now: number;
}

export interface RecurringUpsertResult {
  /**
   * True: the schedule was new, or its cron, time zone or mode differed, and
   * it was written whole (`firstJob` inserted, `nextRunAt` and `nextJobId`
   * stored). False: it existed as is; only its payload and job type were
   * updated, and no job was inserted.
   */
  changed: boolean;
}

export interface RecurringDueListParams {
  /** Schedules whose `nextRunAt <= now`. */
  now: number;
  limit: number;
}

export interface RecurringAdvanceParams {
  /**
   * The schedule as a poller listed it. The write applies only while the
   * row still has this `nextRunAt`, cron, time zone and mode: a poller that
   * lost the race (or read a schedule since re-registered) writes nothing.
   */
  schedule: Pick<RecurringSchedule, "id" | "nextRunAt" | "cron" | "timeZone" | "sequential">;
  /**
   * The occurrence to insert. Its job type, payload and partition are taken
   * from the row as it is at the compare-and-set (so a payload update racing
   * with the poller is never lost), and its id is the row's `nextJobId` when
   * one is reserved, else `id`. `meta`: the metadata the enqueue
   * middleware set (X10), JSON text, or null/absent for none.
   */
  occurrence: { id: string; runAt: number; retryPolicy: string | null; meta?: string | null };
  /** The schedule's next occurrence after this one. */
  nextRunAt: number;
  now: number;
}

export interface RecurringAdvanceResult {
  /** The occurrence as inserted and the stage it was stored in; null when the compare-and-set failed and nothing was written. */
  inserted: { job: JobInsert; stage: JobStage } | null;
}

export interface RecurringDeleteParams {
  id: string;
}
