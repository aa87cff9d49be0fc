import type { TransactionHandle } from "../backend/backend.js";
import type { JobId } from "../core/job-id.js";
import { withShortForm, type EnqueueOptions } from "../publisher/enqueue-options.js";
import type { JobWaitResult, WaitForOptions } from "../publisher/job-waiter.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import { payloadValidator, type JobSpec } from "./job-catalog.js";

/**
 * The typed enqueue methods of one declared job, as `server.jobs.<name>` and
 * `ctx.jobs.<name>` of the generated module. `P` is the payload type from
 * `jobs.schema.ts`; `Trx` the caller-owned transactions the backend takes
 * (`SqliteTransaction`, `PostgresTransaction`), inferred from it by the
 * generated builder and publisher. Every method resolves once the job is
 * committed (or, for the `...In` methods, once it is written in the caller's
 * transaction).
 *
 * Every enqueue method takes the same optional last argument,
 * {@link EnqueueOptions} (`{ delayMs | runAt, parentId, retryPolicy }`); the named short
 * forms (`enqueueDelayed`, `enqueueDelayedAt`, `enqueueContinue`) are
 * `enqueue` with one of them given as an argument, and take the others:
 * `enqueueContinue(parent, payload, { delayMs: 60_000 })` is a delayed
 * continuation. Bad options reject with `INVALID_ARGUMENT` (an unknown key
 * is named) and write nothing. A job declared with `@topic` has a
 * {@link TopicJobHandle} instead, whose every method goes to its partition.
 *
 * Every method first checks each payload against the job's declared type
 * (the catalog's shape, see `payloadValidator`): a mismatch rejects with
 * `INVALID_ARGUMENT` naming the job and the path, and nothing is written
 * (`enqueueMany`: none of the payloads). This matters where TypeScript
 * cannot check: JavaScript callers and payloads parsed from JSON.
 */
export class JobHandle<P, Trx = TransactionHandle, R = unknown> {
  /** Throws `InvalidArgumentError` for a payload that does not match the declared type. */
  protected readonly check: (payload: unknown) => void;

  constructor(
    protected readonly publisher: JobPublisher<Trx>,
    /** The stored job type: the member name in the schema. */
    readonly jobType: string,
    protected readonly spec: JobSpec,
  ) {
    this.check = payloadValidator(jobType, spec);
  }

  /**
   * Resolves once job `jobId` (one of this type's) is terminal, with `{ stage,
   * result?, error? }`, `result` typed as this job's result (the schema's
   * `Results`; `unknown` without an entry), not checked at run time. Woken by
   * the commit, not by polling (X6, see `JobPublisher.waitFor`);
   * `WAIT_TIMEOUT` past `options.timeoutMs`, `JOB_NOT_FOUND` for an unknown id.
   */
  waitFor(jobId: JobId, options: WaitForOptions): Promise<JobWaitResult<R>> {
    return this.publisher.waitFor(jobId, options) as Promise<JobWaitResult<R>>;
  }

  /** Runs as soon as a worker is free, or as `options` say (a delay, a parent). */
  enqueue(payload: P, options?: EnqueueOptions): Promise<JobId> {
    return settle(() => {
      this.check(payload);
      return this.publisher.enqueue(this.jobType, payload, this.grouped(payload, options));
    });
  }

  /** Many jobs of this type in one transaction (one statement per backend), each with `options`; one bad payload and none is written. */
  enqueueMany(payloads: readonly P[], options?: EnqueueOptions): Promise<JobId[]> {
    return settle(() => {
      if (Array.isArray(payloads)) for (const payload of payloads) this.check(payload);
      const field = this.spec.group;
      if (field === undefined || !Array.isArray(payloads) || ownGroup(options)) return this.publisher.enqueueMany(this.jobType, payloads, options);
      return this.publisher.enqueueManyInGroups(
        this.jobType,
        payloads,
        payloads.map((p) => groupOf(p, field)),
        options,
      );
    });
  }

  /** Runs no earlier than `delayMs` from now; holds no worker while it waits. `enqueue(payload, { delayMs })`. */
  enqueueDelayed(payload: P, delayMs: number, options?: Omit<EnqueueOptions, "delayMs" | "runAt">): Promise<JobId> {
    return settle(() => {
      this.check(payload);
      return this.publisher.enqueue(this.jobType, payload, withShortForm("enqueueDelayed", this.grouped(payload, options), { delayMs }));
    });
  }

  /** Runs no earlier than `runAt` (a past time means now). `enqueue(payload, { runAt })`. */
  enqueueDelayedAt(payload: P, runAt: Date, options?: Omit<EnqueueOptions, "delayMs" | "runAt">): Promise<JobId> {
    return settle(() => {
      this.check(payload);
      return this.publisher.enqueue(this.jobType, payload, withShortForm("enqueueDelayedAt", this.grouped(payload, options), { runAt }));
    });
  }

