import type { ClaimedPartitionJob, JobOutcome } from "../backend/backend.js";
import type { WorkerState } from "../metrics/server-metrics.js";
import { HeldClaim } from "../worker/held-claim.js";
import { partitionKey } from "./partition-membership.js";

/** A run being executed (P3): the head's claim, its followers, and what ran. */
export interface Run {
  /** Its partition's key ({@link partitionKey}). */
  readonly key: string;
  readonly head: HeldClaim;
  /** The head's outcome, once known. */
  headOutcome: JobOutcome | null;
  /** The followers read with the head's claim (not written). */
  readonly followers: readonly ClaimedPartitionJob[];
  /** The followers that ran, in order, with their start and outcome. */
  readonly ran: { claim: HeldClaim; startedAt: number; outcome: JobOutcome }[];
  /** The claim running now (the head, then each follower): the one renewed and aborted. */
  current: HeldClaim;
}

/**
 * The partition runner's runs in this process: the claim running per
 * partition (a head, or a follower of its run), from the head's claim until
 * its chain moves on or ends, and the run each held claim belongs to.
 */
export class HeldRuns {
  private readonly byPartition = new Map<string, HeldClaim>();
  private readonly runs = new Map<HeldClaim, Run>();

  /** Claims running now, one per partition. */
  get size(): number {
    return this.byPartition.size;
  }

  /** The claims running now (aborted ones included until their run is released). */
  claims(): IterableIterator<HeldClaim> {
    return this.byPartition.values();
  }

  /** Whether a claim of the partition of `key` is held. */
  holds(key: string): boolean {
    return this.byPartition.has(key);
  }

  /** The run `claim` (a head or a follower) belongs to. */
  runOf(claim: HeldClaim): Run | undefined {
    return this.runs.get(claim);
  }

  /** Holds a claimed head (and its followers, read with it) as a new run; returns the head's claim. */
  hold(job: ClaimedPartitionJob, leaseExpiresAt: number): HeldClaim {
    const claim = new HeldClaim(job, leaseExpiresAt, true);
    const key = partitionKey(job);
    this.byPartition.set(key, claim);
    this.runs.set(claim, { key, head: claim, headOutcome: null, followers: job.followers ?? [], ran: [], current: claim });
    return claim;
  }

  /** Makes a follower the run's running claim, under the lease the previous one last renewed; `startedAt` is now. */
  holdFollower(run: Run, job: ClaimedPartitionJob, now: number): HeldClaim {
    const claim = new HeldClaim(job, run.current.leaseExpiresAt, true);
    run.current = claim;
    this.byPartition.set(run.key, claim);
    this.runs.set(claim, run);
    claim.startedAt = now; // the time of its `running` entry, even when it fails before its handler starts
    return claim;
  }

  /** Forgets the run and its claims (its partition is free here unless another run holds it already). */
  release(run: Run): void {
    if (this.byPartition.get(run.key) === run.current) this.byPartition.delete(run.key);
    this.runs.delete(run.head);
    for (const r of run.ran) this.runs.delete(r.claim);
    this.runs.delete(run.current);
  }

  /** Claims running now, as workers for `later_workers` (each chain of heads is one, numbered while it runs). */
  *workerStates(): Generator<WorkerState> {
    for (const h of this.byPartition.values()) if (h.workerId !== 0 && !h.abandoned) yield { id: h.workerId, busy: true };
  }

  /** Claims running now by topic, for `later_partitions_active`. */
  activeByTopic(): Map<string, number> {
    const active = new Map<string, number>();
    for (const h of this.byPartition.values()) if (!h.abandoned) active.set(h.head!.topic, (active.get(h.head!.topic) ?? 0) + 1);
    return active;
  }
}
