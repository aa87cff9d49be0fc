/**
 * D4 actions, through the same `JobController` as `server.retry`/`delete`/`cancel`
 * and `retryJobs`/`deleteJobs`/`cancelJobs` (docs/semantics.md X7, X3), so they check, refuse and batch
 * exactly as those do:
 *
 * - `POST jobs/{id}/retry`: a `failed` or `cancelled` job back to `enqueued`;
 * - `DELETE jobs/{id}`: a finished job removed;
 * - `POST jobs/{id}/cancel?reason`: an unfinished job ends `cancelled` (X3;
 *   `count` 0 when it had finished already, nothing changed);
 * - `POST jobs/retry?stage&type`, `POST jobs/delete?stage&type` and
 *   `POST jobs/cancel?stage&type&reason`: every
 *   job matching the list's filter, in batches of 1000, each batch its own
 *   transaction. The list's other filters (`topic`, `partition`, `q`) are
 *   refused (400): the action would take more jobs than the list shows.
 *
 * Each answers `{ action, count, jobIds? , filter? }` and calls the
 * `onAction` hook with the same and the time. An unknown id is 404
 * `JOB_NOT_FOUND`; a job in a stage the action does not take is 409
 * `JOB_ACTION_REFUSED`; nothing is changed either way.
 *
 * Pause and resume (X4) are in `dashboard-pause.ts`.
 */
import { isJobId } from "../core/job-id.js";
import { InvalidArgumentError } from "../errors.js";
import type { JobController, JobFilter } from "../publisher/job-controller.js";
import type { DashboardActionEvent } from "./dashboard-options.js";
import { jsonResponse } from "./dashboard-response.js";
import { parseStage } from "./job-list-query.js";

/** What the action handlers need. */
export interface ActionContext {
  controller: JobController;
  now(): number;
  onAction: ((event: DashboardActionEvent) => void) | undefined;
}

/** Retry, delete or cancel one job (`query`: cancel's `reason`). */
export async function jobAction(context: ActionContext, action: "retry" | "delete" | "cancel", id: string, query?: URLSearchParams): Promise<Response> {
  checkJobId(id);
  if (action === "cancel") {
    const cancelled = await context.controller.cancel(id, query?.get("reason") ?? undefined);
    return done(context, { action, jobIds: cancelled ? [id] : [], count: cancelled ? 1 : 0 });
  }
  if (action === "retry") await context.controller.retry(id);
  else await context.controller.delete(id);
  return done(context, { action, jobIds: [id], count: 1 });
}

/** Retry, delete or cancel every job matching the filter of `query`. */
export async function bulkAction(context: ActionContext, action: "retry" | "delete" | "cancel", query: URLSearchParams): Promise<Response> {
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
  const count =
    action === "retry"
      ? await context.controller.retryJobs(filter)
      : action === "delete"
        ? await context.controller.deleteJobs(filter)
        : await context.controller.cancelJobs(filter, { reason: query.get("reason") ?? undefined });
  return done(context, { action, filter, count });
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
