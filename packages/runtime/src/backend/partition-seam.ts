/**
 * The partition part of the {@link Backend} seam: its parameter and result
 * types (the methods are on `Backend`).
 */
import type { ClaimedJob, ClaimKey, JobOutcome } from "./backend.js";

// ---- topics and partitions ------------------------------------------------
//
// A partitioned job is claimed only as the head of its partition: the
// unfinished job with the lowest sequence. A head claim first takes the
// partition's lease (one row per partition, so blocked partitions cost one
// index probe each, never a scan of the jobs behind them), bumps its fencing
// epoch, then marks the head running. Every later write of that claim is
// fenced by `(topic, partition, epoch)` and the job's `(id, attempt)`.

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
   * lost attempt's outcome, the retry decision's, with `partitionHeadFinish`,
   * whose `claimNext` then starts the next attempt when it is due. So a head
   * whose process dies on every attempt fails once its retries are spent and
   * frees its partition, as the stuck-job sweep does for regular jobs.
   */
  lostAttempt?: boolean;
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
  /** After the write, claim the partition's next head at once if it is ready (and of `jobTypes`), keeping the lease. */
  claimNext?: { leaseExpiresAt: number; jobTypes: readonly string[] } | undefined;
}

export interface PartitionHeadFinishResult {
  /** False when the claim had lost its lease (another epoch holds the partition): nothing was written. */
  applied: boolean;
  /** Continuations that became `enqueued` because the job succeeded. */
  released: number;
  /** The next head, claimed in the same transaction (`claimNext`). */
  next: ClaimedPartitionJob | null;
}

export interface PartitionLeaseRenewParams {
  owner: string;
  claims: readonly PartitionClaim[];
  leaseExpiresAt: number;
}

export interface PartitionLeaseRenewResult {
  /** Claims still held; any claim not listed has lost its lease. */
  renewed: PartitionClaim[];
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

/** Read from the counters kept with every change (never a count of the jobs). */
export interface PartitionDepthResult {
  /** Every partition of the namespace's topics, by topic and partition: its unfinished jobs (not `success`, `failed` or `cancelled`) and lease owner. */
  partitions: { topic: string; partition: number; unfinished: number; leaseOwner: string | null }[];
}

/** Read from the counters kept with every change (never a count of the jobs). */
export interface TopicDepthResult {
  /** Every topic of the namespace, by name: its partition count and unfinished jobs over all its partitions. */
  topics: { topic: string; partitions: number; unfinished: number }[];
}
