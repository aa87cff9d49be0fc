import type { Backend, JobInsert, PartitionRef, TransactionHandle } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import type { JobStage } from "../core/job-stage.js";
import type { JobId } from "../core/job-id.js";
import type { RetryPolicy } from "../core/retry/retry-policy.js";
import { partitionForKey, type PartitionKey } from "../core/partition/partition-for-key.js";
import { transactionRefusal } from "../backend/transaction-refusal.js";
import { InvalidArgumentError, ParentNotFoundError, ServerStoppedError, UnknownTopicError } from "../errors.js";
import { RECURRING_SEQUENTIAL_TOPIC } from "../core/partition/topic.js";
import { RecurringScheduler, type RecurringScheduleOptions } from "../recurring/recurring-scheduler.js";
import { JobController, type JobActionListener, type JobBatchOptions, type JobCancelBatchOptions, type JobFilter } from "./job-controller.js";
import { checkEnqueueOptions, type EnqueueOptions } from "./enqueue-options.js";
import { JobInserter, type UniqueEnqueueResult } from "./job-inserter.js";
import { JobWaiter, type JobWaitResult, type WaitForOptions } from "./job-waiter.js";
import { PauseController, type PausedEntry, type PauseListener, type PauseTarget } from "./pause-controller.js";
import { checkMiddleware, enqueueChain, type LaterMiddleware } from "../middleware/later-middleware.js";

export type { EnqueueOptions } from "./enqueue-options.js";
export type { UniqueEnqueueResult } from "./job-inserter.js";

/** What every backend's `enqueueIn` takes, for the message when none is given. */
const TRANSACTION_WANTED = "a transaction of the application's own (db.transaction().execute(trx => ...)), the jobs committing with it";

/** Where a partitioned job goes: its topic, and the key that picks the partition (or the partition itself). */
export type PartitionTarget = { topic: string; key: PartitionKey } | { topic: string; partition: number };

/** What a {@link JobPublisher} is built from (by the server, or `TypedJobPublisher.open`). */
export interface JobPublisherOptions<Trx = TransactionHandle> {
  backend: Backend<Trx>;
  clock: Clock;
  /**
   * Stored with every job enqueued without its own `retryPolicy`, so it wins
   * over the running server's policy; null (the servers' own publishers, and
   * a typed publisher opened without one) stores none: the job then follows
   * the policy of the server that runs it.
   */
  defaultRetryPolicy: RetryPolicy | null;
  /** Payload encoder per known job type. */
  encoders: ReadonlyMap<string, (payload: unknown) => string>;
  /** Registered topics: name → partition count. */
  topics: ReadonlyMap<string, number>;
  /** Retention given to jobs this publisher fails (`forceFailPartitionHead`) or stores failed (a continuation of a failed parent). */
  retentionMs: number;
  /** J11: the `cancelledMs` of job types that set one, for the jobs this publisher cancels (theirs down the chain too). Default none. */
  cancelledMsByType?: Readonly<Record<string, number>>;
  /**
   * Called after each local commit with the new jobs and the stage each
   * was stored in (`enqueued`, `delayed`, `waiting`, or `failed` under a
   * failed parent): the server wakes local workers and emits events.
   */
  onCommitted: (jobs: readonly JobInsert[], stages: readonly JobStage[]) => void;
  /** Called after each committed retry or delete (a batch of a filter form each): the server wakes local workers and emits a `job-action` event. */
  onJobAction?: JobActionListener | undefined;
  /** Called after each pause or resume that changed something (X4): the server reads the paused set again and wakes its loops. */
  onPauseChange?: PauseListener | undefined;
  /** The `enqueue` hooks of these run around every enqueue (X10), the first outermost. Not such objects: `INVALID_ARGUMENT` naming the index. Default none. */
  middleware?: readonly LaterMiddleware[] | undefined;
  /**
   * J15: plain enqueues of concurrent callers written together, and unique ones (X2) together in one
   * transaction (default true). False writes each enqueue on its own, as before J15 (the benchmarks
   * compare the two).
   */
  coalesce?: boolean | undefined;
  /** X2: a unique enqueue replaced a job's payload and made it due now (`replace` of a delayed job): the server wakes local workers. */
  onReady?: (() => void) | undefined;
}

