/**
 * The claim side of the job seam (`backend.jobs`, job-store.ts): what a claim
 * takes and returns, and the writes of a claim after it (finish, release,
 * lease renewal, progress), each fenced by `(id, attempt)`; with the reads of
 * the stuck-job rescue, autoscaling and the expiry sweep.
 */
import type { JobId } from "../core/job-id.js";

export interface JobClaimReadyParams {
  /** Lease owner recorded on each claimed job: the server's instance id. */
  owner: string;
  limit: number;
  now: number;
  leaseExpiresAt: number;
  /** Claim only these job types (the ones this server has handlers for). */
  jobTypes: readonly string[];
  /** X9: job types claimed within their stored limits, before `jobTypes` (disjoint from it). Default: none. */
  limitedTypes?: readonly string[] | undefined;
}

/** What one claim took, and when to look again if it came back short. */
export interface JobClaimReadyResult {
  /** The claimed jobs, oldest `runAt` first. */
  jobs: ClaimedJob[];
  /**
   * Only when the claim came back short: the earliest `runAt` after `now`
   * among claimable jobs of these types (null: none), read in the same round
   * trip, so the fetcher knows how long it may sleep; with limited types
   * (X9), also the time a rate window next lets one start. Absent: the claim
   * was full, more may be ready. A backend may take fewer than `limit` in a
   * full claim (PostgreSQL takes a batch size from a fixed ladder, so that
   * its claim statements keep their cached plans): absent is what says full,
   * not `jobs.length === limit`.
   */
  nextRunAt?: number | null;
}

/** A job claimed for one attempt. */
export interface ClaimedJob {
  id: JobId;
  jobType: string;
  payload: string;
  /** This claim's attempt number (1 for the first run); fences every later write. */
  attempt: number;
  /** JSON of the explicit retry policy stored with the job (read when the attempt fails); null: none given. */
  retryPolicy: string | null;
  /** The job's own attempt timeout (ms) stored at enqueue; null (or absent): none, its type's or the server's applies. */
  timeoutMs?: number | null;
  /**
   * The job's `runAt` as claimed: when it became claimable (enqueue, due
   * time, retry time; a released continuation's is its release), so the
   * claimer knows its dispatch wait without another read.
   */
  runAt: number;
  /** The job's metadata as stored at enqueue (JSON text of an object, X10); null or absent: none. */
  meta?: string | null;
}

/** Identifies one claim of one job. */
export interface ClaimKey {
  id: JobId;
  attempt: number;
}

/**
 * How one attempt ended. A `success` may carry the handler's result as JSON
 * text (X6, at most 64 KiB, checked by the executor), stored by the success
 * write itself; none: the column stays null. A `fail` with `permanent: true` (the handler threw
 * `PermanentJobError`, docs/semantics.md J3) is stored with the note
 * `permanent` on its `failed` history entry; every other outcome adds a
 * plain entry.
 */
export type JobOutcome =
  | { kind: "success"; result?: string | undefined }
  | { kind: "retry"; runAt: number; error: string }
  | { kind: "fail"; error: string; permanent?: boolean };

export interface JobFinish extends ClaimKey {
  outcome: JobOutcome;
  /**
   * This finish's retention when its job type sets one for the stage it ends in (J11, the handler option
   * `retention`): the row gets `expiresAt = now + retentionMs` instead of the batch's. A success with 0 is
   * deleted by the statement that records it. Absent (the usual case): the batch's `retentionMs`, and the
   * batch is written by the same statements as before retention per type existed.
   */
  retentionMs?: number | undefined;
}

export interface JobFinishManyParams {
  finishes: readonly JobFinish[];
  now: number;
  /** Terminal jobs get `expiresAt = now + retentionMs`. */
  retentionMs: number;
  /** Only finish claims whose lease expired before this time (stuck-job rescue). */
  leaseExpiredBefore?: number;
  /**
   * X9: the batch freed a slot of a limited type: wake the namespace's other
   * servers after the write (PostgreSQL: one `pg_notify` on the wake-up
   * channel, a round trip only for such batches; SQLite: every commit wakes
   * them already). Default false.
   */
  wakeOthers?: boolean;
}

export interface JobFinishManyResult {
  /** Claims whose write was applied; the others had lost their lease. */
  applied: ClaimKey[];
  /** Continuations that became `enqueued` because their parent succeeded. */
  released: number;
  /**
   * X2: finished jobs (for good) that held a unique key: the job kept to run
   * after one of them may be ready now, so the pool looks for work. Absent: none.
   */
  freed?: number;
}

export interface JobReleaseManyParams {
  /** Claims to put back (never started, or abandoned at the shutdown deadline). */
  claims: readonly ClaimKey[];
  now: number;
  /**
   * `"shutdown"`: the history entry of each put-back carries the note
   * `shutdown` (docs/semantics.md J9). Default: a plain entry.
   */
  reason?: "shutdown" | undefined;
}

export interface JobReleaseManyResult {
  /** The claims that were put back; the others were no longer held (rescued, finished or taken elsewhere). */
  released: ClaimKey[];
}

export interface LeaseRenewParams {
  owner: string;
  claims: readonly ClaimKey[];
  leaseExpiresAt: number;
}

export interface JobProgressSetParams extends ClaimKey {
  owner: string;
  /** JSON text. */
  progress: string;
}

export interface LeaseRenewResult {
  /** Claims still held. Any claim not listed has been lost. */
  renewed: ClaimKey[];
  /**
   * Of the lost claims, those whose job is now `cancelled` at the same
   * attempt (X3): the worker aborts them as cancelled, not as a lease lost.
   * Read only when a claim was lost; absent: none.
   */
  cancelled?: CancelledClaim[];
}

/** A claim whose job was cancelled (X3), with the reason given to `cancel` (null: none). */
export interface CancelledClaim extends ClaimKey {
  reason: string | null;
}

export interface JobListStuckParams {
  /** Running jobs whose lease expired before this time. */
  leaseExpiredBefore: number;
  limit: number;
}

/** A running job whose lease expired: its worker is gone. */
export interface StuckJob extends ClaimKey {
  jobType: string;
  retryPolicy: string | null;
}

export interface JobCountReadyParams {
  now: number;
  jobTypes: readonly string[];
}

export interface JobDeleteExpiredParams {
  now: number;
  limit: number;
}
