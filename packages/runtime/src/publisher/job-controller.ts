/**
 * Retry and delete from outside (docs/semantics.md X7), behind the `retry`, `delete`,
 * `retryJobs` and `deleteJobs` of the server, the publishers and their
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
 * - `delete(jobId)`: a finished job (`success`, `failed`) is removed with
 *   its history. A finished job has no waiting continuations.
 * - Any other stage is refused with `JobActionRefusedError`
 *   (`JOB_ACTION_REFUSED`, naming the stage); an id the namespace does not
 *   hold with `JobNotFoundError` (`JOB_NOT_FOUND`); both change nothing.
 * - `retryJobs(filter)` / `deleteJobs(filter)`: every job matching `{ stage,
 *   jobType }` among the stages the action applies to, others skipped, in
 *   batches of `batchSize` (default 1000), each batch one transaction, until
 *   none is left; resolves to how many changed. One pass in id order (each
 *   batch starts after the last id of the one before): a job retried by it
 *   that fails again meanwhile is not taken twice.
 */
import type { Backend, JobControlFilter } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import type { JobId } from "../core/job-id.js";
import { JOB_STAGES, RETRYABLE_STAGES, TERMINAL_STAGES, type JobStage } from "../core/job-stage.js";
import { describeValue, InvalidArgumentError, JobActionRefusedError, JobNotFoundError } from "../errors.js";

/** Which jobs `retryJobs` and `deleteJobs` take: the dashboard list's filter. */
export interface JobFilter {
  /** Only jobs in this stage: `failed` for `retryJobs`; `success` or `failed` for `deleteJobs`. Default: every stage the action applies to. */
  stage?: JobStage | undefined;
  /** Only jobs of this job type. Default: every type. */
  jobType?: string | undefined;
}

/** How `retryJobs` and `deleteJobs` work through the matching jobs. */
export interface JobBatchOptions {
  /** Jobs per transaction (default 1000, 1 to 10000): a large set never holds one long transaction. */
  batchSize?: number | undefined;
}

/** What the controller reports after each committed change (the server wakes its workers and emits a `job-action` event). */
export type JobActionListener = (action: "retry" | "delete", jobIds: readonly JobId[]) => void;

export class JobController {
  constructor(
    private readonly backend: Backend<unknown>,
    private readonly clock: Clock,
    private readonly onAction: JobActionListener,
  ) {}

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

  /** How many jobs `retryJobs(filter)` or `deleteJobs(filter)` would take now (a count for a confirmation; the filter checked as theirs). */
  async countMatching(action: "retry" | "delete", filter: JobFilter = {}): Promise<number> {
    const checked = checkFilter(action === "retry" ? "retryJobs" : "deleteJobs", filter, action === "retry" ? RETRYABLE_STAGES : TERMINAL_STAGES);
    return this.backend.control.countMatching({ action, filter: checked });
  }

  /** Runs `batch` in id order, each after the last id of the one before, until one comes back short; each batch reported as it commits. */
  private async batches(action: "retry" | "delete", batch: (afterId: JobId | undefined) => Promise<{ ids: JobId[] }>, limit: number): Promise<number> {
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