/**
 * Enqueues jobs by job type (untyped). The generated module wraps this with
 * one typed handle per job; applications normally use that. `Trx`: the
 * caller-owned transactions `enqueueIn` takes, the backend's.
 */
export class JobPublisher<Trx = TransactionHandle> {
  private stopped = false;
  private readonly backend: Backend<Trx>;
  private readonly clock: Clock;
  private readonly recurring: RecurringScheduler;
  private readonly controller: JobController;
  private readonly waiter: JobWaiter;
  private readonly pauses: PauseController;
  /** Every enqueue's checks, rows and write. */
  private readonly inserter: JobInserter<Trx>;

  constructor(private readonly options: JobPublisherOptions<Trx>) {
    this.backend = options.backend;
    const middleware = checkMiddleware(options.middleware, "JobPublisher options");
    const throughMiddleware = enqueueChain(middleware);
    this.clock = options.clock;
    this.inserter = new JobInserter(options, throughMiddleware);
    this.controller = new JobController(options.backend, options.clock, options.onJobAction ?? (() => {}), options.retentionMs, options.cancelledMsByType);
    this.waiter = new JobWaiter(options.backend, options.clock);
    this.pauses = new PauseController(options.backend, () => options.clock.now(), options.encoders, options.onPauseChange ?? (() => {}));
    this.recurring = new RecurringScheduler({
      backend: options.backend,
      clock: options.clock,
      encoders: options.encoders,
      defaultRetryPolicy: options.defaultRetryPolicy,
      sequentialPartitions: options.topics.get(RECURRING_SEQUENTIAL_TOPIC) ?? null,
      throughMiddleware,
    });
  }

  /**
   * Upserts the recurring schedule `scheduleId` of `jobType` on a six-field
   * cron (seconds first) read in `options.timeZone` (default UTC), and
   * resolves to the first occurrence's job id, or `null` when the schedule
   * already existed with this cron, time zone and mode (its payload is
   * updated): safe to call on every start-up. With `sequential`,
   * occurrences never overlap (needs `recurringSequentialPartitions`).
   * Every server's poller enqueues the later occurrences, each once. An
   * invalid cron or time zone throws `InvalidCronError` naming it; nothing
   * is written. See {@link RecurringScheduler.upsert}.
   */
  async enqueueRecurring(jobType: string, scheduleId: string, payload: unknown, cron: string, options: RecurringScheduleOptions = {}): Promise<JobId | null> {
    if (this.stopped) throw new ServerStoppedError(`enqueueRecurring of "${jobType}"`);
    return this.recurring.upsert(jobType, scheduleId, payload, cron, options);
  }

  /** Deletes the recurring schedule `scheduleId`; occurrences already enqueued stay. Resolves to false when there was none. */
  async deleteRecurring(scheduleId: string): Promise<boolean> {
    if (this.stopped) throw new ServerStoppedError("deleteRecurring");
    return this.recurring.delete(scheduleId);
  }

  /**
   * Enqueue one job; resolves to its id once committed. With a `uniqueKey`
   * (X2) the id is the job that stands for the enqueue: the new one, or the
   * key's unfinished job (see {@link enqueueUnique}, which says which).
   */
  async enqueue(jobType: string, payload: unknown, options: EnqueueOptions = {}): Promise<JobId> {
    const [id] = await this.enqueueMany(jobType, [payload], options);
    return id!;
  }

  /**
   * X2: {@link enqueue} with a unique key (`options.uniqueKey`, required),
   * resolving to the job that stands for it and what happened: `inserted`
   * (a new job), `existing` (nothing written: the key's unfinished job),
   * `replaced` (the key's job not started yet took the new payload, and
   * with `uniqueMode: "replace"` the new run time). Race-safe across
   * processes (a unique index decides, not a read before the write). Not
   * in a caller's transaction, not partitioned, not a continuation.
   */
  async enqueueUnique(jobType: string, payload: unknown, options: EnqueueOptions): Promise<UniqueEnqueueResult> {
    const checked = checkEnqueueOptions(options, "enqueueUnique");
    if (checked.uniqueKey === undefined) throw new InvalidArgumentError("enqueueUnique: options.uniqueKey is required");
    if (this.stopped) throw new ServerStoppedError(`enqueue of "${jobType}"`);
    return this.inserter.insertUnique(jobType, payload, checked);
  }

