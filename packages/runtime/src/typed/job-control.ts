import type { JobId } from "../core/job-id.js";
import type { JobBatchOptions, JobFilter } from "../publisher/job-controller.js";
import type { JobPublisher, PartitionTarget } from "../publisher/job-publisher.js";
import type { PausedEntry, PauseTarget } from "../publisher/pause-controller.js";

/**
 * The operations on stored jobs and schedules that both handles a user holds
 * offer: the generated server (`JobsServer`) and the enqueue-only publisher
 * (`openJobsPublisher`). Each delegates to the untyped {@link JobPublisher}
 * underneath, so a web process that runs no workers can skip a poison
 * partition head or drop a schedule as a worker process can. `P`: what
 * `pause` and `resume` take, narrowed by the generated module to the
 * schema's job types and topics (`<I>PauseTarget`).
 */
export abstract class JobControl<P extends PauseTarget = PauseTarget> {
  constructor(
    /** The untyped publisher the typed handles write through. */
    protected readonly control: JobPublisher<unknown>,
  ) {}

  /**
   * Fails the head of a partition at once (a poison job, or one to skip),
   * without waiting for its retries or holding its lease, and frees the
   * partition; its waiting continuations fail with it. A claim still running
   * it loses its lease: its signal aborts and its outcome is discarded.
   * Resolves to the failed job's id, or null when the partition is empty.
   * An unregistered topic is `UNKNOWN_TOPIC`.
   */
  forceFailPartitionHead(target: PartitionTarget, reason?: string): Promise<string | null> {
    return this.control.forceFailPartitionHead(target, reason);
  }

  /** Deletes a partition's finished jobs but the newest `keep` (by sequence). Resolves to how many were deleted. */
  truncatePartitionHistory(target: PartitionTarget, keep: number): Promise<number> {
    return this.control.truncatePartitionHistory(target, keep);
  }

  /** Deletes the recurring schedule `scheduleId`; occurrences already enqueued stay. Resolves to false when there was none. */
  deleteRecurring(scheduleId: string): Promise<boolean> {
    return this.control.deleteRecurring(scheduleId);
  }

  /** Puts a `failed` job back to `enqueued`, ready now, its history kept (see `JobPublisher.retry`). Another stage: `JOB_ACTION_REFUSED`; unknown id: `JOB_NOT_FOUND`. */
  retry(jobId: JobId): Promise<void> {
    return this.control.retry(jobId);
  }

  /** Deletes a finished job (see `JobPublisher.delete`). Another stage: `JOB_ACTION_REFUSED`; unknown id: `JOB_NOT_FOUND`. */
  delete(jobId: JobId): Promise<void> {
    return this.control.delete(jobId);
  }

  /** Retries every `failed` job matching `filter`, in batches (default 1000); resolves to how many (see `JobPublisher.retryJobs`). */
  retryJobs(filter?: JobFilter, options?: JobBatchOptions): Promise<number> {
    return this.control.retryJobs(filter, options);
  }

  /**
   * Pauses a job type or topic of the schema on every server of the
   * namespace within one poll interval (docs/semantics.md X4): running jobs
   * finish, no new claim starts, enqueue still works. Resolves true when it
   * changed something, false when it was already paused. A declared job type
   * is always known; a topic must be registered (`UNKNOWN_TOPIC`).
   */
  pause(target: P): Promise<boolean> {
    return this.control.pause(target);
  }

  /** Resumes a paused job type or topic and wakes every server at once; true when it was paused. */
  resume(target: P): Promise<boolean> {
    return this.control.resume(target);
  }

  /** Every paused job type and topic of the namespace, with when each was paused. */
  listPaused(): Promise<PausedEntry[]> {
    return this.control.listPaused();
  }

  /** Deletes every finished job matching `filter`, in batches (default 1000); resolves to how many (see `JobPublisher.deleteJobs`). */
  deleteJobs(filter?: JobFilter, options?: JobBatchOptions): Promise<number> {
    return this.control.deleteJobs(filter, options);
  }
}
