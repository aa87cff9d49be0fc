/**
 * Pause and resume on the page (X4): a panel above the stage cards that
 * lists the paused job types and topics, each with a "paused" badge and a
 * Resume button, and, while the list is filtered by one job type or topic
 * (that type's or topic's view), its state with a Pause or Resume button.
 * Each button asks for a confirmation (in `main.ts`). On a read-only
 * dashboard the badges are shown and no button is drawn.
 */
import type { JobFilter, Overview, PauseTargetJson } from "./api-client.js";
import { formatIso } from "./display-format.js";
import { h } from "./element.js";

export interface PauseActions {
  pause(target: PauseTargetJson): void;
  resume(target: PauseTargetJson): void;
  filter(change: Partial<JobFilter>): void;
}

/** The panel, or null when nothing is paused and the list shows no single type or topic. */
export function pausedPanel(overview: Overview, filter: JobFilter, readOnly: boolean, actions: PauseActions): HTMLElement | null {
  const paused = overview.paused ?? [];
  const rows: HTMLElement[] = [];
  const isPaused = (t: PauseTargetJson) => paused.find((p) => ("jobType" in t ? p.jobType === t.jobType : p.topic === t.topic));
  const shown = new Set<string>();
  const row = (target: PauseTargetJson) => {
    const kind = "jobType" in target ? "type" : "topic";
    const name = "jobType" in target ? target.jobType : target.topic;
    shown.add(`${kind}\0${name}`);
    const entry = isPaused(target);
    const button = readOnly
      ? null
      : h(
          "button",
          {
            className: entry ? "action" : "action danger",
            attrs: { type: "button", "data-pause-action": entry ? "resume" : "pause", "data-pause-kind": kind, "data-pause-name": name },
            onClick: () => (entry ? actions.resume(target) : actions.pause(target)),
          },
          entry ? "Resume" : "Pause",
        );
    return h(
      "div",
      { className: "paused-row", attrs: { "data-paused-kind": kind, "data-paused-name": name } },
      entry
        ? h("span", { className: "badge warning paused-badge", title: `paused since ${formatIso(entry.pausedAt)}` }, "paused")
        : h("span", { className: "badge-state" }, "running"),
      " ",
      h("span", { className: "note" }, kind === "type" ? "job type " : "topic "),
      h(
        "button",
        { className: "link-button job-type", attrs: { type: "button" }, onClick: () => actions.filter(kind === "type" ? { type: name } : { topic: name }) },
        name,
      ),
      " ",
      ...(button ? [button] : []),
    );
  };
  if (filter.type) rows.push(row({ jobType: filter.type }));
  if (filter.topic) rows.push(row({ topic: filter.topic }));
  for (const p of paused) {
    const target: PauseTargetJson = p.jobType !== undefined ? { jobType: p.jobType } : { topic: p.topic! };
    const key = "jobType" in target ? `type\0${target.jobType}` : `topic\0${target.topic}`;
    if (!shown.has(key)) rows.push(row(target));
  }
  if (rows.length === 0) return null;
  return h(
    "section",
    { className: "panel paused", attrs: { "aria-label": "Paused job types and topics" } },
    h("h2", null, paused.length === 0 ? "Pause" : `Paused (${paused.length})`),
    h(
      "p",
      { className: "note" },
      "A paused job type or topic starts no new job on any server (within a poll interval); running jobs finish and enqueue goes on.",
    ),
    ...rows,
  );
}
