/**
 * Per job type limits on the page (X9): a panel beside the workers with a
 * row per limited job type: its running jobs against `concurrency` (every
 * server's), its starts in the current window against the rate limit, and
 * the ready jobs the limit holds back; a "at limit" badge when a limit
 * leaves no slot free. A type with a `groupConcurrency` has a second row:
 * its busiest groups (most running plus waiting first), each one's running
 * jobs against the per-group limit and its waiting jobs. A click on the type
 * lists its jobs. Null when no limit is stored.
 */
import type { JobFilter, LimitEntry, Overview } from "./api-client.js";
import { formatCount, formatDuration } from "./display-format.js";
import { h } from "./element.js";

export interface LimitsActions {
  filter(change: Partial<JobFilter>): void;
}

/** The panel, or null when the overview lists no limited job type. */
export function limitsPanel(overview: Overview, actions: LimitsActions): HTMLElement | null {
  const limits = overview.limits ?? [];
  if (limits.length === 0) return null;
  const atLeast = overview.limitsComplete === false ? "≥ " : "";
  return h(
    "section",
    { className: "panel limits", attrs: { "aria-label": "Job type limits" } },
    h("h2", null, "Limits"),
    h(
      "table",
      null,
      h("thead", null, h("tr", null, h("th", null, "job type"), h("th", null, "running"), h("th", null, "rate window"), h("th", null, "held back"))),
      h("tbody", null, ...limits.flatMap((l) => [limitRow(l, atLeast, actions), ...groupsRow(l)])),
    ),
  );
}

function limitRow(l: LimitEntry, atLeast: string, actions: LimitsActions): HTMLElement {
  const full = (l.concurrency !== null && l.running >= l.concurrency) || (l.rateLimit !== null && l.startsInWindow >= l.rateLimit.max);
  return h(
    "tr",
    { attrs: { "data-limit-type": l.jobType } },
    h(
      "td",
      null,
      h(
        "button",
        { className: "link-button job-type", attrs: { type: "button" }, title: `List ${l.jobType} jobs`, onClick: () => actions.filter({ type: l.jobType }) },
        l.jobType,
      ),
      full ? h("span", { className: "badge warning limit-full", title: "no slot free: ready jobs wait for the limit" }, "at limit") : null,
    ),
    h(
      "td",
      { className: "limit-running", title: "running jobs of every server against the concurrency limit" },
      l.concurrency === null ? formatCount(l.running) : `${formatCount(l.running)} / ${formatCount(l.concurrency)}`,
    ),
    h(
      "td",
      { className: "limit-rate", title: "starts in the current window against the rate limit" },
      l.rateLimit === null ? "–" : `${formatCount(l.startsInWindow)} / ${formatCount(l.rateLimit.max)} per ${formatDuration(l.rateLimit.perMs)}`,
    ),
    h("td", { className: "limit-waiting", title: "ready jobs the limit holds back now" }, `${atLeast}${formatCount(l.waiting)}`),
  );
}

/** The busiest groups of a type with a `groupConcurrency`, as one row under its own (none without one). */
function groupsRow(l: LimitEntry): HTMLElement[] {
  if (l.groupConcurrency === undefined || l.groupConcurrency === null || l.groups === undefined) return [];
  const limit = l.groupConcurrency;
  const atLeast = l.groupsComplete === false ? "≥ " : "";
  const groups =
    l.groups.length === 0
      ? [h("span", { className: "limit-groups-none" }, "no group running or waiting")]
      : l.groups.map((g) =>
          h(
            "span",
            {
              className: g.running >= limit ? "limit-group full" : "limit-group",
              attrs: { "data-group": g.group },
              title: `${g.group}: ${g.running} running of at most ${limit}, ${atLeast}${g.waiting} waiting`,
            },
            h("span", { className: "group-name" }, g.group),
            ` ${formatCount(g.running)} / ${formatCount(limit)} · ${atLeast}${formatCount(g.waiting)} waiting`,
          ),
        );
  return [
    h(
      "tr",
      { className: "limit-groups", attrs: { "data-limit-groups": l.jobType } },
      h(
        "td",
        { attrs: { colspan: "4" } },
        h("span", { className: "limit-groups-label" }, `busiest groups (at most ${formatCount(limit)} running each): `),
        ...groups,
      ),
    ),
  ];
}
