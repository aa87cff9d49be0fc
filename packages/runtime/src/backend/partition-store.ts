/**
 * The partition part of the seam (`backend.partitions`): topics, head
 * claims and their fencing, and the membership that spreads partitions over
 * servers.
 *
 * A partitioned job is claimed only as the head of its partition: the
 * unfinished job with the lowest sequence. A head claim first takes the
 * partition's lease (one row per partition, so blocked partitions cost one
 * index probe each, never a scan of the jobs behind them), bumps its fencing
 * epoch, then marks the head running. Every later write of that claim is
 * fenced by `(topic, partition, epoch)` and the job's `(id, attempt)`.
 *
 * Runs (P3, server option `partitionRunMax`): a claim may also return the
 * head's followers, the ready jobs right behind it, read but not written
 * (the partition lease, held by this owner alone at this epoch, keeps others
 * off them). Their outcomes are written with the head's, by `headFinish`,
 * in one write fenced by the epoch for the whole run. The partition row
 * records the last sequence of the run claimed (`run_until_seq`), so that a
 * claim finding a dead owner's head still `running` can tell whether that
 * owner was inside a run (see {@link ClaimedPartitionJob.lostAttempt}).
 */
import type { ClaimedJob, ClaimKey, JobOutcome } from "./job-store.js";

/** The partition statements of one backend, scoped to its namespace. */
export interface PartitionStore {
  /**
   * Records the topics in the database, with one row per partition, unless
   * present. A topic stored with another partition count throws
   * `PartitionCountMismatchError` and writes nothing.
   */
  topicRegister(params: TopicRegisterParams): Promise<void>;
  /** Claims the ready heads of unleased partitions among `partitions`, at most one per partition. */
  headClaim(params: PartitionHeadClaimParams): Promise<PartitionHeadClaimResult>;
  /** Stores a head's outcome if its claim still holds the partition lease, then frees the lease or claims the next head. */
  headFinish(params: PartitionHeadFinishParams): Promise<PartitionHeadFinishResult>;
  /**
   * Puts heads back at shutdown (their handler still running at the
   * deadline), in one write: for each claim whose partition lease this
   * owner still holds at the claim's epoch, the head goes back to its stage
   * before the claim (attempt undone, not counted as a failure) and the
   * partition lease is freed, so the partition's next owner claims the same
   * head at once. A claim whose epoch moved on is untouched. SQLite: one
   * `BEGIN IMMEDIATE`; PostgreSQL: one statement over `unnest` of the claims.
   */
  headRelease(params: PartitionHeadReleaseParams): Promise<PartitionHeadReleaseResult>;
  /** Extends the leases of held head claims whose epoch is still current. */
  leaseRenew(params: PartitionLeaseRenewParams): Promise<PartitionLeaseRenewResult>;
  /** Registers or refreshes a member and returns the live ones (dead rows are deleted on the way). */
  memberHeartbeat(params: PartitionMemberHeartbeatParams): Promise<PartitionMemberHeartbeatResult>;
  /** Deregisters a member at once (graceful shutdown). */
  memberRemove(params: PartitionMemberRemoveParams): Promise<void>;
  /**
   * Fails the partition's head at once, whatever its stage or lease, with
   * its waiting continuations, and frees the partition (bumping its epoch, so
   * the old claim's writes are rejected). Returns the failed job id, or null
   * when the partition has no unfinished job, and then changes nothing (its
   * lease and epoch stay), on every dialect.
   */
  headForceFail(params: PartitionHeadForceFailParams): Promise<string | null>;
  /** Deletes the partition's terminal jobs but the newest `keep` (by sequence); returns how many. */
  historyTruncate(params: PartitionHistoryTruncateParams): Promise<number>;
}

export interface TopicSpec {
  name: string;
  partitions: number;
}

export interface TopicRegisterParams {
  topics: readonly TopicSpec[];
  now: number;
}

export interface PartitionRef {
  topic: string;
  partition: number;
}

/** Identifies one head claim. */
export interface PartitionClaim extends ClaimKey, PartitionRef {
  epoch: number;
}

/** A partition head claimed for one attempt. */
export interface ClaimedPartitionJob extends ClaimedJob, PartitionRef {
  seq: number;
  /** The partition lease's fencing epoch of this claim. */
  epoch: number;
  /**
   * True when the head was still `running` under a free or expired partition
   * lease: attempt `attempt` ran on a server that died or stalled. The claim
   * took the lease (a new epoch) but started no attempt (the attempt number
   * is the lost one's, the stage stays `running`): its holder records the
   * lost attempt's outcome, the retry decision's, with `partitions.headFinish`,
   * whose `claimNext` then starts the next attempt when it is due. So a head
   * whose process dies on every attempt fails once its retries are spent and
   * frees its partition, as the stuck-job sweep does for regular jobs.
   * Not when the partition's recorded run (`run_until_seq`) goes past the
   * head: the dead owner was inside a run and which of its jobs was running
   * is unknown, so the claim puts the head back unstarted (attempt undone, a
   * `release` entry), claims it as a new attempt, and marks the partition
   * careful up to that run's end (see {@link followers}).
   */
  lostAttempt?: boolean;
  /**
   * A head's run: the jobs of the partition with the next sequences, each
   * ready now and of a claimable type, at most `runMax - 1`, stopping at the
   * first that is not (so the run is the contiguous ready prefix). Read, not
   * written: each is still in the stage it was read in, and its `attempt` is
   * the one it runs as (the stored one + 1). Absent or empty: a run of one.
   * Never given with a lost attempt, nor while the partition is careful:
   * after a dead owner's run, heads up to that run's last sequence are
   * claimed alone, so a job that kills its process is counted against itself.
   */
  followers?: ClaimedPartitionJob[];
  /** True on a follower (see {@link followers}): its row was read, not written. */
  follower?: boolean;
}

