import type { ClaimedJob, JobOutcome } from "../backend/backend.js";
import type { JobStage } from "../core/job-stage.js";
import { describeThrown, LaterError, type LaterErrorCode } from "../errors.js";

/**
 * A local event, for logs, progress output and tests. Never needed for
 * correctness. Job events come from this process only: its enqueues (after
 * commit, `attempt` 0; not for `enqueueIn`, whose commit is the caller's)
 * and its workers' claims and outcomes.
 */
export type ServerEvent =
  | { type: "job"; jobId: string; jobType: string; stage: JobStage; attempt: number; error?: string }
  | { type: "worker"; action: "added" | "removed" | "replaced"; workers: number; reason?: string }
  /**
   * A claim not run because its lease had already expired by the clock when
   * its handler would have started (its process stalled after the claim):
   * another server may hold it by now. Lease recovery takes it.
   */
  | { type: "job-skipped"; jobId: string; jobType: string; attempt: number; reason: string }
  /**
   * A handler still running at the shutdown deadline: its signal was aborted
   * and its job put back at once (a partition head with its partition freed),
   * ready for any server now; attempt `attempt` is undone, not counted as a
   * failure. Whatever the handler does afterwards is not written.
   */
  | { type: "job-released"; jobId: string; jobType: string; attempt: number; reason: string }
  /**
   * A running (or claimed, not yet started) attempt whose lease this server
   * lost: a renewal found its job no longer held under this server's lease
   * (the stuck-job sweep or another server took it after a stall, or
   * `forceFailPartitionHead` failed it). Its signal was aborted with
   * `LEASE_LOST`; whatever the handler does afterwards is not written.
   */
  | { type: "job-lease-lost"; jobId: string; jobType: string; attempt: number; reason: string }
  /** Audit: jobs retried, deleted or cancelled from outside (`retry`, `delete`, `cancel`, one event per batch of `retryJobs`/`deleteJobs`/`cancelJobs`) through this server. */
  | { type: "job-action"; action: "retry" | "delete" | "cancel"; jobIds: readonly string[] }
  /**
   * A running attempt of this server whose job was cancelled (X3): its
   * signal was aborted with a `JobCancelledError` (`reason`: its message);
   * nothing of the attempt is written, the job is `cancelled` already.
   */
  | { type: "job-cancelled"; jobId: string; jobType: string; attempt: number; reason: string }
  /**
   * A maintenance task changed something: `rescue-stuck` (jobs retried or
   * failed after their worker was lost), `rescue-head` (a crashed partition
   * head's lost attempt recorded), `sweep-expired` (rows deleted), `vacuum`,
   * `log-retention` (retained-log records deleted; from a `RetainedLog`'s `onEvent`),
   * `analyze` (PostgreSQL tables whose planner statistics were refreshed).
   */
  | { type: "maintenance"; task: string; count: number }
  /**
   * A step failed and its loop goes on (it is retried, or left to lease
   * recovery; no job is lost by it): `where` names the step (`start`,
   * `claim`, `complete`, `lease renewal`, `partition claim`, `partition
   * complete`, `partition heartbeat`, a maintenance task, ...), `error` says
   * what failed, `code` is the {@link LaterErrorCode} when it has one.
   * `DATABASE_UNAVAILABLE`: the database could not be reached (a restart,
   * an outage, a killed connection); `DATABASE_FULL` / `DATABASE_BUSY`: it
   * could not take the write (a full disk; SQLite's write lock held by
   * another process past `busyTimeoutMs`); the step is retried until it can be.
   */
  | { type: "error"; where: string; error: string; code?: LaterErrorCode }
  /**
   * Something works but is likely a mistake. `UNHANDLED_JOB_TYPE`: this
   * server enqueued jobs of `jobType` and no live server handles that type
   * (checked at the next heartbeat, once per type per server; see
   * `UnhandledJobTypeWarner`): they wait until a server with its handler starts.
   * `LIMITS_CHANGED` (X9): at its start this server stored limits for
   * `jobType` (`concurrency`, `rateLimit`) that differ from those stored
   * before (see `storeLimits`).
   */
  | { type: "warning"; code: "UNHANDLED_JOB_TYPE" | "LIMITS_CHANGED"; jobType: string; message: string }
  /**
   * `PLANNER_STATISTICS_STALE` (PostgreSQL): `table` more than doubled since
   * its planner statistics were taken and this role may not `ANALYZE` it
   * (see `StatisticsRefresher`); once per table per server.
   */
  | { type: "warning"; code: "PLANNER_STATISTICS_STALE"; table: string; message: string }
  /**
   * A server started (running, after its database was reached) or stopped
   * (shutdown done); a publisher or retained log opened or closed.
   * `instanceId`: the server's.
   */
  | { type: "lifecycle"; component: "server" | "publisher" | "retained-log"; action: "started" | "stopped"; instanceId?: string }
  /**
   * The partitions this server owns changed (a server joined or left the
   * topics' members): `owned` now, `gained` and `lost` by this change,
   * `members` the live servers with topics.
   */
  | { type: "partitions"; owned: number; gained: number; lost: number; members: number };

/** The `error` event of `thrown` in step `where`, with the `LaterError` code when it has one. */
export function errorEvent(where: string, thrown: unknown): ServerEvent {
  const error = describeThrown(thrown);
  return thrown instanceof LaterError ? { type: "error", where, error, code: thrown.code } : { type: "error", where, error };
}

/** The `job` event of one attempt: `running` when it starts, else the stage its written outcome stored (with the error). */
export function attemptEvent(job: ClaimedJob, outcome: JobOutcome | "running"): ServerEvent {
  // Whole literals, not a spread of a shared base: two of these are made per job when events are on.
  if (outcome === "running") return { type: "job", jobId: job.id, jobType: job.jobType, attempt: job.attempt, stage: "running" };
  if (outcome.kind === "success") return { type: "job", jobId: job.id, jobType: job.jobType, attempt: job.attempt, stage: "success" };
  return {
    type: "job",
    jobId: job.id,
    jobType: job.jobType,
    attempt: job.attempt,
    stage: outcome.kind === "retry" ? "requeued" : "failed",
    error: outcome.error,
  };
}
