/**
 * One job (D3): its stage history with the time spent in each stage, the
 * durations, priority (X1), unique key (X2), parent and children (at most
 * 25, as the API sends them), the last error, progress, result and
 * metadata (X10, e.g. a stored `traceparent`), and the actions on it (D4). Everything
 * the job carries is shown as text (see element.ts).
 */
import type { JobDetail } from "./api-client.js";
import { formatDuration, formatIso, formatTime, shortId } from "./display-format.js";
import { h } from "./element.js";
import { stageTag } from "./job-list-view.js";

export interface JobDetailActions {
  /** Where "all jobs" goes: the list with the filter it had. */
  backHref: string;
  retry(id: string): void;
  remove(id: string): void;
  cancel(id: string): void;
}

/** How many children the API sends at most (D3). */
const CHILDREN_SHOWN = 25;

/** The job's detail panel. */
export function jobDetailView(job: JobDetail, now: number, readOnly: boolean, actions: JobDetailActions): HTMLElement {
  const canRetry = job.stage === "failed" || job.stage === "cancelled";
  const canDelete = job.stage === "success" || job.stage === "failed" || job.stage === "cancelled";
  const canCancel = !canDelete;
  return h(
    "section",
    { className: "panel job-detail", attrs: { "data-job-id": job.id } },
    h("p", null, h("a", { href: actions.backHref, className: "back" }, "‹ all jobs")),
    h("h2", null, "Job ", h("span", { className: "mono", title: job.id }, job.id), " ", stageTag(job.stage)),
    // A read-only dashboard refuses actions: no button is drawn.
    readOnly
      ? null
      : h(
          "div",
          { className: "detail-actions" },
          h(
            "button",
            { className: "action", attrs: { type: "button", "data-action": "retry", disabled: !canRetry }, onClick: () => actions.retry(job.id) },
            "Retry",
          ),
          h(
            "button",
            {
              className: "action danger",
              attrs: { type: "button", "data-action": "cancel", disabled: !canCancel },
              onClick: () => actions.cancel(job.id),
            },
            "Cancel",
          ),
          h(
            "button",
            {
              className: "action danger",
              attrs: { type: "button", "data-action": "delete", disabled: !canDelete },
              onClick: () => actions.remove(job.id),
            },
            "Delete",
          ),
        ),
    h(
      "dl",
      { className: "facts" },
      ...fact("type", h("span", { className: "job-type" }, job.jobType)),
      ...fact("attempt", String(job.attempt)),
      ...(job.runAt !== undefined ? fact("run at", timeCell(job.runAt, now)) : []),
      ...(job.createdAt !== undefined ? fact("created", timeCell(job.createdAt, now)) : []),
      ...(job.updatedAt !== undefined ? fact("updated", timeCell(job.updatedAt, now)) : []),
      ...(job.topic !== null ? fact("topic", `${job.topic} · partition ${job.partition ?? "?"} · seq ${job.seq ?? "?"}`) : []),
      ...fact("total", formatDuration(job.durations.totalMs)),
      ...fact("processing", formatDuration(job.durations.processingMs)),
      ...fact("waiting", formatDuration(job.durations.waitingMs)),
      ...(job.priority !== undefined ? fact("priority", String(job.priority)) : []),
      ...(job.uniqueKey !== undefined ? fact("unique key", uniqueKeyText(job)) : []),
      ...(job.group !== undefined && job.group !== null ? fact("group", h("span", { className: "job-group" }, job.group)) : []),
      ...fact("parent", job.parentIds.length === 0 ? "none" : h("span", null, ...job.parentIds.map(jobLink))),
    ),
    job.error !== null && job.error !== undefined
      ? h("div", { className: "error-box" }, h("h3", null, "Error"), h("pre", { className: "job-error" }, job.error))
      : null,
    job.progress !== null && job.progress !== undefined
      ? h("div", null, h("h3", null, "Progress"), h("pre", { className: "job-progress" }, asText(job.progress)))
      : null,
    job.result !== null && job.result !== undefined ? h("div", null, h("h3", null, "Result"), h("pre", { className: "job-result" }, asText(job.result))) : null,
    job.meta !== null && job.meta !== undefined ? h("div", null, h("h3", null, "Metadata"), h("pre", { className: "job-meta" }, asText(job.meta))) : null,
    h("h3", null, "Stage history"),
    stageHistory(job, now),
    h("h3", null, job.children.length >= CHILDREN_SHOWN ? `Continuations (first ${CHILDREN_SHOWN})` : `Continuations (${job.children.length})`),
    job.children.length === 0
      ? h("p", { className: "note" }, "None.")
      : h(
          "ul",
          { className: "children" },
          ...job.children.map((child) =>
            h("li", null, jobLink(child.id), " ", h("span", { className: "job-type" }, child.jobType), " ", stageTag(child.stage)),
          ),
        ),
  );
}

/**
 * The stage history, each row with how long the job stayed in that stage
 * and, for a noted change, the note in words (as `later jobs show` words it;
 * an unknown note as sent), shown as text.
 */
function stageHistory(job: JobDetail, now: number): HTMLElement {
  const terminal = job.stage === "success" || job.stage === "failed" || job.stage === "cancelled";
  return h(
    "table",
    { className: "history" },
    h("thead", null, h("tr", null, h("th", null, "stage"), h("th", null, "at"), h("th", null, "for"), h("th", null, "note"))),
    h(
      "tbody",
      null,
      ...job.stages.map((change, i) => {
        const next = job.stages[i + 1]?.at ?? (terminal ? null : now);
        return h(
          "tr",
          null,
          h("td", null, stageTag(change.stage)),
          h("td", { title: formatIso(change.at) }, formatTime(change.at, now)),
          h("td", null, next === null ? "" : formatDuration(next - change.at)),
          h("td", { className: "stage-note" }, change.note === undefined ? "" : stageNoteText(change.note)),
        );
      }),
    ),
  );
}

/** A history note in words: a put-back at shutdown (J9), a `PermanentJobError` (J3); others as sent. */
function stageNoteText(note: string): string {
  if (note === "shutdown") return "put back at shutdown";
  if (note === "permanent") return "permanent: PermanentJobError";
  return note;
}

/** The unique key with the slot it holds, as `later jobs show` words it: `nightly (holds pending)`, `nightly (released)`, `none`. */
function uniqueKeyText(job: JobDetail): string {
  if (job.uniqueKey === null || job.uniqueKey === undefined) return "none";
  return `${job.uniqueKey} ${job.uniqueSlot ? `(holds ${job.uniqueSlot})` : "(released)"}`;
}

function fact(name: string, value: Node | string): HTMLElement[] {
  return [h("dt", null, name), h("dd", null, value)];
}

function timeCell(ms: number, now: number): HTMLElement {
  return h("span", { title: formatIso(ms) }, formatTime(ms, now));
}

/** A link to a job's detail: its last 6 characters, the full id in the tooltip and the link. */
export function jobLink(id: string): HTMLElement {
  return h("a", { href: `#/jobs/${encodeURIComponent(id)}`, title: id, className: "job-link mono" }, shortId(id));
}

function asText(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}
