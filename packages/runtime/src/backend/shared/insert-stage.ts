/**
 * The stage a new job is stored in, the same on every backend: `delayed`
 * when it is not due yet, `enqueued` otherwise; a continuation follows its
 * parent (`waiting`, `enqueued` once the parent succeeded — `delayed` while
 * its own time has not come — `failed` with the parent's reason once it
 * failed for good). A job stored `failed` is terminal from its insert, so it
 * gets its expiry there, as a finish gives one (J11): without it the sweep
 * and every filter form of `control`, which read only rows with an expiry,
 * would never see it.
 */
import { continuationStage, parentFailedReason } from "../../core/continuation-stage.js";
import type { JobStage } from "../../core/job-stage.js";
import { ParentNotFoundError } from "../../errors.js";
import type { JobInsert } from "../backend.js";
import type { Row } from "./job-rows.js";

/** `JobInsertManyParams.retentionMs` when not given: the servers' default `retentionMs`, one day (J11). */
export const DEFAULT_INSERT_RETENTION_MS = 86_400_000;

/** What {@link insertStage} decided for one job. */
export interface InsertedStage {
  stage: JobStage;
  /** The `failed` reason of a continuation whose parent had failed; else null. */
  error: string | null;
  /** `now + retentionMs` for a job stored terminal (`failed`, `cancelled`); else null (unfinished). */
  expiresAt: number | null;
  /**
   * A fan-in continuation (X5): how many of its parents had not succeeded
   * (its `parents_left` column); undefined for every other job (stored NULL).
   */
  parentsLeft?: number;
}

/** The stage of a job with no parent: `delayed` until its run time, `enqueued` from then. */
export function dueStage(job: Pick<JobInsert, "runAt">, now: number): "delayed" | "enqueued" {
  return job.runAt > now ? "delayed" : "enqueued";
}

/**
 * `parent` is the parent's row (`stage`, `last_error`) as read in the
 * inserting transaction; a missing one throws `ParentNotFoundError`.
 * `retentionMs`: the retention of a job stored terminal.
 */
export function insertStage(job: JobInsert, now: number, parent: Row | undefined, retentionMs = DEFAULT_INSERT_RETENTION_MS): InsertedStage {
  if (job.parentIds) throw new Error("a fan-in continuation's stage is decided by fanInStage");
  if (!job.parentId) return { stage: dueStage(job, now), error: null, expiresAt: null };
  if (!parent) throw new ParentNotFoundError(job.parentId);
  const follows = continuationStage(parent.stage as JobStage);
  // Released at once (the parent already succeeded): a delay still to run makes it `delayed`, as on release.
  const stage = follows === "enqueued" && job.runAt > now ? "delayed" : follows;
  if (stage === "cancelled") return { stage, error: null, expiresAt: now + retentionMs };
  if (stage !== "failed") return { stage, error: null, expiresAt: null };
  return { stage, error: parentFailedReason(job.parentId, parent.last_error as string | null), expiresAt: now + retentionMs };
}

/**
 * The stage of a fan-in continuation (X5) from its parents' rows as read
 * (locked and marked) in the inserting transaction, `parents` by id: the
 * first parent (in id order) the namespace does not hold throws
 * `ParentNotFoundError`; else the first parent that failed for good makes it
 * `failed` with that parent's reason (J5's reason) and its expiry; else, all
 * succeeded, it is released at once (`enqueued`, or `delayed` while its own
 * time is to come); else it is `waiting` for the parents not yet succeeded,
 * their number its `parentsLeft`. A fan-in child stores `parentsLeft` in
 * every case (0 once released), which is what marks it as one.
 */
export function fanInStage(job: JobInsert, now: number, parents: ReadonlyMap<string, Row>, retentionMs = DEFAULT_INSERT_RETENTION_MS): InsertedStage {
  const ids = job.parentIds ?? [];
  const rows = ids.map((id) => {
    const row = parents.get(id);
    if (!row) throw new ParentNotFoundError(id);
    return row;
  });
  const left = rows.filter((r) => r.stage !== "success").length;
  const failed = ids.findIndex((_, i) => rows[i]!.stage === "failed");
  if (failed >= 0) {
    const reason = parentFailedReason(ids[failed]!, rows[failed]!.last_error as string | null);
    return { stage: "failed", error: reason, expiresAt: now + retentionMs, parentsLeft: left };
  }
  const stage: JobStage = left > 0 ? "waiting" : job.runAt > now ? "delayed" : "enqueued";
  return { stage, error: null, expiresAt: null, parentsLeft: left };
}

/** Every parent id a job names (its one `parentId`, or its fan-in `parentIds`). */
export function parentIdsOf(job: JobInsert): readonly string[] {
  return job.parentIds ?? (job.parentId ? [job.parentId] : []);
}

/** The distinct parent ids of a batch, sorted: the order the inserts lock parents in. */
export function batchParentIds(jobs: readonly JobInsert[]): string[] {
  // No array per job: most batches have no parent at all.
  let ids: Set<string> | undefined;
  for (const job of jobs) {
    if (job.parentId) (ids ??= new Set()).add(job.parentId);
    else if (job.parentIds) for (const parent of job.parentIds) (ids ??= new Set()).add(parent);
  }
  return ids === undefined ? [] : [...ids].sort();
}

/**
 * Refuses a batch in which a continuation's parent is a job of the same
 * batch, with `ParentNotFoundError` before anything is written, the same on
 * every dialect and insert path (J5: a parent must be stored, by an earlier
 * insert, when its continuation is inserted). The public API cannot ask for
 * it (`enqueueMany` takes one `parentId`, never a job of its own batch), and
 * accepting it would cost the PostgreSQL insert, which reads every parent
 * before its one statement, a second way to decide stages and to mark the
 * parent's `waiters`. One pass over the batch; the set of its ids is built
 * only once a job has a parent.
 */
export function refuseParentsInBatch(jobs: readonly JobInsert[]): void {
  let ids: Set<string> | undefined;
  for (const job of jobs) {
    if (!job.parentId && !job.parentIds) continue;
    ids ??= new Set(jobs.map((j) => j.id));
    for (const parent of parentIdsOf(job)) if (ids.has(parent)) throw new ParentNotFoundError(parent);
  }
}
