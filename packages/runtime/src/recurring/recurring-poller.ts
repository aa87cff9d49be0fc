/**
 * Enqueues due occurrences of recurring schedules (R2). Every server runs
 * one poller; they coordinate only through the database.
 *
 * ```text
 *   start() ─► poll ─► sleep(recurringPollIntervalMs) ─► poll ─► ...   stop(): the loop exits
 *   poll:  recurring.dueList(now) ─► per schedule: while nextRunAt <= now:
 *            enqueue middleware (X10) ─► next(): recurring.advance(expected nextRunAt ─► the next cron time, + the occurrence's job)
 *              ├─ won:  the job is committed; local workers are woken
 *              └─ lost: another server enqueued it (or the schedule was re-registered): next schedule
 * ```
 *
 * Exactly once: each occurrence is a compare-and-set on the schedule's
 * `nextRunAt` in the same transaction as the occurrence's job insert, so
 * however many pollers see a schedule due, one inserts the job. An
 * occurrence is enqueued whether or not the previous one has finished (a
 * crashed handler never stops a schedule); sequential schedules get their
 * ordering from their partition instead.
 *
 * Missed occurrences: when a schedule's next occurrence is more than
 * {@link missedAfterMs} in the past (no server ran, or none could reach the
 * database), every occurrence due by now collapses into one: a single job
 * for the latest of them, due at once, and the schedule continues with the
 * first cron time after now. A user who stops the servers for a day gets one
 * catch-up run per schedule, not a burst of every missed one. Occurrences
 * that are late by less than that (the normal lag of one poll interval, a
 * slow database) are each enqueued.
 */
import type { Backend, JobInsert, RecurringAdvanceResult, RecurringSchedule } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import { CronSchedule } from "../core/cron/cron-schedule.js";
import { newJobId, type JobId } from "../core/job-id.js";
import type { JobStage } from "../core/job-stage.js";
import { RECURRING_SEQUENTIAL_TOPIC } from "../core/partition/topic.js";
import { enqueueOneThrough, type PendingEnqueue } from "../middleware/later-middleware.js";

/** What a {@link RecurringPoller} is built from (by the server). */
export interface RecurringPollerOptions {
  backend: Backend;
  clock: Clock;
  /** Time between polls (`recurringPollIntervalMs`). */
  intervalMs: number;
  /** Called after each occurrence's commit, with the job and its stage: the server wakes its workers and emits events. */
  onCommitted: (jobs: readonly JobInsert[], stages: readonly JobStage[]) => void;
  /** A poll that failed (database unavailable, a stored cron that no longer parses); the loop goes on. */
  onError: (where: string, error: unknown) => void;
  /** The server's enqueue middleware (X10), around each occurrence's advance; null: none. */
  throughMiddleware: ((call: PendingEnqueue) => Promise<JobId[]>) | null;
  /** The payload the hooks see, decoded as the handler of `jobType` decodes it; undefined when it does not decode. */
  decodePayload: (jobType: string, payload: string) => unknown;
}

/** Schedules read per due-list query. */
const BATCH = 100;
/** Due-list reads per poll, at most. */
const MAX_ROUNDS = 10;
/** Steps walked to find the latest missed occurrence before settling for "now". */
const MAX_MISSED_WALK = 1_000;

export class RecurringPoller {
  private readonly stopController = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(private readonly options: RecurringPollerOptions) {}

  /**
   * How late an occurrence may be and still be enqueued on its own; older
   * ones are missed and collapse into one. Ten poll intervals, at least
   * one minute.
   */
  get missedAfterMs(): number {
    return Math.max(60_000, 10 * this.options.intervalMs);
  }