  /** Enqueue many jobs of one type in one transaction. */
  async enqueueMany(jobType: string, payloads: readonly unknown[], options: EnqueueOptions = {}): Promise<JobId[]> {
    return this.insert(jobType, payloads, options, undefined);
  }

  /**
   * X9: {@link enqueueMany} with a group per payload (`groups[i]` for
   * `payloads[i]`, each checked as `EnqueueOptions.group`): what the
   * generated handle of a job with `@group` calls when `options` name no
   * group. Any bad group: `INVALID_ARGUMENT` naming it, nothing written.
   */
  async enqueueManyInGroups(jobType: string, payloads: readonly unknown[], groups: readonly string[], options: EnqueueOptions = {}): Promise<JobId[]> {
    if (!Array.isArray(groups) || groups.length !== payloads.length) throw new InvalidArgumentError("enqueueMany: one group per payload");
    for (const [i, group] of groups.entries()) checkEnqueueOptions({ group }, `enqueueMany (payload ${i})`);
    return this.insert(jobType, payloads, options, undefined, undefined, groups);
  }

  /**
   * Enqueue inside a caller-owned transaction: the job exists only if that
   * transaction commits. SQLite takes a Kysely transaction on the same file;
   * PostgreSQL a Kysely transaction or the `pg` client the caller ran
   * `BEGIN` on (never a pool). Another value is a compile error where the
   * backend's type is known, and `InvalidArgumentError` at run time.
   */
  async enqueueIn(transaction: Trx, jobType: string, payload: unknown, options: EnqueueOptions = {}): Promise<JobId> {
    if (transaction === undefined || transaction === null) throw transactionRefusal("enqueueIn", TRANSACTION_WANTED, transaction);
    const [id] = await this.insert(jobType, [payload], options, transaction);
    return id!;
  }

  /**
   * Appends a job to a partition of a registered topic: it runs after every
   * earlier job of that partition has finished (succeeded or failed for
   * good). `options` delay it (a delayed head blocks its partition until its
   * time) or make it a continuation. An unregistered topic throws
   * `UnknownTopicError` before anything is written.
   */
  async enqueueToPartition(jobType: string, payload: unknown, target: PartitionTarget, options: EnqueueOptions = {}): Promise<JobId> {
    const [id] = await this.insert(jobType, [payload], options, undefined, this.resolvePartition(target));
    return id!;
  }

  /**
   * {@link enqueueToPartition} for many jobs of one type in one transaction:
   * each item goes to the partition of its own target, appended in the
   * order given (items of one partition keep their order). Every target is
   * resolved first: an unregistered topic or a bad key throws before
   * anything is written, and so does a payload that cannot be stored.
   */
  async enqueueManyToPartition(
    jobType: string,
    items: readonly { payload: unknown; target: PartitionTarget }[],
    options: EnqueueOptions = {},
  ): Promise<JobId[]> {
    if (!Array.isArray(items)) throw new InvalidArgumentError("enqueueManyToPartition: items must be an array of { payload, target }");
    const partitions = items.map((item) => {
      if (item === null || typeof item !== "object") throw new InvalidArgumentError("enqueueManyToPartition: each item is { payload, target }");
      return this.resolvePartition(item.target);
    });
    return this.insert(
      jobType,
      items.map((item) => item.payload),
      options,
      undefined,
      partitions,
    );
  }

  /** {@link enqueueToPartition} inside a caller-owned transaction (the sequence is taken in it too). */
  async enqueueToPartitionIn(transaction: Trx, jobType: string, payload: unknown, target: PartitionTarget, options: EnqueueOptions = {}): Promise<JobId> {
    if (transaction === undefined || transaction === null) throw transactionRefusal("enqueueToPartitionIn", TRANSACTION_WANTED, transaction);
    const [id] = await this.insert(jobType, [payload], options, transaction, this.resolvePartition(target));
    return id!;
  }

