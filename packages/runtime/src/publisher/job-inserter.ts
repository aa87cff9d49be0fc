import type { Backend, JobInsert, JobInsertUniqueParams, JobInsertUniqueResult, PartitionRef, TransactionHandle } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import type { JobStage } from "../core/job-stage.js";
import { newJobId, type JobId } from "../core/job-id.js";
import { type RetryPolicy, storedRetryPolicy } from "../core/retry/retry-policy.js";
import { encodePayload } from "../core/encode-payload.js";
import { InvalidArgumentError } from "../errors.js";
import { checkEnqueueOptions, parentsOf, runAtOf, type EnqueueOptions } from "./enqueue-options.js";
import { InsertCoalescer } from "./insert-coalescer.js";
import { encodeMeta, type EnqueueJobContext, type PendingEnqueue } from "../middleware/later-middleware.js";

/** What {@link JobPublisher.enqueueUnique} resolves to (X2). */
export interface UniqueEnqueueResult {
  /** The job standing for the enqueue: the new one (`inserted`), or the key's unfinished job. */
  id: JobId;
  outcome: "inserted" | "existing" | "replaced";
}

/** The largest call whose jobs are coalesced with other callers' (a larger one is a batch already, written alone). */
const COALESCED_MAX = 100;

/** A job that can fail only with the whole database: no parent to find, no partition to take a sequence of. */
const isPlain = (job: JobInsert): boolean => !job.parentId && !job.parentIds && job.topic === undefined;

/** What a {@link JobInserter} uses of its publisher's options (`JobPublisherOptions`, which say what each is). */
export interface JobInserterOptions<Trx = TransactionHandle> {
  backend: Backend<Trx>;
  clock: Clock;
  defaultRetryPolicy: RetryPolicy | null;
  encoders: ReadonlyMap<string, (payload: unknown) => string>;
  retentionMs: number;
  onCommitted: (jobs: readonly JobInsert[], stages: readonly JobStage[]) => void;
  coalesce?: boolean | undefined;
  onReady?: (() => void) | undefined;
}

/**
 * The write side of every enqueue of a {@link JobPublisher}: it checks the
 * options, builds the stored rows (id, encoded payload, run time, parents,
 * retry policy, partition, priority, group), runs them through the enqueue
 * middleware (X10), and writes them: a few plain jobs (no parent, no
 * partition, not in a caller's transaction) through the
 * {@link InsertCoalescer} with other callers' (J15), the rest alone, and
 * unique enqueues (X2) through the backend's `insertUniqueMany`, concurrent
 * ones together through a coalescer of their own. Every commit
 * outside a caller's transaction reaches `onCommitted`. The publisher
 * checks that it is not stopped before calling.
 */
export class JobInserter<Trx = TransactionHandle> {
  private readonly backend: Backend<Trx>;
  private readonly clock: Clock;
  /** Concurrent plain enqueues, written together (group commit). */
  private readonly coalescer: InsertCoalescer | null;
  /** Concurrent unique enqueues, written together in one transaction (each sees the ones before it). */
  private readonly uniqueCoalescer: InsertCoalescer<JobInsertUniqueParams, JobInsertUniqueResult> | null;

  constructor(
    private readonly options: JobInserterOptions<Trx>,
    /** The enqueue middleware around {@link write}; null without any (a plain enqueue then builds no context). */
    private readonly throughMiddleware: ((ctx: PendingEnqueue) => Promise<JobId[]>) | null,
  ) {
    this.backend = options.backend;
    this.clock = options.clock;
    this.coalescer =
      options.coalesce === false
        ? null
        : new InsertCoalescer(async (jobs, now) => (await this.backend.jobs.insertMany({ jobs, now, retentionMs: options.retentionMs })).stages);
    this.uniqueCoalescer =
      options.coalesce === false
        ? null
        : new InsertCoalescer<JobInsertUniqueParams, JobInsertUniqueResult>(
            async (inserts) => (await this.backend.jobs.insertUniqueMany({ inserts })).results,
            COALESCED_MAX,
          );
  }