  /** Polls at once (catching up on what came due while no server ran), then every interval. Idempotent. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Ends the loop and resolves once it has exited (a poll in flight finishes its current write). Idempotent. */
  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
  }

  /**
   * One poll: enqueues every occurrence due at its start that this server
   * wins. A schedule another server advanced meanwhile is read again, so
   * when the poll resolves every occurrence due at its start has been
   * committed, by this server or another (within {@link MAX_ROUNDS} reads:
   * a poll stays short however busy the others are). Resolves to how many
   * this server enqueued.
   */
  async pollOnce(): Promise<number> {
    const { backend, clock } = this.options;
    const now = clock.now();
    let enqueued = 0;
    for (let round = 0; round < MAX_ROUNDS && !this.stopped; round++) {
      const due = await backend.recurring.dueList({ now, limit: BATCH });
      let lost = false;
      for (const schedule of due) {
        if (this.stopped) break;
        const result = await this.catchUp(schedule, now);
        enqueued += result.enqueued;
        lost ||= result.lost;
      }
      // Read again when a full batch may hide more, or another server is advancing a schedule.
      if (!lost && due.length < BATCH) break;
    }
    return enqueued;
  }

  private get stopped(): boolean {
    return this.stopController.signal.aborted;
  }

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    while (!signal.aborted) {
      try {
        await this.pollOnce();
      } catch (error) {
        if (!signal.aborted) this.options.onError("recurring", error);
      }
      await this.options.clock.sleep(this.options.intervalMs, signal);
    }
  }

  /** Enqueues the due occurrences of one schedule while this server wins them; `lost`: another server (or a re-registration) changed it first. */
  private async catchUp(listed: RecurringSchedule, now: number): Promise<{ enqueued: number; lost: boolean }> {
    let cron: CronSchedule;
    try {
      cron = CronSchedule.parse(listed.cron, listed.timeZone);
    } catch (error) {
      // Stored by a validated upsert, so only a host whose zone data lacks the zone gets here; other servers may still serve it.
      this.options.onError(`recurring schedule "${listed.id}"`, error);
      return { enqueued: 0, lost: false };
    }
    let schedule = listed;
    let enqueued = 0;
    while (schedule.nextRunAt <= now && !this.stopped) {
      const { runAt, nextRunAt } = this.occurrence(cron, schedule.nextRunAt, now);
      const advanced = await this.advance(schedule, runAt, nextRunAt, now);
      if (advanced === "skipped") return { enqueued, lost: false };
      if (advanced === "lost") return { enqueued, lost: true };
      enqueued++;
      schedule = { ...schedule, nextRunAt, nextJobId: null };
    }
    return { enqueued, lost: false };
  }

  /**
   * Enqueues one occurrence through the enqueue middleware (X10): the
   * hooks see one job with the schedule's id and payload as listed;
   * `next()` resolves to `[]` when another server won it. `skipped`: a hook
   * threw (reported to `onError`, the poll goes on with the next schedule)
   * or did not call `next()`; either way the occurrence stays due and the
   * next poll offers it again. A database error is rethrown: it ends the poll.
   */
  private async advance(schedule: RecurringSchedule, runAt: number, nextRunAt: number, now: number): Promise<"won" | "lost" | "skipped"> {
    const { backend, throughMiddleware, decodePayload } = this.options;
    let outcome: "won" | "lost" | "skipped" = "skipped";
    let writeFailed = false;
    const write = async (meta: string | null): Promise<JobId[]> => {
      let inserted: RecurringAdvanceResult["inserted"];
      try {
        // No explicit policy: each occurrence follows the policy of the server that runs it.
        ({ inserted } = await backend.recurring.advance({ schedule, occurrence: { id: newJobId(now), runAt, retryPolicy: null, meta }, nextRunAt, now }));
      } catch (error) {
        writeFailed = true;
        throw error;
      }
      if (!inserted) {
        outcome = "lost";
        return [];
      }
      outcome = "won";
      this.options.onCommitted([inserted.job], [inserted.stage]);
      return [inserted.job.id];
    };
    const partition = schedule.sequential && schedule.partition !== null ? { topic: RECURRING_SEQUENTIAL_TOPIC, partition: schedule.partition } : null;
    try {
      await enqueueOneThrough(
        throughMiddleware,
        {
          jobType: schedule.jobType,
          payload: throughMiddleware === null ? undefined : decodePayload(schedule.jobType, schedule.payload),
          partition,
          options: { runAt: new Date(runAt) },
          scheduleId: schedule.id,
        },
        write,
      );
    } catch (error) {
      if (writeFailed) throw error;
      this.options.onError(`recurring schedule "${schedule.id}" (enqueue middleware)`, error);
      return "skipped";
    }
    return outcome;
  }

  /** The occurrence to enqueue for a schedule due at `due`, and the schedule's next time after it (see the module doc on missed ones). */
  private occurrence(cron: CronSchedule, due: number, now: number): { runAt: number; nextRunAt: number } {
    if (due >= now - this.missedAfterMs) return { runAt: due, nextRunAt: cron.nextAfter(due) };
    let latest = due;
    for (let step = 0; step < MAX_MISSED_WALK; step++) {
      const next = cron.nextAfter(latest);
      if (next > now) return { runAt: latest, nextRunAt: next };
      latest = next;
    }
    // More missed occurrences than are worth walking (a per-second schedule after a long outage): run it now.
    return { runAt: now, nextRunAt: cron.nextAfter(now) };
  }
}
