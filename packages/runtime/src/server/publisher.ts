import type { Backend, JobInsert, TransactionHandle } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import type { JobStage } from "../core/job-stage.js";
import { newJobId, type JobId } from "../core/job-id.js";
import type { RetryPolicy } from "../core/retry/retry-policy.js";
import { InvalidArgumentError, ServerStoppedError } from "../errors.js";

/** When and after what a job may run. */
export interface EnqueueOptions {
  /** Not before this many ms from now (>= 0). */
  delayMs?: number;
  /** Not before this time. */
  runAt?: Date;
  /** Run only after this job succeeds. */
  parentId?: JobId;
}

/**
 * Enqueues jobs by job type (untyped). The generated module wraps this with
 * one typed handle per job; applications normally use that.
 */
export class JobPublisher {
  private stopped = false;

  constructor(
    private readonly backend: Backend,
    private readonly clock: Clock,
    private readonly defaultRetryPolicy: RetryPolicy,
    private readonly encoders: ReadonlyMap<string, (payload: unknown) => string>,
    /**
     * Called after each local commit with the new jobs and the stage each
     * was stored in (`enqueued`, `delayed`, `waiting`, or `failed` under a
     * failed parent): the server wakes local workers and emits events.
     */
    private readonly onCommitted: (jobs: readonly JobInsert[], stages: readonly JobStage[]) => void,
  ) {}

  /** Enqueue one job; resolves to its id once committed. */
  async enqueue(jobType: string, payload: unknown, options: EnqueueOptions = {}): Promise<JobId> {
    const [id] = await this.enqueueMany(jobType, [payload], options);
    return id!;
  }

  /** Enqueue many jobs of one type in one transaction. */
  async enqueueMany(jobType: string, payloads: readonly unknown[], options: EnqueueOptions = {}): Promise<JobId[]> {
    return this.insert(jobType, payloads, options, undefined);
  }

  /** Enqueue inside a caller-owned transaction: the job exists only if that transaction commits. */
  async enqueueIn(transaction: TransactionHandle, jobType: string, payload: unknown, options: EnqueueOptions = {}): Promise<JobId> {
    if (transaction === undefined || transaction === null) throw new InvalidArgumentError("enqueueIn: a transaction is required");
    const [id] = await this.insert(jobType, [payload], options, transaction);
    return id!;
  }

  /** Stops accepting jobs; later calls throw `ServerStoppedError`. */
  stop(): void {
    this.stopped = true;
  }

  private async insert(jobType: string, payloads: readonly unknown[], options: EnqueueOptions, transaction: TransactionHandle | undefined): Promise<JobId[]> {
    if (this.stopped) throw new ServerStoppedError(`enqueue of "${jobType}"`);
    const encode = this.encoders.get(jobType);
    if (!encode) throw new InvalidArgumentError(`unknown job type "${jobType}": no handler is registered for it`);
    if (!Array.isArray(payloads)) throw new InvalidArgumentError("enqueueMany: payloads must be an array");
    const now = this.clock.now();
    const runAt = resolveRunAt(options, now);
    const parentId = options.parentId;
    if (parentId !== undefined && (typeof parentId !== "string" || parentId === "")) {
      throw new InvalidArgumentError("parent job id must be a non-empty string");
    }
    const retryPolicy = JSON.stringify(this.defaultRetryPolicy);
    const jobs: JobInsert[] = payloads.map((payload) => ({
      id: newJobId(now),
      jobType,
      payload: encodePayload(encode, jobType, payload),
      runAt,
      parentId,
      retryPolicy,
    }));
    if (jobs.length === 0) return [];
    const result = await this.backend.jobInsertMany({ jobs, now, transaction });
    if (transaction === undefined) this.onCommitted(jobs, result.stages);
    return jobs.map((j) => j.id);
  }
}

function resolveRunAt(options: EnqueueOptions, now: number): number {
  if (options === null || typeof options !== "object") throw new InvalidArgumentError("enqueue options must be an object");
  const { delayMs, runAt } = options;
  if (delayMs !== undefined && runAt !== undefined) throw new InvalidArgumentError("give delayMs or runAt, not both");
  if (delayMs !== undefined) {
    if (typeof delayMs !== "number" || !Number.isFinite(delayMs) || delayMs < 0) {
      throw new InvalidArgumentError(`delay must be a finite number of ms >= 0, got ${String(delayMs)}`);
    }
    return now + Math.ceil(delayMs);
  }
  if (runAt !== undefined) {
    if (!(runAt instanceof Date) || Number.isNaN(runAt.getTime())) throw new InvalidArgumentError("runAt must be a valid Date");
    return Math.max(now, runAt.getTime());
  }
  return now;
}

function encodePayload(encode: (payload: unknown) => string, jobType: string, payload: unknown): string {
  let text: string | undefined;
  try {
    text = encode(payload);
  } catch (cause) {
    throw new InvalidArgumentError(`payload of "${jobType}" cannot be encoded as JSON: ${(cause as Error).message}`);
  }
  if (typeof text !== "string") throw new InvalidArgumentError(`payload of "${jobType}" cannot be encoded as JSON (got ${typeof payload})`);
  return text;
}