  /**
   * Chains a job off `parentId` (normally the running recurring occurrence,
   * `ctx.jobId`): it runs after the parent succeeds and, when the parent is a
   * partitioned job (a sequential recurring occurrence), it joins the
   * parent's partition, so it runs before any later occurrence there and
   * never beside one. A parent without a partition gives a plain
   * continuation. An unknown parent throws `ParentNotFoundError`.
   */
  async enqueueRecurringContinue(jobType: string, parentId: JobId, payload: unknown): Promise<JobId> {
    if (typeof parentId !== "string" || parentId === "") throw new InvalidArgumentError("parent job id must be a non-empty string");
    const parent = await this.backend.inspect.jobGet({ id: parentId });
    if (!parent) throw new ParentNotFoundError(parentId);
    const options = { parentId };
    if (parent.topic === null || parent.partition === null) return this.enqueue(jobType, payload, options);
    const [id] = await this.insert(jobType, [payload], options, undefined, { topic: parent.topic, partition: parent.partition });
    return id!;
  }

  /**
   * Fails the head of a partition at once (a poison job, or one to skip),
   * without waiting for its retries or holding its lease, and frees the
   * partition; its waiting continuations fail with it. A claim still running
   * it loses its lease: its signal aborts and its outcome is discarded.
   * Resolves to the failed job's id, or null when the partition is empty.
   */
  async forceFailPartitionHead(target: PartitionTarget, reason = "failed by forceFailPartitionHead"): Promise<string | null> {
    if (typeof reason !== "string") throw new InvalidArgumentError("forceFailPartitionHead: reason must be a string");
    const ref = this.resolvePartition(target);
    return this.backend.partitions.headForceFail({ ...ref, reason, now: this.clock.now(), retentionMs: this.options.retentionMs });
  }

  /** Deletes a partition's finished jobs but the newest `keep` (by sequence). Resolves to how many were deleted. */
  async truncatePartitionHistory(target: PartitionTarget, keep: number): Promise<number> {
    if (!Number.isInteger(keep) || keep < 0) throw new InvalidArgumentError(`truncatePartitionHistory: keep must be an integer >= 0, got ${String(keep)}`);
    return this.backend.partitions.historyTruncate({ ...this.resolvePartition(target), keep });
  }

  /** The partition a target names; throws `UnknownTopicError` or `InvalidArgumentError`. */
  resolvePartition(target: PartitionTarget): PartitionRef {
    if (target === null || typeof target !== "object" || typeof target.topic !== "string")
      throw new InvalidArgumentError("a partition target is { topic, key } or { topic, partition }");
    const partitions = this.options.topics.get(target.topic);
    if (partitions === undefined) throw new UnknownTopicError(target.topic);
    if ("key" in target) return { topic: target.topic, partition: partitionForKey(target.key, partitions) };
    const p = target.partition;
    if (!Number.isInteger(p) || p < 0 || p >= partitions)
      throw new InvalidArgumentError(`topic "${target.topic}" has partitions 0 to ${partitions - 1}, not ${String(p)}`);
    return { topic: target.topic, partition: p };
  }

  /**
   * Puts a `failed` (or `cancelled`) job back to `enqueued`, ready now, its stage history
   * kept; a partitioned one goes to the end of its partition. The attempt
   * count goes on (one more attempt under its policy). Another stage is
   * `JOB_ACTION_REFUSED`, an unknown id `JOB_NOT_FOUND`; both change
   * nothing. See `JobController` for the whole contract.
   */
  async retry(jobId: JobId): Promise<void> {
    if (this.stopped) throw new ServerStoppedError("retry");
    return this.controller.retry(jobId);
  }

  /**
   * Cancels an unfinished job (docs/semantics.md X3): `enqueued`, `delayed`,
   * `waiting`, `requeued` end `cancelled` at once; a `running` one too, and
   * its attempt's `ctx.signal` aborts with `JobCancelledError` within one
   * lease-renewal interval, wherever it runs, its result discarded. Its
   * waiting continuations are cancelled with it. `reason` is noted in the
   * history. Resolves true when it cancelled, false for a finished job; an
   * unknown id is `JOB_NOT_FOUND`. See `JobController`.
   */
  async cancel(jobId: JobId, reason?: string): Promise<boolean> {
    if (this.stopped) throw new ServerStoppedError("cancel");
    return this.controller.cancel(jobId, reason);
  }

  /**
   * {@link cancel} for every unfinished job matching `filter` (`{ stage,
   * jobType }`; default: every unfinished job), in batches of `batchSize`
   * (default 1000); resolves to how many were cancelled (their waiting
   * continuations, cancelled with them, not counted).
   */
  async cancelJobs(filter?: JobFilter, options?: JobCancelBatchOptions): Promise<number> {
    if (this.stopped) throw new ServerStoppedError("cancelJobs");
    return this.controller.cancelJobs(filter, options);
  }