/** A follower of a run that ran, as `headFinish` writes it. */
export interface PartitionFollowerOutcome extends ClaimKey {
  /** When its attempt started: the time of its `running` history entry. */
  startedAt: number;
  outcome: JobOutcome;
  /** How long it is kept once terminal (J11: its type's retention for the outcome's stage). */
  retentionMs: number;
}

export interface PartitionHeadClaimParams {
  owner: string;
  /** Look only at these partitions (the ones this server owns). */
  partitions: readonly PartitionRef[];
  /** At most this many heads (one per partition). */
  limit: number;
  now: number;
  leaseExpiresAt: number;
  /** Heads of other job types are left alone. */
  jobTypes: readonly string[];
  /** Most jobs per run, the head included (see {@link ClaimedPartitionJob.followers}). Default 1: no followers. */
  runMax?: number | undefined;
}

export interface PartitionHeadClaimResult {
  claimed: ClaimedPartitionJob[];
  /** Earliest time a delayed or retrying head of the given, unleased partitions becomes ready; null for none. */
  nextRunAt: number | null;
}

export interface PartitionHeadFinishParams {
  owner: string;
  claim: PartitionClaim;
  outcome: JobOutcome;
  now: number;
  retentionMs: number;
  /**
   * The followers of the head's run that ran after it (a success), in order,
   * the last one's outcome whatever it was. Each is written as its claim
   * then its outcome (history entries at `startedAt` and `now`), as long as
   * its row is still in the stage it was read in at the attempt before its
   * own: the first that is not (cancelled meanwhile, X3) is skipped and ends
   * the applied prefix. Nothing at all is written when the lease is lost.
   */
  followers?: readonly PartitionFollowerOutcome[] | undefined;
  /** After the write, claim the partition's next head at once if it is ready (and of `jobTypes`), keeping the lease; `runMax` as for `headClaim`. */
  claimNext?: { leaseExpiresAt: number; jobTypes: readonly string[]; runMax?: number | undefined } | undefined;
}

export interface PartitionHeadFinishResult {
  /** False when the claim had lost its lease (another epoch holds the partition): nothing was written. */
  applied: boolean;
  /** Continuations that became `enqueued` because the job succeeded. */
  released: number;
  /** The next head, claimed in the same transaction (`claimNext`), with its followers. */
  next: ClaimedPartitionJob | null;
  /** How many of the given `followers` were written (a prefix of them); absent when none were given. */
  followersApplied?: number;
}

export interface PartitionHeadReleaseParams {
  owner: string;
  claims: readonly PartitionClaim[];
  now: number;
  /** `"shutdown"`: each put-back's history entry carries the note `shutdown` (docs/semantics.md J9). Default: a plain entry. */
  reason?: "shutdown" | undefined;
}

export interface PartitionHeadReleaseResult {
  /** The claims that were put back; the others had lost their lease. */
  released: PartitionClaim[];
}

export interface PartitionLeaseRenewParams {
  owner: string;
  claims: readonly PartitionClaim[];
  leaseExpiresAt: number;
  /**
   * Followers running now under some of `claims`' leases (id and the attempt
   * they run as): those whose row is now `cancelled` are reported in the
   * result's `cancelled` (X3), with their partition's epoch. Default none.
   */
  followers?: readonly PartitionClaim[] | undefined;
}

export interface PartitionLeaseRenewResult {
  /** Claims still held; any claim not listed has lost its lease. */
  renewed: PartitionClaim[];
  /**
   * Of the lost claims, those whose head job is now `cancelled` at the same
   * attempt (X3: a cancel frees the partition, so the lease is lost too).
   * Read only when a claim was lost; absent: none. Also the given
   * `followers` found `cancelled` (their partition lease may be kept).
   */
  cancelled?: (PartitionClaim & { reason: string | null })[];
}

export interface PartitionMemberHeartbeatParams {
  member: string;
  now: number;
  expiresAt: number;
}

export interface PartitionMemberHeartbeatResult {
  /** Members alive at `now`, this one included, sorted. */
  members: string[];
}

export interface PartitionMemberRemoveParams {
  member: string;
}

export interface PartitionHeadForceFailParams extends PartitionRef {
  reason: string;
  now: number;
  retentionMs: number;
}

export interface PartitionHistoryTruncateParams extends PartitionRef {
  /** Terminal jobs of the partition to keep, newest first. */
  keep: number;
}
