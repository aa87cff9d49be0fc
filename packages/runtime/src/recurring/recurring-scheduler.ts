/**
 * Registers recurring schedules (`enqueueRecurring`, R1): validates the
 * input, computes the first occurrences with the injected clock and hands
 * one upsert to the backend.
 *
 * Terminology:
 * - **schedule**: a row of `later_recurring`, identified per namespace by
 *   the caller's `scheduleId`: job type, encoded payload, cron, time zone,
 *   mode, and `nextRunAt`, the next occurrence not yet enqueued.
 * - **occurrence**: one job of a schedule. The first one is enqueued by the
 *   upsert (plain mode) or reserved for the poller (sequential mode); every
 *   later one by {@link RecurringPoller} when it is due.
 * - **mode**: plain (occurrences are ordinary jobs and may overlap) or
 *   sequential (partitioned jobs on the reserved topic `__later_recurring`,
 *   partition `partitionForKey(scheduleId, recurringSequentialPartitions)`,
 *   so they run one at a time in order).
 */
import type { Backend, RecurringScheduleListed } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import { CronSchedule } from "../core/cron/cron-schedule.js";
import { newJobId, type JobId } from "../core/job-id.js";
import { partitionForKey } from "../core/partition/partition-for-key.js";
import { storedRetryPolicy, type RetryPolicy } from "../core/retry/retry-policy.js";
import { InvalidArgumentError, InvalidConfigError } from "../errors.js";
import { encodePayload } from "../core/encode-payload.js";
import { describeName, nameProblem } from "../core/stored-name.js";
import { enqueueOneThrough, type PendingEnqueue } from "../middleware/later-middleware.js";

/** Options of `enqueueRecurring`. */
export interface RecurringScheduleOptions {
  /** IANA time zone the cron fields are read in (`"Europe/Paris"`). Default `"UTC"`. */
  timeZone?: string;
  /**
   * Occurrences never overlap: each is a partitioned job on the reserved
   * topic `__later_recurring`, behind the previous one and any job chained
   * off it with `enqueueRecurringContinue`. Needs the option
   * `recurringSequentialPartitions`. Default false.
   */
  sequential?: boolean;
}

/** What a {@link RecurringScheduler} is built from (by the publisher). */
export interface RecurringSchedulerOptions {
  backend: Backend;
  clock: Clock;
  /** Payload encoder per known job type. */
  encoders: ReadonlyMap<string, (payload: unknown) => string>;
  /** The publisher's explicit default policy, stored on the first occurrence as on any job it enqueues; null: none (the occurrence follows the server that runs it). */
  defaultRetryPolicy: RetryPolicy | null;
  /** Partitions of `__later_recurring` (`recurringSequentialPartitions`); null when not configured. */
  sequentialPartitions: number | null;
  /** The publisher's enqueue middleware (X10), around the upsert that inserts a plain schedule's first occurrence; null: none. */
  throughMiddleware: ((call: PendingEnqueue) => Promise<JobId[]>) | null;
}

/** Longest schedule id: ids are shown in tables and error messages. */
const OPTION_KEYS = new Set(["timeZone", "sequential"]);

export class RecurringScheduler {
  constructor(private readonly options: RecurringSchedulerOptions) {}

