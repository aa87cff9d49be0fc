/**
 * Partition-head rules that are the same on every backend: when a head can
 * be claimed, and how a claimed head row maps to the seam's type.
 */
import type * as B from "../backend.js";
import { claimedJob, type Row } from "./job-rows.js";

/**
 * When a head can be claimed: now for an enqueued head, at `run_at` for a
 * delayed or retrying one, at once for a `running` head whose partition
 * lease is free (its claimer is gone: the claim records the lost attempt,
 * see `ClaimedPartitionJob.lostAttempt`). Null for a waiting continuation,
 * which blocks until its parent succeeds.
 */
export function readyAt(head: Row, now: number): number | null {
  switch (head.stage) {
    case "enqueued":
    case "running":
      return now;
    case "delayed":
    case "requeued":
      return Math.max(now, Number(head.run_at));
    default:
      return null;
  }
}

/** A claimed head row as the seam's {@link B.ClaimedPartitionJob}. */
export function claimedHead(r: Row, ref: B.PartitionRef, epoch: number, lostAttempt = false): B.ClaimedPartitionJob {
  const head: B.ClaimedPartitionJob = {
    ...claimedJob(r),
    topic: ref.topic,
    partition: ref.partition,
    seq: Number(r.seq),
    epoch,
  };
  if (lostAttempt) head.lostAttempt = true;
  return head;
}
