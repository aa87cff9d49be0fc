/**
 * The stage a new job is stored in, the same on every backend: `delayed`
 * when it is not due yet, `enqueued` otherwise; a continuation follows its
 * parent (`waiting`, `enqueued` once the parent succeeded — `delayed` while
 * its own time has not come — `failed` with the parent's reason once it
 * failed for good).
 */
import { continuationStage, parentFailedReason } from "../../core/continuation-stage.js";
import type { JobStage } from "../../core/job-stage.js";
import { ParentNotFoundError } from "../../errors.js";
import type { JobInsert } from "../backend.js";
import type { Row } from "./job-rows.js";

/** `parent` is the parent's row (`stage`, `last_error`) as read in the inserting transaction; a missing one throws `ParentNotFoundError`. */
export function insertStage(job: JobInsert, now: number, parent: Row | undefined): { stage: JobStage; error: string | null } {
  if (!job.parentId) return { stage: job.runAt > now ? "delayed" : "enqueued", error: null };
  if (!parent) throw new ParentNotFoundError(job.parentId);
  const follows = continuationStage(parent.stage as JobStage);
  // Released at once (the parent already succeeded): a delay still to run makes it `delayed`, as on release.
  const stage = follows === "enqueued" && job.runAt > now ? "delayed" : follows;
  return { stage, error: stage === "failed" ? parentFailedReason(job.parentId, parent.last_error as string | null) : null };
}
