import type { TransactionHandle } from "../backend/backend.js";
import type { JobId } from "../core/job-id.js";
import { partitionForKey, type PartitionKey } from "../core/partition/partition-for-key.js";
import { InvalidArgumentError } from "../errors.js";
import type { EnqueueOptions, JobPublisher } from "../server/publisher.js";
import type { JobSpec } from "./job-catalog.js";

/**
 * The typed enqueue methods of one declared job, as `server.jobs.<name>` and
 * `ctx.jobs.<name>` of the generated module. `P` is the payload type from
 * `jobs.schema.ts`; `Trx` the caller-owned transactions the backend takes
 * (`SqliteTransaction`, `PostgresTransaction`), inferred from it by the
 * generated builder and publisher. Every method resolves once the job is
 * committed (or, for the `...In` methods, once it is written in the caller's
 * transaction).
 */
export class JobHandle<P, Trx = TransactionHandle> {
  constructor(
    protected readonly publisher: JobPublisher<Trx>,
    /** The stored job type: the member name in the schema. */
    readonly jobType: string,
    protected readonly spec: JobSpec,
  ) {}

  /** Fire and forget: runs as soon as a worker is free. */
  enqueue(payload: P): Promise<JobId> {
    return this.publisher.enqueue(this.jobType, payload);
  }

  /** Many jobs of this type in one transaction (one statement per backend). */
  enqueueMany(payloads: readonly P[]): Promise<JobId[]> {
    return this.publisher.enqueueMany(this.jobType, payloads);
  }

  /** Runs no earlier than `delayMs` from now; holds no worker while it waits. */
  enqueueDelayed(payload: P, delayMs: number): Promise<JobId> {
    return this.publisher.enqueue(this.jobType, payload, { delayMs });
  }

  /** Runs no earlier than `runAt` (a past time means now). */
  enqueueDelayedAt(payload: P, runAt: Date): Promise<JobId> {
    return this.publisher.enqueue(this.jobType, payload, { runAt });
  }

  /** Runs after job `parentId` succeeds; fails with it if it fails for good. Unknown parent: `ParentNotFoundError`. */
  enqueueContinue(parentId: JobId, payload: P): Promise<JobId> {
    return this.publisher.enqueue(this.jobType, payload, { parentId });
  }

  /**
   * Writes the job in the application's own transaction: it exists only if
   * that transaction commits. SQLite takes a Kysely transaction on the same
   * file; PostgreSQL a Kysely transaction or a `pg` client inside `BEGIN`.
   */
  enqueueIn(transaction: Trx, payload: P, options?: EnqueueOptions): Promise<JobId> {
    return this.publisher.enqueueIn(transaction, this.jobType, payload, options);
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
    return this.publisher.enqueueRecurring(this.jobType, scheduleId, payload, cron, recurringOptions(options, false));
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
    return this.publisher.enqueueRecurring(this.jobType, scheduleId, payload, cron, recurringOptions(options, true));
  }

  /**
   * Chains a follow-up job off `parentId` — normally the running recurring
   * occurrence (`ctx.jobId`): it runs after the parent succeeds, and for a
   * sequential occurrence it joins the occurrence's partition, ahead of the
   * next occurrence, so the two never overlap. Unknown parent:
   * `ParentNotFoundError`.
   */
  enqueueRecurringContinue(parentId: JobId, payload: P): Promise<JobId> {
    return this.publisher.enqueueRecurringContinue(this.jobType, parentId, payload);
  }
}

/**
 * A job declared with `@topic` and `@partitionKey`: besides the plain
 * methods, it can go to its topic, where the payload's key picks the
 * partition and jobs of one partition run strictly in enqueue order.
 */
export class TopicJobHandle<P, Trx = TransactionHandle> extends JobHandle<P, Trx> {
  /** The topic name from `@topic`. */
  get topic(): string {
    return this.spec.topic!;
  }

  /** Appends to the partition of the payload's key (the `@partitionKey` field): it runs after every earlier job there has finished. */
  enqueueToPartition(payload: P): Promise<JobId> {
    return this.call(() => this.publisher.enqueueToPartition(this.jobType, payload, this.target(payload)));
  }

  /** Appends to the partition now; the job, once it is the head, waits `delayMs` and blocks the partition meanwhile. */
  enqueueToPartitionDelayed(payload: P, delayMs: number): Promise<JobId> {
    return this.call(() => this.publisher.enqueueToPartition(this.jobType, payload, this.target(payload), { delayMs }));
  }

  /** Appends to the partition as a continuation of `parentId` (which may be anywhere): as the head it waits for the parent to succeed. */
  enqueueContinueToPartition(parentId: JobId, payload: P): Promise<JobId> {
    return this.call(() => this.publisher.enqueueToPartition(this.jobType, payload, this.target(payload), { parentId }));
  }

  /** Appends to the partition inside the application's own transaction (the sequence is taken there too). */
  enqueueToPartitionIn(transaction: Trx, payload: P): Promise<JobId> {
    return this.call(() => this.publisher.enqueueToPartitionIn(transaction, this.jobType, payload, this.target(payload)));
  }

  /** The payload's partition key field, validated by `partitionForKey` later. */
  private target(payload: P): { topic: string; key: PartitionKey } {
    const field = this.spec.partitionKey!;
    const key = payload !== null && typeof payload === "object" ? (payload as Record<string, unknown>)[field] : undefined;
    if (typeof key !== "string" && typeof key !== "number" && typeof key !== "bigint") {
      throw new InvalidArgumentError(
        `"${this.jobType}": the partition key field "${field}" must be a string or an integer, got ${key === null ? "null" : typeof key}`,
      );
    }
    try {
      partitionForKey(key, 1); // the key's own checks, here so that the error names the field
    } catch (error) {
      throw new InvalidArgumentError(`"${this.jobType}": the partition key field "${field}": ${(error as Error).message}`);
    }
    return { topic: this.topic, key };
  }

  /** Turns a synchronous throw (bad key, unknown topic) into a rejection, as every other enqueue method reports errors. */
  private call<R>(body: () => Promise<R>): Promise<R> {
    try {
      return body();
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/** The publisher's options; anything but an object is left for it to refuse. */
function recurringOptions(options: { timeZone?: string } | undefined, sequential: boolean): { timeZone?: string; sequential: boolean } {
  if (options === undefined) return { sequential };
  if (options === null || typeof options !== "object") return options as never;
  return { ...options, sequential };
}
