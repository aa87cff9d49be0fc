import type { JobStage } from "./job-stage.js";

/**
 * The stage a new continuation is stored in, from its parent's stage:
 * enqueued at once when the parent already succeeded, failed at once when it
 * failed for good, cancelled at once when it was cancelled (X3: its waiting
 * continuations were cancelled with it), waiting otherwise.
 */
export function continuationStage(parentStage: JobStage): JobStage {
  if (parentStage === "success") return "enqueued";
  if (parentStage === "failed") return "failed";
  if (parentStage === "cancelled") return "cancelled";
  return "waiting";
}

/** The reason stored on a continuation whose parent failed for good. */
export function parentFailedReason(parentId: string, parentError: string | null): string {
  return `parent job ${parentId} failed: ${parentError ?? "unknown reason"}`;
}
