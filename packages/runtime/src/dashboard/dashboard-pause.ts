/**
 * The dashboard's pause and resume (docs/semantics.md X4, D4), through the
 * same `PauseController` as `server.pause`/`resume`, so they check and
 * refuse exactly as those do:
 *
 * - `POST queues/{jobType}/pause`, `POST queues/{jobType}/resume`: a job
 *   type; `POST topics/{topic}/pause`, `POST topics/{topic}/resume`: a
 *   topic (every partition).
 * - Each answers `{ action, jobType | topic, changed }` (`changed` false:
 *   it already was so) and calls the `onAction` hook with the target and
 *   `count` 1 or 0. An unknown job type is 404 `JOB_TYPE_NOT_FOUND`, an
 *   unknown topic 404 `UNKNOWN_TOPIC`; nothing is written.
 * - The overview lists what is paused (`paused`, read per request: one
 *   primary-key range of a few rows).
 *
 * The dashboard handles no job type itself: a type is known from the
 * servers' rows or its stored jobs and schedules (`control.pauseTargetKnown`).
 * As every action, refused on a read-only dashboard (see `create-dashboard.ts`).
 */
import type { Backend } from "../backend/backend.js";
import { PauseController, type PausedEntry, type PauseTarget } from "../publisher/pause-controller.js";
import type { DashboardActionEvent } from "./dashboard-options.js";
import { jsonResponse } from "./dashboard-response.js";

/** What the pause routes need of the route context. */
interface PauseRouteContext {
  backend: Backend<unknown>;
  now(): number;
  onAction: ((event: DashboardActionEvent) => void) | undefined;
}

/** Pauses or resumes one job type or topic. */
export async function pauseAction(context: PauseRouteContext, action: "pause" | "resume", target: PauseTarget): Promise<Response> {
  const controller = new PauseController(context.backend, context.now, new Set(), () => {});
  const changed = await (action === "pause" ? controller.pause(target) : controller.resume(target));
  try {
    context.onAction?.({ action, target, count: changed ? 1 : 0, at: context.now() });
  } catch {
    // Done; an audit hook's failure does not undo or hide it.
  }
  return jsonResponse({ action, ...target, changed });
}

/** The paused job types and topics, for the overview. */
export function pausedList(context: Pick<PauseRouteContext, "backend">): Promise<PausedEntry[]> {
  return new PauseController(
    context.backend,
    () => 0,
    new Set(),
    () => {},
  ).listPaused();
}