  /** Deletes a finished job (`success`, `failed` or `cancelled`) with its history. Another stage is `JOB_ACTION_REFUSED`, an unknown id `JOB_NOT_FOUND`. */
  async delete(jobId: JobId): Promise<void> {
    if (this.stopped) throw new ServerStoppedError("delete");
    return this.controller.delete(jobId);
  }

  /**
   * {@link retry} for every `failed` job matching `filter` (`{ jobType }`;
   * default: all), in batches of `batchSize` (default 1000) each in its own
   * transaction; resolves to how many were retried.
   */
  async retryJobs(filter?: JobFilter, options?: JobBatchOptions): Promise<number> {
    if (this.stopped) throw new ServerStoppedError("retryJobs");
    return this.controller.retryJobs(filter, options);
  }

  /**
   * {@link delete} for every finished job matching `filter` (`{ stage:
   * "success" | "failed", jobType }`; default: every finished job), in
   * batches of `batchSize` (default 1000); resolves to how many were deleted.
   */
  async deleteJobs(filter?: JobFilter, options?: JobBatchOptions): Promise<number> {
    if (this.stopped) throw new ServerStoppedError("deleteJobs");
    return this.controller.deleteJobs(filter, options);
  }

  /**
   * Resolves once job `jobId` is in a terminal stage, with `{ stage, result?,
   * error? }` (docs/semantics.md X6): `result` the handler's resolved value
   * (none: absent), `error` the last attempt's error of a job that did not
   * succeed. Already terminal: at once. Woken by the commit that ends the
   * job (PostgreSQL: LISTEN on the namespace's done channel, one connection
   * per backend opened by the first call; SQLite: the WAL watcher), with a
   * slow safety poll (`safetyPollMs`, default 2 s) for missed wake-ups.
   * Rejects with `WaitTimeoutError` (`WAIT_TIMEOUT`) past `timeoutMs`,
   * `JobNotFoundError` (`JOB_NOT_FOUND`) for an id the namespace does not
   * hold (never enqueued, deleted, or expired before it was read), and
   * `INVALID_ARGUMENT` for a bad id or options. See `JobWaiter`.
   */
  async waitFor(jobId: JobId, options: WaitForOptions): Promise<JobWaitResult> {
    if (this.stopped) throw new ServerStoppedError("waitFor");
    return this.waiter.waitFor(jobId, options);
  }

  /**
   * Pauses a job type (`{ jobType }`) or a topic (`{ topic }`) on every
   * server of the namespace, within one poll interval (docs/semantics.md
   * X4): running jobs finish, no new claim starts, enqueue still works.
   * Resolves true when it changed something, false when it already was
   * paused. An unknown job type is `JOB_TYPE_NOT_FOUND`, an unknown topic
   * `UNKNOWN_TOPIC`; nothing is written. See `PauseController`.
   */
  async pause(target: PauseTarget): Promise<boolean> {
    if (this.stopped) throw new ServerStoppedError("pause");
    return this.pauses.pause(target);
  }

  /** Resumes what {@link pause} paused and wakes every server at once; false when it was not paused. */
  async resume(target: PauseTarget): Promise<boolean> {
    if (this.stopped) throw new ServerStoppedError("resume");
    return this.pauses.resume(target);
  }

  /** Every paused job type and topic of the namespace, with when each was paused. */
  async listPaused(): Promise<PausedEntry[]> {
    return this.pauses.listPaused();
  }

  /** Stops accepting jobs; later calls throw `ServerStoppedError`, and pending `waitFor` calls reject with it. */
  stop(): void {
    this.stopped = true;
    this.waiter.stop();
  }

  /** {@link JobInserter.insert}, once the publisher is known not to be stopped. */
  private async insert(
    jobType: string,
    payloads: readonly unknown[],
    options: EnqueueOptions,
    transaction: Trx | undefined,
    partition?: PartitionRef | readonly PartitionRef[],
    groups?: readonly string[],
  ): Promise<JobId[]> {
    if (this.stopped) throw new ServerStoppedError(`enqueue of "${jobType}"`);
    return this.inserter.insert(jobType, payloads, options, transaction, partition, groups);
  }
}
