import type { JobOutcome } from "../backend/backend.js";
import type { JobId } from "../core/job-id.js";
import { decodeMeta, type AttemptContext, type JobMeta } from "../middleware/later-middleware.js";
import type { ObservedAttempt } from "../middleware/attempt-observer.js";
import type { HeldClaim } from "./held-claim.js";

/**
 * One claim handed to the {@link JobExecutor}, as its attempt middleware
 * see it: the public {@link AttemptContext} (read through to the claim),
 * and what the observers in the list (`AttemptObserver`: the metrics) read
 * once the attempt is over: whether it was skipped, and its outcome. Made
 * only when the list has an attempt hook or an observer.
 */
export class AttemptRun implements AttemptContext, ObservedAttempt {
  readonly jobId: JobId;
  readonly jobType: string;
  readonly attempt: number;
  readonly partition: { topic: string; partition: number } | null;
  /** The decoded payload; undefined until decoded, or when it does not decode. */
  payload: unknown = undefined;
  /** Why the payload does not decode; the handler's `next()` rejects with it. */
  decodeError: Error | null = null;
  /** The claim's lease had expired when it was handed over: not run, no attempt hook saw it (the observers did). */
  skipped = false;
  /** What the handler resolved to (X6), stored as the job's result when the attempt succeeds; undefined: nothing (or it did not run). */
  value: unknown = undefined;
  /** The outcome to write; null when nothing may be (skipped, abandoned, timed out). Set when the attempt is over. */
  result: JobOutcome | null = null;
  /** The observers' `after` ran (once per attempt: a timeout or a cancel reports it early on the plain path). */
  ended = false;
  #meta: JobMeta | null = null;

  constructor(
    readonly claim: HeldClaim,
    /** Clock ms when the claim was handed to the executor: the start of the attempt's time. */
    readonly handedAt: number,
  ) {
    this.jobId = claim.id;
    this.jobType = claim.job.jobType;
    this.attempt = claim.attempt;
    const head = claim.head;
    this.partition = head === null ? null : { topic: head.topic, partition: head.partition };
  }

  /** The stored metadata, parsed on first read. */
  get meta(): Readonly<JobMeta> {
    this.#meta ??= decodeMeta(this.claim.job.meta);
    return this.#meta;
  }

  get signal(): AbortSignal {
    return this.claim.signal;
  }
}