  async insert(
    jobType: string,
    payloads: readonly unknown[],
    options: EnqueueOptions,
    transaction: Trx | undefined,
    /** One partition for every job, or one per job (by index). */
    partition?: PartitionRef | readonly PartitionRef[],
    /** X9: one group per job (by index), checked; wins over `options.group`. */
    groups?: readonly string[],
  ): Promise<JobId[]> {
    const encode = this.options.encoders.get(jobType);
    if (!encode) throw new InvalidArgumentError(`unknown job type "${jobType}": no handler is registered for it`);
    if (!Array.isArray(payloads)) throw new InvalidArgumentError("enqueueMany: payloads must be an array");
    const method = partition === undefined ? "enqueue" : "enqueueToPartition";
    const checked = checkEnqueueOptions(options, method);
    if (partition !== undefined && checked.priority !== undefined) {
      throw new InvalidArgumentError(`${method}: priority is not for partitioned jobs, which run in strict sequence order`);
    }
    if (partition !== undefined && checked.group !== undefined) {
      throw new InvalidArgumentError(`${method}: group is not for partitioned jobs, which run in strict sequence order and are never limited`);
    }
    if (checked.uniqueKey !== undefined) {
      if (partition !== undefined) throw new InvalidArgumentError(`${method}: uniqueKey is not for partitioned jobs`);
      if (transaction !== undefined) throw new InvalidArgumentError("enqueueIn: uniqueKey is not supported inside a caller's transaction");
      if (!Array.isArray(payloads) || payloads.length !== 1) throw new InvalidArgumentError("enqueueMany: uniqueKey holds one job; enqueue one payload");
      return [(await this.insertUnique(jobType, payloads[0], checked)).id];
    }
    const now = this.clock.now();
    const runAt = runAtOf(checked, now);
    const parents = checked.parentId === undefined ? {} : parentsOf(checked.parentId, partition === undefined ? "enqueue" : "enqueueToPartition");
    const retryPolicy = storedRetryPolicy(checked.retryPolicy ?? this.options.defaultRetryPolicy);
    const jobs: JobInsert[] = payloads.map((payload, i) => {
      const ref = Array.isArray(partition) ? (partition as readonly PartitionRef[])[i]! : (partition as PartitionRef | undefined);
      return {
        id: newJobId(now),
        jobType,
        payload: encodePayload(encode, jobType, payload),
        runAt,
        ...parents,
        retryPolicy,
        timeoutMs: checked.timeoutMs ?? null,
        ...(ref === undefined ? {} : { topic: ref.topic, partition: ref.partition }),
        ...(checked.priority ? { priority: checked.priority } : {}),
        ...((groups?.[i] ?? checked.group) === undefined ? {} : { group: groups?.[i] ?? checked.group }),
      };
    });
    if (jobs.length === 0) return [];
    if (this.throughMiddleware === null) return this.write(jobs, now, transaction);
    const contexts: EnqueueJobContext[] = jobs.map((job, i) => ({
      payload: payloads[i],
      partition: job.topic === undefined ? null : { topic: job.topic, partition: job.partition! },
      meta: {},
    }));
    const write = (): Promise<JobId[]> => {
      // The metadata the middleware set, checked before anything is written (INVALID_ARGUMENT over 8 KiB or not JSON).
      for (let i = 0; i < jobs.length; i++) jobs[i]!.meta = encodeMeta(contexts[i]!.meta, jobType);
      return this.write(jobs, now, transaction);
    };
    return this.throughMiddleware({ jobType, jobs: contexts, options, inTransaction: transaction !== undefined, write });
  }

  /**
   * The insert itself (what the innermost middleware's `next()` runs): resolves to the ids once committed.
   * A few plain jobs (no parent, no partition, not in a caller's transaction) go through the
   * {@link InsertCoalescer}, written with the other callers' in one statement; the rest are written alone.
   */
  private async write(jobs: JobInsert[], now: number, transaction: Trx | undefined): Promise<JobId[]> {
    if (this.coalescer !== null && transaction === undefined && jobs.length <= COALESCED_MAX && jobs.every(isPlain)) {
      this.options.onCommitted(jobs, await this.coalescer.add(jobs, now));
      return jobs.map((j) => j.id);
    }
    const result = await this.backend.jobs.insertMany({ jobs, now, retentionMs: this.options.retentionMs, transaction });
    if (transaction === undefined) this.options.onCommitted(jobs, result.stages);
    return jobs.map((j) => j.id);
  }

  /**
   * The write of {@link enqueueUnique} on checked options, through the enqueue middleware (X10) as every enqueue:
   * the hooks see one job (`inTransaction` false) and may set its metadata, stored by an insert (or a replace, which
   * keeps the job's own when none is set). A hook that resolves without calling `next()` writes nothing: the result
   * is then `existing` with the first id the hook returned. A new job reaches `onCommitted` as any enqueue does.
   */
  async insertUnique(jobType: string, payload: unknown, checked: EnqueueOptions): Promise<UniqueEnqueueResult> {
    const encode = this.options.encoders.get(jobType);
    if (!encode) throw new InvalidArgumentError(`unknown job type "${jobType}": no handler is registered for it`);
    if (checked.parentId !== undefined) throw new InvalidArgumentError("enqueue: uniqueKey is not for continuations (parentId)");
    const now = this.clock.now();
    const job: JobInsert = {
      id: newJobId(now),
      jobType,
      payload: encodePayload(encode, jobType, payload),
      runAt: runAtOf(checked, now),
      retryPolicy: storedRetryPolicy(checked.retryPolicy ?? this.options.defaultRetryPolicy),
      timeoutMs: checked.timeoutMs ?? null,
      ...(checked.priority ? { priority: checked.priority } : {}),
      ...(checked.group === undefined ? {} : { group: checked.group }),
    };
    let written: UniqueEnqueueResult | undefined;
    const write = async (): Promise<JobId[]> => {
      const insert: JobInsertUniqueParams = { job, uniqueKey: checked.uniqueKey!, uniqueMode: checked.uniqueMode ?? "keep", now };
      const result = (
        this.uniqueCoalescer === null
          ? (await this.backend.jobs.insertUniqueMany({ inserts: [insert] })).results
          : await this.uniqueCoalescer.add([insert], now)
      )[0]!;
      if (result.outcome === "inserted") this.options.onCommitted([job], [result.stage]);
      else if (result.outcome === "replaced" && result.stage === "enqueued") this.options.onReady?.();
      written = { id: result.id, outcome: result.outcome };
      return [result.id];
    };
    if (this.throughMiddleware === null) {
      await write();
      return written!;
    }
    const context: EnqueueJobContext = { payload, partition: null, meta: {} };
    const ids = await this.throughMiddleware({
      jobType,
      jobs: [context],
      options: checked,
      inTransaction: false,
      write: () => {
        // The metadata the middleware set, checked before anything is written (INVALID_ARGUMENT over 8 KiB or not JSON).
        job.meta = encodeMeta(context.meta, jobType);
        return write();
      },
    });
    return written ?? { id: ids[0]!, outcome: "existing" };
  }
}
