/**
 * The stage a new job is stored in, the same on every backend: `delayed`
 * when it is not due yet, `enqueued` otherwise; a continuation follows its
 * parent (`waiting`, `enqueued` once the parent succeeded, `failed` with the
 * parent's reason once it failed for good).
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
  const stage = continuationStage(parent.stage as JobStage);
  return { stage, error: stage === "failed" ? parentFailedReason(job.parentId, parent.last_error as string | null) : null };
}
