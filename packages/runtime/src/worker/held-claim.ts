import type { ClaimedJob, JobFinish, JobOutcome } from "../backend/backend.js";
import type { JobPublisher } from "../server/publisher.js";
import type { JobContext } from "../server/server-options.js";

/** The success outcome, one shared object (outcomes are never changed once made). */
export const SUCCESS: JobOutcome = Object.freeze({ kind: "success" });

/**
 * One claim this server holds, from the claim until its outcome is written
 * or the claim is abandoned. It is also the claim's {@link JobFinish}, so
 * handing an outcome to the completion batcher allocates nothing.
 *
 * ```text
 *   claimed ─► buffered ─► running ─► outcome set, submitted ─► written (held no more)
 *                              └─(lease lost / shutdown deadline)─► abandoned: signal aborts, outcome not written
 *                              └─(past jobTimeoutMs)─► timed out: signal aborts, the failure is written at once
 * ```
 */
export class HeldClaim implements JobFinish {
  readonly id: string;
  readonly attempt: number;
  /** What the attempt led to; set when the handler settles (or times out). */
  outcome: JobOutcome = SUCCESS;
  /** When the handler started (clock ms), for the timeout watchdog. */
  startedAt = 0;
  /** Lease lost or given up at shutdown: the outcome is not written. */
  abandoned = false;
  /** The watchdog failed this attempt; the handler's own result is ignored. */
  timedOut = false;
  /** Created on first use of `ctx.signal` (most handlers never read it; one per job is measurable). */
  private controller: AbortController | null = null;
  /** Why the claim was aborted, for a signal created afterwards. */
  private abortReason: Error | null = null;

  constructor(readonly job: ClaimedJob) {
    this.id = job.id;
    this.attempt = job.attempt;
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
    this.abortReason ??= reason;
    this.controller?.abort(reason);
  }
}

/**
 * The `ctx` a handler receives: plain fields, and `signal` read through to
 * the claim (created only when a handler asks for it).
 */
export class JobRunContext<C> implements JobContext<C> {
  readonly jobId: string;
  readonly jobType: string;
  readonly attempt: number;
  readonly #claim: HeldClaim;

  constructor(
    readonly app: C,
    readonly publisher: JobPublisher,
    claim: HeldClaim,
  ) {
    this.jobId = claim.id;
    this.jobType = claim.job.jobType;
    this.attempt = claim.attempt;
    this.#claim = claim;
  }

  get signal(): AbortSignal {
    return this.#claim.signal;
  }
}
