/**
 * Retry, delete (docs/semantics.md X7) and cancel (X3) from outside, behind the `retry`, `delete`, `cancel`,
 * `retryJobs`, `deleteJobs` and `cancelJobs` of the server, the publishers and their
 * typed handles: checks the input, turns a refusal into a typed error, and
 * loops a filter in batches over `backend.control`.
 *
 * Semantics, the same on both backends:
 * - `retry(jobId)`: a `failed` job goes back to `enqueued`, ready now, its
 *   stage history kept (a new `enqueued` entry), its last error kept until
 *   its next attempt ends. Its attempt count is not reset (claims are
 *   fenced by `(id, attempt)`, so a stalled worker of the old run can never
 *   write over the new one): the retried run is one more attempt under the
 *   job's retry policy, and a policy whose retries were spent fails it
 *   again at its first throw (as River's `JobRetry`). A partitioned job goes
 *   to the end of its partition (a new sequence): jobs of the partition that
 *   ran after it stay ahead of it, one at a time as before. Its
 *   continuations that failed with it stay `failed`, and are not
 *   retryable: a continuation that never ran and whose parent has not
 *   succeeded is refused (by id) or skipped (by filter), since running it
 *   would break rule J5 (a continuation runs only after its parent succeeded);
 *   enqueue it again after retrying the parent. A continuation that ran
 *   (its parent had succeeded) retries as any job.
 *   A `cancelled` job retries the same way (X3).
 * - `delete(jobId)`: a finished job (`success`, `failed`, `cancelled`) is removed with
 *   its history. A finished job has no waiting continuations.
 * - `cancel(jobId, reason?)` (X3): an unfinished job (`enqueued`,
 *   `delayed`, `waiting`, `requeued`, `running`) ends `cancelled` at once,
 *   the reason as its history entry's note; its waiting continuations, down
 *   the chain, are cancelled with it. A running attempt's signal aborts with
 *   `JobCancelledError` within one lease-renewal interval (PostgreSQL: at
 *   once, through a notification), and nothing it does afterwards is
 *   written. Resolves true; false for a finished job (nothing changed, not
 *   an error: it is over either way).
 * - Any other stage is refused with `JobActionRefusedError`
 *   (`JOB_ACTION_REFUSED`, naming the stage); an id the namespace does not
 *   hold with `JobNotFoundError` (`JOB_NOT_FOUND`); both change nothing.
 * - `retryJobs(filter)` / `deleteJobs(filter)` / `cancelJobs(filter)`: every job matching `{ stage,
 *   jobType }` among the stages the action applies to, others skipped, in
 *   batches of `batchSize` (default 1000), each batch one transaction, until
 *   none is left; resolves to how many changed. One pass in id order (each
 *   batch starts after the last id of the one before): a job retried by it
 *   that fails again meanwhile is not taken twice.
 */
import type { Backend, JobControlFilter } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import type { JobId } from "../core/job-id.js";
import { CANCELLABLE_STAGES, JOB_STAGES, RETRYABLE_STAGES, TERMINAL_STAGES, type JobStage } from "../core/job-stage.js";
import { describeValue, InvalidArgumentError, JobActionRefusedError, JobNotFoundError } from "../errors.js";

/** Which jobs `retryJobs`, `deleteJobs` and `cancelJobs` take: the dashboard list's filter. */
export interface JobFilter {
  /** Only jobs in this stage: `failed` or `cancelled` for `retryJobs`; a finished one for `deleteJobs`; an unfinished one for `cancelJobs`. Default: every stage the action applies to. */
  stage?: JobStage | undefined;
  /** Only jobs of this job type. Default: every type. */
  jobType?: string | undefined;
}

/** How `retryJobs` and `deleteJobs` work through the matching jobs. */
export interface JobBatchOptions {
  /** Jobs per transaction (default 1000, 1 to 10000): a large set never holds one long transaction. */
  batchSize?: number | undefined;
}

/** How `cancelJobs` works through the matching jobs, and why (each cancelled job's history note). */
export interface JobCancelBatchOptions extends JobBatchOptions {
  /** Noted on each job's `cancelled` history entry (at most 1000 characters). Default: none. */
  reason?: string | undefined;
}