  /**
   * Upserts schedule `scheduleId` (R1) and resolves to the first
   * occurrence's job id, or null when the schedule already existed with
   * this cron, time zone and mode: then only its payload (and job type) is
   * updated, for the occurrences enqueued from now on, and no job is
   * added, so calling this on every start-up is safe. A different cron,
   * time zone or mode replaces the definition and enqueues a fresh first
   * occurrence; a job already enqueued under the old definition stays and
   * runs.
   *
   * The first occurrence is the first cron time strictly after now. Plain
   * mode stores it at once as a `delayed` job. Sequential mode only
   * reserves its id, and the poller inserts it into the partition when it
   * is due: a delayed head would block every other schedule of its
   * partition until then.
   *
   * Middleware (X10): a plain schedule's upsert runs inside the enqueue
   * hooks (one job, `scheduleId` set, `options.runAt` its time), since it
   * may insert the first occurrence: the metadata they set is stored with
   * it, their `next()` resolves to `[]` when the schedule already existed,
   * and a hook that throws or skips `next()` leaves the schedule unwritten.
   * A sequential schedule's upsert inserts no job, so it runs outside them.
   *
   * Throws, writing nothing: `InvalidCronError` (code `INVALID_CRON`, the
   * message names the cron field or the time zone at fault);
   * `InvalidArgumentError` for an unknown job type, a payload that does not
   * encode, a schedule id that is not a string of 1 to 200 characters, or
   * bad options; `InvalidConfigError` for sequential mode without
   * `recurringSequentialPartitions`.
   */
  async upsert(jobType: string, scheduleId: string, payload: unknown, cron: string, options: RecurringScheduleOptions = {}): Promise<JobId | null> {
    checkScheduleId(scheduleId);
    const { timeZone, sequential } = checkOptions(options);
    const encode = this.options.encoders.get(jobType);
    if (!encode) throw new InvalidArgumentError(`unknown job type "${jobType}": no handler is registered for it`);
    const schedule = CronSchedule.parse(cron, timeZone);
    let partition: number | null = null;
    if (sequential) {
      const partitions = this.options.sequentialPartitions;
      if (partitions === null) {
        throw new InvalidConfigError(
          `enqueueRecurringSequential("${scheduleId}") needs the option recurringSequentialPartitions (e.g. recurringSequentialPartitions: 4) ` +
            "on this server or publisher, and on the servers that run the job; nothing was written",
        );
      }
      partition = partitionForKey(scheduleId, partitions);
    }
    const encoded = encodePayload(encode, jobType, payload);
    const now = this.options.clock.now();
    const first = schedule.nextAfter(now);
    const firstId = newJobId(now);
    const write = { id: scheduleId, jobType, payload: encoded, cron: normalizeCron(cron), timeZone, sequential, partition };
    if (sequential) {
      // No job yet: the poller inserts the first occurrence, through its server's middleware.
      const { changed } = await this.options.backend.recurring.upsert({ schedule: write, firstJob: null, nextRunAt: first, nextJobId: firstId, now });
      return changed ? firstId : null;
    }
    // The upsert may insert the first occurrence, so it runs inside the enqueue middleware (X10): `next()` resolves to [] when the schedule existed.
    const ids = await enqueueOneThrough(
      this.options.throughMiddleware,
      { jobType, payload, partition: null, options: { runAt: new Date(first) }, scheduleId },
      async (meta) => {
        const { changed } = await this.options.backend.recurring.upsert({
          schedule: write,
          firstJob: { id: firstId, jobType, payload: encoded, runAt: first, retryPolicy: storedRetryPolicy(this.options.defaultRetryPolicy), meta },
          nextRunAt: schedule.nextAfter(first),
          nextJobId: null,
          now,
        });
        return changed ? [firstId] : [];
      },
    );
    return ids.includes(firstId) ? firstId : null;
  }

  /** Every schedule of the namespace, ordered by id, with its latest enqueued occurrence's run time. */
  list(): Promise<RecurringScheduleListed[]> {
    return this.options.backend.recurring.list();
  }

  /** Deletes schedule `scheduleId`; occurrences already enqueued stay. Resolves to false when there was none. */
  async delete(scheduleId: string): Promise<boolean> {
    checkScheduleId(scheduleId);
    return this.options.backend.recurring.delete({ id: scheduleId });
  }
}

/** The fields joined by single spaces: a schedule re-registered with other spacing is the same schedule. */
export function normalizeCron(cron: string): string {
  return cron.trim().split(/\s+/).join(" ");
}

function checkScheduleId(scheduleId: unknown): asserts scheduleId is string {
  const bad = nameProblem(scheduleId);
  if (bad !== null) throw new InvalidArgumentError(`recurring schedule id ${describeName(scheduleId)} ${bad}`);
}

function checkOptions(options: RecurringScheduleOptions): { timeZone: string; sequential: boolean } {
  if (options === null || typeof options !== "object") throw new InvalidArgumentError("recurring schedule options must be an object");
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw new InvalidArgumentError(`unknown recurring schedule option "${key}" (known: timeZone, sequential)`);
  }
  const sequential = options.sequential ?? false;
  if (typeof sequential !== "boolean") throw new InvalidArgumentError("the recurring schedule option `sequential` must be a boolean");
  // The time zone itself is checked by CronSchedule.parse, which names it in an InvalidCronError.
  return { timeZone: options.timeZone ?? "UTC", sequential };
}
