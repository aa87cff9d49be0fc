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
  // Built on claimedJob's own object rather than spread from it: V8 ran the spread with properties added at about
  // 3 µs a row, 60 times this, and every follower of every run is built here.
  const head = claimedJob(r) as B.ClaimedPartitionJob;
  head.topic = ref.topic;
  head.partition = ref.partition;
  head.seq = Number(r.seq);
  head.epoch = epoch;
  if (lostAttempt) head.lostAttempt = true;
  return head;
}

/**
 * Whether a job behind a claimed head can join its run (P3): ready now, by the
 * readiness test of a head claim (`enqueued`, or `delayed` / `requeued` and due),
 * and of a claimable type. A waiting continuation, a job not yet due or of a
 * type not handled (or paused) is not, and ends the run.
 */
export function followsInRun(r: Row, now: number, jobTypes: readonly string[]): boolean {
  if (r.stage !== "enqueued" && r.stage !== "delayed" && r.stage !== "requeued") return false;
  return readyAt(r, now) === now && jobTypes.includes(String(r.job_type));
}

/**
 * A head's followers from the unfinished jobs behind it in sequence order
 * (`rows`, each with the {@link claimedJob} columns, `stage` and `seq`): the
 * contiguous prefix that {@link followsInRun}, at most `max`. Each runs as
 * its stored attempt + 1, under the head's epoch.
 */
export function runFollowers(
  rows: readonly Row[],
  ref: B.PartitionRef,
  epoch: number,
  now: number,
  jobTypes: readonly string[],
  max: number,
): B.ClaimedPartitionJob[] {
  const followers: B.ClaimedPartitionJob[] = [];
  for (const r of rows) {
    if (followers.length >= max || !followsInRun(r, now, jobTypes)) break;
    const f = claimedHead(r, ref, epoch);
    f.attempt += 1;
    f.follower = true;
    followers.push(f);
  }
  return followers;
}

/** How many followers a head may have: `runMax - 1`, none while the partition is careful up to the head's sequence or past it. */
export function followerRoom(runMax: number | undefined, headSeq: number, carefulUntilSeq: unknown): number {
  const careful = carefulUntilSeq !== null && carefulUntilSeq !== undefined && headSeq <= Number(carefulUntilSeq);
  return careful ? 0 : Math.max(0, (runMax ?? 1) - 1);
}

/**
 * The claims whose `cancelled` rows a partition lease renewal looks for (X3):
 * the lost ones at their attempt, and the running followers at their stored
 * attempt (the one before their own: a follower's row is never written while
 * it runs).
 */
export function cancelCandidates(lost: readonly B.PartitionClaim[], followers: readonly B.PartitionClaim[]): B.ClaimKey[] {
  return [...lost, ...followers.map((f) => ({ id: f.id, attempt: f.attempt - 1 }))];
}

/** A renewal's `cancelled`: those of `lost` and `followers` whose row {@link cancelCandidates} found `cancelled`, with the reason. */
export function renewalCancelled(
  lost: readonly B.PartitionClaim[],
  followers: readonly B.PartitionClaim[],
  found: readonly B.CancelledClaim[],
): (B.PartitionClaim & { reason: string | null })[] {
  const reasons = new Map(found.map((k) => [k.id, k.reason]));
  return [...lost, ...followers].filter((k) => reasons.has(k.id)).map((k) => ({ ...k, reason: reasons.get(k.id) ?? null }));
}