/** What the controller reports after each committed change (the server wakes its workers and emits a `job-action` event). */
export type JobActionListener = (action: "retry" | "delete" | "cancel", jobIds: readonly JobId[]) => void;

/** Longest `reason` of `cancel`, in characters: it is a note in the job's history, not a document. */
export const MAX_CANCEL_REASON = 1_000;

export class JobController {
  constructor(
    private readonly backend: Backend<unknown>,
    private readonly clock: Clock,
    private readonly onAction: JobActionListener,
    /** How long a cancelled job is kept (its expiry); the server's `retentionMs`, default one day. */
    private readonly retentionMs = 86_400_000,
    /** J11: the `cancelledMs` of the job types that set one (their retention when cancelled); others get `retentionMs`. */
    private readonly cancelledMsByType: Readonly<Record<string, number>> = {},
  ) {}

  /** Ends an unfinished job `cancelled` (see the module doc); true when it did, false for a finished job. */
  async cancel(jobId: JobId, reason?: string): Promise<boolean> {
    checkId("cancel", jobId);
    const note = checkReason("cancel", reason);
    const { ids } = await this.backend.control.cancelMany({ target: { ids: [jobId] }, ...this.cancelling(note), limit: 1 });
    if (ids.length === 0) {
      if (!(await this.backend.inspect.jobGet({ id: jobId }))) throw new JobNotFoundError(jobId);
      return false;
    }
    this.onAction("cancel", ids);
    return true;
  }

  /** Cancels every unfinished job matching `filter`, in batches; resolves to how many (their waiting continuations not counted). */
  async cancelJobs(filter: JobFilter = {}, options: JobCancelBatchOptions = {}): Promise<number> {
    const target = checkFilter("cancelJobs", filter, CANCELLABLE_STAGES);
    const limit = checkBatch("cancelJobs", options);
    const note = checkReason("cancelJobs", options?.reason);
    return this.batches(
      "cancel",
      (afterId) => this.backend.control.cancelMany({ target: { filter: { ...target, afterId } }, ...this.cancelling(note), limit }),
      limit,
    );
  }

  private cancelling(reason: string | null): {
    reason: string | null;
    now: number;
    expiresAt: number;
    retentionMsByType: Readonly<Record<string, number>> | null;
  } {
    const now = this.clock.now();
    const byType = Object.keys(this.cancelledMsByType).length > 0 ? this.cancelledMsByType : null;
    return { reason, now, expiresAt: now + this.retentionMs, retentionMsByType: byType };
  }

  /** Puts a `failed` job back to `enqueued` (see the module doc). */
  async retry(jobId: JobId): Promise<void> {
    checkId("retry", jobId);
    const { ids } = await this.backend.control.retryMany({ target: { ids: [jobId] }, now: this.clock.now(), limit: 1 });
    if (ids.length === 0) await this.refusal("retry", jobId, RETRYABLE_STAGES);
    this.onAction("retry", ids);
  }

  /** Deletes a finished job (see the module doc). */
  async delete(jobId: JobId): Promise<void> {
    checkId("delete", jobId);
    const { ids } = await this.backend.control.deleteMany({ target: { ids: [jobId] }, limit: 1 });
    if (ids.length === 0) await this.refusal("delete", jobId, TERMINAL_STAGES);
    this.onAction("delete", ids);
  }

  /** Retries every `failed` job matching `filter`, in batches; resolves to how many. */
  async retryJobs(filter: JobFilter = {}, options: JobBatchOptions = {}): Promise<number> {
    const target = checkFilter("retryJobs", filter, RETRYABLE_STAGES);
    const limit = checkBatch("retryJobs", options);
    return this.batches(
      "retry",
      (afterId) => this.backend.control.retryMany({ target: { filter: { ...target, afterId } }, now: this.clock.now(), limit }),
      limit,
    );
  }

  /** Deletes every finished job matching `filter`, in batches; resolves to how many. */
  async deleteJobs(filter: JobFilter = {}, options: JobBatchOptions = {}): Promise<number> {
    const target = checkFilter("deleteJobs", filter, TERMINAL_STAGES);
    const limit = checkBatch("deleteJobs", options);
    return this.batches("delete", (afterId) => this.backend.control.deleteMany({ target: { filter: { ...target, afterId } }, limit }), limit);
  }

