import type { ClaimedJob, ClaimedPartitionJob, JobFinish, JobOutcome, PartitionClaim } from "../backend/backend.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import { InvalidArgumentError, LeaseLostError } from "../errors.js";
import { encodePayload, jsonPayload } from "../core/encode-payload.js";
import type { JobContext } from "../config/handler-registration.js";

/** Most bytes of a job's progress as JSON (`ctx.progress`): it is a status, not a result. */
export const MAX_PROGRESS_BYTES = 16_384;

/** Stores an attempt's progress, fenced by its claim; resolves to whether it was stored (false: the claim is not this attempt's any more). */
export type ProgressWriter = (claim: HeldClaim, progress: string) => Promise<boolean>;

/** The success outcome, one shared object (outcomes are never changed once made). */
export const SUCCESS: JobOutcome = Object.freeze({ kind: "success" });

/**
 * One claim this server holds, a regular job or a partition head, from the
 * claim until its outcome is written or the claim is given up. It is also
 * the claim's {@link JobFinish}, so handing an outcome to the completion
 * batcher allocates nothing.
 *
 * ```text
 *   claimed ─► (buffered) ─► running ─► outcome set ─► written (held no more)
 *      │                        ├─(lease lost / shutdown deadline)─► abandoned: signal aborts, outcome not written
 *      │                        └─(past jobTimeoutMs)─► timed out: signal aborts, the failure is written at once
 *      └─(lease already expired when the handler would start)─► skipped: never run, left to lease recovery
 * ```
 *
 * `leaseExpiresAt` is the lease this server last wrote (at the claim, then
 * at each renewal): a claim whose lease has passed by the clock is no longer
 * this server's to run, even if nobody has taken it over yet.
 */
export class HeldClaim implements JobFinish {
  readonly id: string;
  readonly attempt: number;
  /** The partition claim (topic, partition, fencing epoch) of a head; null for a regular job. */
  readonly head: PartitionClaim | null;
  /** What the attempt led to; set when the handler settles (or times out). */
  outcome: JobOutcome = SUCCESS;
  /** J11: the retention its job type sets for the outcome's stage (handler option `retention`), set with the outcome; undefined: the server's. */
  retentionMs: number | undefined = undefined;
  /** When the handler started (clock ms), for the timeout watchdog. */
  startedAt = 0;
  /** The attempt's timeout (ms) and the setting it came from, for the watchdog; null: none. Set when the handler starts. */
  timeoutMs: number | null = null;
  timeoutSetting = "";
  /** The worker running it (a `worker_id` label), set when it is handed to the executor. */
  workerId = 0;
  /** Lease lost, expired before the start, or given up at shutdown: the outcome is not written. */
  abandoned = false;
  /** The watchdog failed this attempt; the handler's own result is ignored. */
  timedOut = false;
  /** Its job was cancelled while it ran (X3; `abandoned` too): nothing written, metrics label it `cancelled`. */
  cancelled = false;
  /** Called once when the claim is aborted (abandoned or timed out): lets a runner stop waiting for its handler. */
  onAbort: (() => void) | null = null;
  /**
   * Set while a handler runs inside middleware or with a timeout: the watchdog
   * (a timeout) and a cancel (X3) reject the attempt's `next()` through it
   * (X10), so middleware see the `JobTimeoutError` or `JobCancelledError` at once.
   */
  rejectNext: ((error: Error) => void) | null = null;
  /** Created on first use of `ctx.signal` (most handlers never read it; one per job is measurable). */
  private controller: AbortController | null = null;
  /** Why the claim was aborted, for a signal created afterwards. */
  private abortReason: Error | null = null;

  constructor(
    readonly job: ClaimedJob | ClaimedPartitionJob,
    /** Clock ms when this server's lease on the claim ends; moved on by each renewal. */
    public leaseExpiresAt: number,
    head = false,
  ) {
    this.id = job.id;
    this.attempt = job.attempt;
    const p = job as ClaimedPartitionJob;
    this.head = head ? { id: p.id, attempt: p.attempt, topic: p.topic, partition: p.partition, epoch: p.epoch } : null;
  }

  /** The handler's `ctx.signal`: aborted with the reason once the claim is abandoned or times out. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  abort(reason: Error): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
    this.onAbort?.();
  }
}

/**
 * The `ctx` a handler receives, the same class for a regular job and a
 * partition head: plain fields, `partition` set for heads only, and
 * `signal` read through to the claim (created only when a handler asks).
 */
export class JobRunContext<C> implements JobContext<C, unknown> {
  readonly jobId: string;
  readonly jobType: string;
  readonly attempt: number;
  readonly partition: { topic: string; partition: number } | undefined;
  readonly #claim: HeldClaim;
  readonly #write: ProgressWriter;

  constructor(
    readonly app: C,
    readonly publisher: JobPublisher<unknown>,
    claim: HeldClaim,
    write: ProgressWriter,
  ) {
    this.#write = write;
    this.jobId = claim.id;
    this.jobType = claim.job.jobType;
    this.attempt = claim.attempt;
    const head = claim.head;
    this.partition = head === null ? undefined : { topic: head.topic, partition: head.partition };
    this.#claim = claim;
  }

  async progress(value: unknown): Promise<void> {
    const text = encodePayload(jsonPayload, `progress of ${this.jobType}`, value);
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_PROGRESS_BYTES)
      throw new InvalidArgumentError(`progress of job ${this.jobId} is ${bytes} bytes as JSON, over the ${MAX_PROGRESS_BYTES} allowed: report a summary`);
    if (!(await this.#write(this.#claim, text))) throw new LeaseLostError(this.jobId);
  }

  get signal(): AbortSignal {
    return this.#claim.signal;
  }
}