  /**
   * Runs after job `parentId` succeeds (and, with `options.delayMs` or
   * `runAt`, not before that time either); fails with it if it fails for
   * good. Unknown parent: `ParentNotFoundError`. `enqueue(payload, { parentId })`.
   * An array of ids is a fan-in (X5): runs once every parent succeeded,
   * fails with the first parent that fails for good; at most 1,000 ids,
   * repeats folded.
   */
  enqueueContinue(parentId: JobId | readonly JobId[], payload: P, options?: Omit<EnqueueOptions, "parentId">): Promise<JobId> {
    return settle(() => {
      this.check(payload);
      return this.publisher.enqueue(this.jobType, payload, withShortForm("enqueueContinue", this.grouped(payload, options), { parentId }));
    });
  }

  /**
   * Writes the job in the application's own transaction: it exists only if
   * that transaction commits. SQLite takes a Kysely transaction on the same
   * file; PostgreSQL a Kysely transaction or a `pg` client inside `BEGIN`.
   */
  enqueueIn(transaction: Trx, payload: P, options?: EnqueueOptions): Promise<JobId> {
    return settle(() => {
      this.check(payload);
      return this.publisher.enqueueIn(transaction, this.jobType, payload, this.grouped(payload, options));
    });
  }

  /**
   * X9: `options` with `group` taken from the payload field the schema's
   * `@group` names, when the job has one and `options` give no group of
   * their own; else `options` as given (anything but an object is left for
   * the publisher to refuse). A field value that is not a group (not a
   * string of 1 to 200 characters) is refused there, naming `group`.
   */
  protected grouped<O extends EnqueueOptions>(payload: P, options: O | undefined): O | undefined {
    const field = this.spec.group;
    if (field === undefined || ownGroup(options)) return options;
    return { ...(options ?? {}), group: groupOf(payload, field) } as O;
  }

  /**
   * Upserts a cron schedule by `scheduleId`: 6 fields, seconds first
   * (`"0 0 6 1 * *"`: 06:00 on the 1st of every month), read in
   * `options.timeZone` (an IANA name; default `"UTC"`). Resolves to the
   * first occurrence's job id, or `null` when the schedule already existed
   * with this cron and time zone: its payload is updated for later
   * occurrences and nothing is enqueued, so calling this on every start-up
   * is the intended use. A new cron enqueues a fresh first occurrence.
   * Every running server enqueues each later occurrence once, whether or not
   * the previous one finished, so occurrences may overlap. An invalid cron
   * or time zone rejects with `InvalidCronError` naming it; nothing is written.
   */
  enqueueRecurring(scheduleId: string, payload: P, cron: string, options?: { timeZone?: string }): Promise<JobId | null> {
    return settle(() => {
      this.check(payload);
      return this.publisher.enqueueRecurring(this.jobType, scheduleId, payload, cron, recurringOptions(options, false));
    });
  }

  /**
   * As {@link enqueueRecurring}, but occurrences never overlap: they run one
   * at a time, in order, on one partition of the reserved topic
   * `__later_recurring` (keyed by `scheduleId`), together with the jobs
   * chained off them by {@link enqueueRecurringContinue}. An occurrence due
   * while the previous one still runs waits for it. Needs the option
   * `recurringSequentialPartitions`, else rejects with `InvalidConfigError`.
   * The first occurrence's id is reserved: its job is stored when it comes due.
   */
  enqueueRecurringSequential(scheduleId: string, payload: P, cron: string, options?: { timeZone?: string }): Promise<JobId | null> {
    return settle(() => {
      this.check(payload);
      return this.publisher.enqueueRecurring(this.jobType, scheduleId, payload, cron, recurringOptions(options, true));
    });
  }

  /**
   * Chains a follow-up job off `parentId` — normally the running recurring
   * occurrence (`ctx.jobId`): it runs after the parent succeeds, and for a
   * sequential occurrence it joins the occurrence's partition, ahead of the
   * next occurrence, so the two never overlap. Unknown parent:
   * `ParentNotFoundError`.
   */
  enqueueRecurringContinue(parentId: JobId, payload: P): Promise<JobId> {
    return settle(() => {
      this.check(payload);
      return this.publisher.enqueueRecurringContinue(this.jobType, parentId, payload);
    });
  }
}

/** Turns a synchronous throw (bad options, a bad key) into a rejection, as every enqueue method reports errors. */
export function settle<R>(body: () => Promise<R>): Promise<R> {
  try {
    return body();
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The publisher's options; anything but an object is left for it to refuse. */
function recurringOptions(options: { timeZone?: string } | undefined, sequential: boolean): { timeZone?: string; sequential: boolean } {
  if (options === undefined) return { sequential };
  if (options === null || typeof options !== "object") return options as never;
  return { ...options, sequential };
}

/** Whether `options` name a group themselves, or are no options object (left for the publisher to refuse). */
function ownGroup(options: unknown): boolean {
  if (options === undefined) return false;
  if (options === null || typeof options !== "object") return true;
  return (options as EnqueueOptions).group !== undefined;
}

/** The value of the `@group` field of `payload` (checked by the publisher as `EnqueueOptions.group`). */
function groupOf(payload: unknown, field: string): string {
  return (payload as Record<string, unknown>)[field] as string;
}
