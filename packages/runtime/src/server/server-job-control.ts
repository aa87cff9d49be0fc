/**
 * What a server offers on its namespace's jobs (X3 cancel, X4 pause, X6
 * results, X7 bulk control, retry and delete), each through the server's
 * own publisher, so a server's control reaches its own loops at once (see
 * `serverPublisher`) and other servers by the database. The base of
 * {@link BackgroundJobServer}, which builds the publisher.
 */
import type { JobId } from "../core/job-id.js";
import type { JobBatchOptions, JobCancelBatchOptions, JobFilter } from "../publisher/job-controller.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import type { JobWaitResult, WaitForOptions } from "../publisher/job-waiter.js";
import type { PausedEntry, PauseTarget } from "../publisher/pause-controller.js";
import type { TransactionHandle } from "../backend/backend.js";

export abstract class ServerJobControl<Trx = TransactionHandle> {
  /** The server's publisher (`server.publisher`): enqueue, and the control below. */
  abstract readonly publisher: JobPublisher<Trx>;

  /**
   * Resolves once job `jobId` is terminal, with `{ stage, result?, error? }`;
   * woken by the commit, not by polling (X6, see `JobPublisher.waitFor`).
   * `WAIT_TIMEOUT` past `options.timeoutMs`; `JOB_NOT_FOUND` for an unknown id.
   */
  waitFor(jobId: JobId, options: WaitForOptions): Promise<JobWaitResult> {
    return this.publisher.waitFor(jobId, options);
  }

  /** Puts a `failed` job back to `enqueued`, ready now, its history kept (see `JobPublisher.retry`); a `job-action` event. */
  retry(jobId: JobId): Promise<void> {
    return this.publisher.retry(jobId);
  }

  /** Cancels an unfinished job (X3; see `JobPublisher.cancel`): true when it did, false for a finished one; a `job-action` event. */
  cancel(jobId: JobId, reason?: string): Promise<boolean> {
    return this.publisher.cancel(jobId, reason);
  }

  /** Cancels every unfinished job matching `filter`, in batches; resolves to how many (see `JobPublisher.cancelJobs`). */
  cancelJobs(filter?: JobFilter, options?: JobCancelBatchOptions): Promise<number> {
    return this.publisher.cancelJobs(filter, options);
  }

  /** Deletes a finished job (see `JobPublisher.delete`); a `job-action` event. */
  delete(jobId: JobId): Promise<void> {
    return this.publisher.delete(jobId);
  }

  /** Retries every `failed` job matching `filter`, in batches; resolves to how many (see `JobPublisher.retryJobs`). */
  retryJobs(filter?: JobFilter, options?: JobBatchOptions): Promise<number> {
    return this.publisher.retryJobs(filter, options);
  }

  /** Deletes every finished job matching `filter`, in batches; resolves to how many (see `JobPublisher.deleteJobs`). */
  deleteJobs(filter?: JobFilter, options?: JobBatchOptions): Promise<number> {
    return this.publisher.deleteJobs(filter, options);
  }

  /** Pauses a job type or topic on every server of the namespace within one poll interval; true when it changed something (see `JobPublisher.pause`, docs/semantics.md X4). */
  pause(target: PauseTarget): Promise<boolean> {
    return this.publisher.pause(target);
  }

  /** Resumes a paused job type or topic and wakes every server at once; true when it was paused (see `JobPublisher.resume`). */
  resume(target: PauseTarget): Promise<boolean> {
    return this.publisher.resume(target);
  }

  /** Every paused job type and topic of the namespace (see `JobPublisher.listPaused`). */
  listPaused(): Promise<PausedEntry[]> {
    return this.publisher.listPaused();
  }
}