  /** How many jobs `retryJobs(filter)`, `deleteJobs(filter)` or `cancelJobs(filter)` would take now (a count for a confirmation; the filter checked as theirs). */
  async countMatching(action: "retry" | "delete" | "cancel", filter: JobFilter = {}): Promise<number> {
    const [name, stages] = ACTION_STAGES[action];
    const checked = checkFilter(name, filter, stages);
    return this.backend.control.countMatching({ action, filter: checked });
  }

  /** Runs `batch` in id order, each after the last id of the one before, until one comes back short; each batch reported as it commits. */
  private async batches(
    action: "retry" | "delete" | "cancel",
    batch: (afterId: JobId | undefined) => Promise<{ ids: JobId[] }>,
    limit: number,
  ): Promise<number> {
    let done = 0;
    let afterId: JobId | undefined;
    for (;;) {
      const { ids } = await batch(afterId);
      done += ids.length;
      afterId = ids.at(-1) ?? afterId;
      if (ids.length > 0) this.onAction(action, ids);
      if (ids.length < limit) return done;
    }
  }

  /** Why a by-id action changed nothing: the job is unknown, or in a stage the action refuses. */
  private async refusal(action: "retry" | "delete", jobId: JobId, allowed: readonly JobStage[]): Promise<never> {
    const job = await this.backend.inspect.jobGet({ id: jobId });
    if (!job) throw new JobNotFoundError(jobId);
    if (action === "retry" && allowed.includes(job.stage) && job.parentId !== null) {
      const because = `it is a continuation of ${job.parentId}, which has not succeeded, and it never ran: it failed because its parent failed, and retrying it would run it without its parent's success (retry the parent, then enqueue the continuation again)`;
      throw new JobActionRefusedError(action, jobId, job.stage, allowed, because);
    }
    throw new JobActionRefusedError(action, jobId, job.stage, allowed);
  }
}

/** The filter form's name and the stages it takes, by action. */
const ACTION_STAGES = {
  retry: ["retryJobs", RETRYABLE_STAGES],
  delete: ["deleteJobs", TERMINAL_STAGES],
  cancel: ["cancelJobs", CANCELLABLE_STAGES],
} as const satisfies Record<string, readonly [string, readonly JobStage[]]>;

/** A cancel's reason: absent, or a string of at most {@link MAX_CANCEL_REASON} characters (empty: none). */
function checkReason(action: string, reason: unknown): string | null {
  if (reason === undefined || reason === null) return null;
  if (typeof reason !== "string" || reason.length > MAX_CANCEL_REASON)
    throw new InvalidArgumentError(`${action}: reason must be a string of at most ${MAX_CANCEL_REASON} characters, got ${describeValue(reason)}`);
  return reason === "" ? null : reason;
}

function checkId(action: string, jobId: unknown): void {
  if (typeof jobId !== "string" || jobId === "")
    throw new InvalidArgumentError(`${action}: the job id must be a non-empty string, got ${describeValue(jobId)}`);
}

function checkFilter(action: string, filter: JobFilter, allowed: readonly JobStage[]): JobControlFilter {
  if (filter === null || typeof filter !== "object")
    throw new InvalidArgumentError(`${action}: the filter is { stage?, jobType? }, got ${describeValue(filter)}`);
  const { stage, jobType } = filter;
  if (stage !== undefined && !allowed.includes(stage)) {
    const known = JOB_STAGES.includes(stage) ? "" : " (not a stage)";
    throw new InvalidArgumentError(`${action}: stage ${describeValue(stage)}${known} is not one it takes: ${allowed.join(", ")}`);
  }
  if (jobType !== undefined && (typeof jobType !== "string" || jobType === "")) {
    throw new InvalidArgumentError(`${action}: jobType must be a non-empty string, got ${describeValue(jobType)}`);
  }
  return { stage, jobType };
}

function checkBatch(action: string, options: JobBatchOptions): number {
  const size = options?.batchSize ?? 1000;
  if (!Number.isInteger(size) || size < 1 || size > 10_000) {
    throw new InvalidArgumentError(`${action}: batchSize must be an integer from 1 to 10000, got ${describeValue(size)}`);
  }
  return size;
}
