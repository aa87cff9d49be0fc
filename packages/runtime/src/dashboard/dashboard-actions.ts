/**
 * D4 actions, through the same `JobController` as `server.retry`/`delete`
 * and `retryJobs`/`deleteJobs` (docs/semantics.md X7), so they check, refuse and batch
 * exactly as those do:
 *
 * - `POST jobs/{id}/retry`: a `failed` job back to `enqueued`;
 * - `DELETE jobs/{id}`: a finished job removed;
 * - `POST jobs/retry?stage&type` and `POST jobs/delete?stage&type`: every
 *   job matching the list's filter, in batches of 1000, each batch its own
 *   transaction. The list's other filters (`topic`, `partition`, `q`) are
 *   refused (400): the action would take more jobs than the list shows.
 *
 * Each answers `{ action, count, jobIds? , filter? }` and calls the
 * `onAction` hook with the same and the time. An unknown id is 404
 * `JOB_NOT_FOUND`; a job in a stage the action does not take is 409
 * `JOB_ACTION_REFUSED`; nothing is changed either way.
 *
 * Not implemented yet in the runtime, answered 501 `NOT_IMPLEMENTED` (the
 * routes exist, so the page and clients can be written against them):
 * `POST jobs/{id}/cancel` and `POST jobs/cancel`. Pause and resume (X4)
 * are in `dashboard-pause.ts`.
 */
import { isJobId } from "../core/job-id.js";
import { InvalidArgumentError } from "../errors.js";
import type { JobController, JobFilter } from "../publisher/job-controller.js";
import type { DashboardActionEvent } from "./dashboard-options.js";
import { errorResponse, jsonResponse } from "./dashboard-response.js";
import { parseStage } from "./job-list-query.js";

/** What the action handlers need. */
export interface ActionContext {
  controller: JobController;
  now(): number;
  onAction: ((event: DashboardActionEvent) => void) | undefined;
}

/** Retry or delete one job. */
export async function jobAction(context: ActionContext, action: "retry" | "delete", id: string): Promise<Response> {
  checkJobId(id);
  if (action === "retry") await context.controller.retry(id);
  else await context.controller.delete(id);
  return done(context, { action, jobIds: [id], count: 1 });
}

/** Retry or delete every job matching the filter of `query`. */
export async function bulkAction(context: ActionContext, action: "retry" | "delete", query: URLSearchParams): Promise<Response> {
  for (const name of ["topic", "partition", "q"]) {
    if (query.has(name)) {
      throw new InvalidArgumentError(
        `${action} of every matching job takes the filters stage and type only, not ${name}: clear it, or act on the jobs one by one`,
      );
    }
  }
  const filter: JobFilter = {};
  const stage = query.get("stage");
  if (stage !== null) filter.stage = parseStage(stage);
  const type = query.get("type");
  if (type !== null) filter.jobType = type;
  const count = action === "retry" ? await context.controller.retryJobs(filter) : await context.controller.deleteJobs(filter);
  return done(context, { action, filter, count });
}

/** 501 for an action the runtime does not have yet. */
export function notImplemented(what: string): Response {
  return errorResponse(501, "NOT_IMPLEMENTED", `${what} is not implemented yet: this release of later cannot do it`);
}

export function checkJobId(id: string): void {
  if (!isJobId(id)) throw new InvalidArgumentError(`"${String(id).slice(0, 40)}" is not a job id (26 characters of lowercase Crockford base32)`);
}

function done(context: ActionContext, result: Omit<DashboardActionEvent, "at">): Response {
  const event: DashboardActionEvent = { ...result, at: context.now() };
  try {
    context.onAction?.(event);
  } catch {
    // The action is done; an audit hook's failure does not undo or hide it.
  }
  return jsonResponse(result);
}
