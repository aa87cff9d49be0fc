/**
 * The overview (D1, D5): stage counts, throughput over the last minute with
 * the dispatch wait of regular and partitioned jobs, the queue length over
 * the kept week, live workers, topic badges with depth and log lag (and the
 * per-partition breakdown of the selected topic), the database size.
 */
import { type ActivityBucket, FILTER_STAGES, type JobFilter, type Overview, type OverviewTopic, type QueueLength, STAGES, type Stage } from "./api-client.js";
import { formatBytes, formatCount, formatDuration, formatIso, formatRelative, formatTime } from "./display-format.js";
import { h } from "./element.js";
import { type ChartSeries, downsample, lineChart } from "./line-chart.js";

export interface OverviewActions {
  /** Filters the job list (a stage card, a topic badge, a partition chip). */
  filter(change: Partial<JobFilter>): void;
}

/** Stage cards: the count of each stage; a click lists that stage (again: every stage). */
export function stageCards(overview: Overview, filter: JobFilter, actions: OverviewActions): HTMLElement {
  return h(
    "section",
    { className: "stage-cards", attrs: { "aria-label": "Jobs by stage" } },
    ...STAGES.map((stage) =>
      FILTER_STAGES.includes(stage)
        ? h(
            "button",
            {
              className: `stage-card stage-${stage}${filter.stage === stage ? " selected" : ""}`,
              attrs: { type: "button", "data-stage": stage, "aria-pressed": filter.stage === stage ? "true" : "false" },
              title: filter.stage === stage ? "Show every stage" : `List ${stage} jobs`,
              onClick: () => actions.filter({ stage: filter.stage === stage ? undefined : stage }),
            },
            h("span", { className: "stage-count" }, formatCount(overview.counts[stage] ?? 0)),
            h("span", { className: "stage-name" }, stage),
          )
        : h(
            "div",
            { className: `stage-card static stage-${stage}`, attrs: { "data-stage": stage } },
            h("span", { className: "stage-count" }, formatCount(overview.counts[stage] ?? 0)),
            h("span", { className: "stage-name" }, stage),
          ),
    ),
  );
}

/**
 * Transitions of the last minute (a chart of the per-second buckets, once
 * fetched; the totals as bars until then) and the dispatch wait.
 */
export function throughputPanel(overview: Overview, buckets: readonly ActivityBucket[] | null): HTMLElement {
  const { throughput, dispatchWait } = overview;
  const end = overview.at ?? Date.now();
  const shown: Stage[] = ["enqueued", "running", "success", "failed", "requeued"];
  let body: HTMLElement;
  if (buckets) {
    const from = Math.floor(end / 1_000) * 1_000 - (throughput.windowS - 1) * 1_000;
    const seconds = Array.from({ length: throughput.windowS }, (_, i) => from + i * 1_000);
    const byAt = new Map(buckets.map((b) => [b.at, b]));
    const series: ChartSeries[] = shown.map((stage) => ({
      name: stage,
      className: `series-${stage}`,
      points: seconds.map((t) => [t, byAt.get(t)?.entered[stage] ?? 0] as const),
    }));
    body = lineChart({
      from,
      to: from + (throughput.windowS - 1) * 1_000,
      series,
      columns: seconds,
      formatValue: (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1)),
      formatTime: (t) => formatTime(t),
      label: `Transitions per second into each stage over the last ${throughput.windowS} s`,
      minTop: 2,
    });
  } else {
    // Totals only: one bar per stage, scaled to the busiest.
    const max = Math.max(1, ...shown.map((s) => throughput.byStage[s] ?? 0));
    body = h(
      "div",
      { className: "bars", attrs: { role: "img", "aria-label": `Transitions into each stage over the last ${throughput.windowS} s` } },
      ...shown.map((stage) => {
        const n = throughput.byStage[stage] ?? 0;
        const bar = h("span", { className: `bar-fill series-${stage}` });
        bar.style.width = `${(100 * n) / max}%`; // CSSOM, allowed by the CSP (no style attribute)
        return h(
          "div",
          { className: "bar-row" },
          h("span", { className: "bar-label" }, stage),
          h("span", { className: "bar-track" }, bar),
          h("span", { className: "bar-value" }, formatCount(n)),
        );
      }),
    );
  }
  const waitChart = buckets ? dispatchWaitChart(buckets, end, throughput.windowS) : null;
  const rate = (stage: Stage) => ((throughput.byStage[stage] ?? 0) / throughput.windowS).toFixed(2);
  return h(
    "section",
    { className: "panel throughput" },
    h("h2", null, `Throughput, last ${throughput.windowS} s`),
    body,
    h("p", { className: "note" }, `success ${rate("success")}/s · failed ${rate("failed")}/s · claimed ${rate("running")}/s`),
    h(
      "table",
      { className: "dispatch-wait" },
      h("caption", null, "Dispatch wait (ready to claimed)"),
      h("thead", null, h("tr", null, h("th", null, ""), h("th", null, "avg"), h("th", null, "max"), h("th", null, "claims"))),
      h(
        "tbody",
        null,
        ...(["regular", "partitioned"] as const).map((kind) =>
          h(
            "tr",
            { attrs: { "data-kind": kind } },
            h("th", null, kind),
            h("td", null, formatDuration(dispatchWait[kind].avgMs)),
            h("td", null, formatDuration(dispatchWait[kind].maxMs)),
            h("td", null, formatCount(dispatchWait[kind].claims ?? null)),
          ),
        ),
      ),
    ),
    waitChart,
  );
}

/** Mean dispatch wait of each second's claims, regular and partitioned apart (a partitioned job also waits for the jobs before it). */
function dispatchWaitChart(buckets: readonly ActivityBucket[], end: number, windowS: number): HTMLElement {
  const from = Math.floor(end / 1_000) * 1_000 - (windowS - 1) * 1_000;
  const inWindow = buckets.filter((b) => b.at >= from);
  const series: ChartSeries[] = (["regular", "partitioned"] as const).map((kind) => ({
    name: `${kind} wait (mean)`,
    className: `series-${kind}`,
    points: inWindow.flatMap((b) => {
      const w = b[kind];
      return w && w.claims > 0 ? [[b.at, w.waitTotalMs / w.claims] as const] : [];
    }),
  }));
  return lineChart({
    from,
    to: from + (windowS - 1) * 1_000,
    series,
    columns: inWindow.map((b) => b.at),
    formatValue: (v) => formatDuration(v),
    formatTime: (t) => formatTime(t),
    label: "Mean dispatch wait per second, regular and partitioned jobs",
    height: 110,
    minTop: 10,
    gapMs: 1_000,
    dots: true,
  });
}

/** The queue-length chart over `rangeMs` (ready jobs and the partitions' backlog, per-minute samples). */
export function queueLengthPanel(queueLength: QueueLength | null, rangeMs: number, now: number, rangePicker: HTMLElement): HTMLElement {
  const from = now - rangeMs;
  const samples = (queueLength?.samples ?? []).filter((s) => s.at >= from);
  const series: ChartSeries[] = [
    {
      name: "ready",
      className: "series-ready",
      points: downsample(
        samples.map((s) => [s.at, s.ready] as const),
        from,
        now,
        240,
      ),
    },
    {
      name: "partition backlog",
      className: "series-backlog",
      points: downsample(
        samples.map((s) => [s.at, s.partitionBacklog] as const),
        from,
        now,
        240,
      ),
    },
  ];
  const dated = rangeMs > 86_400_000;
  return h(
    "section",
    { className: "panel queue-length" },
    h("h2", null, "Queue length ", rangePicker),
    queueLength === null
      ? h("p", { className: "note" }, "loading…")
      : samples.length === 0
        ? h("p", { className: "note" }, "No samples in this range yet (one a minute, kept a week).")
        : lineChart({
            from,
            to: now,
            series,
            formatValue: (v) => formatCount(Math.round(v)),
            integers: true,
            formatTime: (t) => (dated ? new Date(t).toISOString().slice(5, 16).replace("T", " ") : formatTime(t, now)),
            label: "Ready jobs and the partitions' backlog, per minute",
          }),
  );
}

/**
 * A warning row per job type with ready jobs and no live handler (no live
 * server published the type with its heartbeat: they wait until one
 * does); a click lists that type's jobs. Null when there is none.
 */
export function unhandledPanel(overview: Overview, actions: OverviewActions): HTMLElement | null {
  const unhandled = overview.unhandled ?? [];
  if (unhandled.length === 0) return null;
  const atLeast = overview.unhandledComplete === false ? "at least " : "";
  return h(
    "section",
    { className: "panel unhandled", attrs: { role: "alert", "aria-label": "Job types with no live handler" } },
    h("h2", null, "Jobs that no live server handles"),
    ...unhandled.map((u) =>
      h(
        "div",
        { className: "unhandled-row", attrs: { "data-unhandled-type": u.jobType } },
        h("span", { className: "badge warning" }, "no live handler"),
        " ",
        h(
          "button",
          { className: "link-button job-type", attrs: { type: "button" }, title: `List ${u.jobType} jobs`, onClick: () => actions.filter({ type: u.jobType }) },
          u.jobType,
        ),
        h(
          "span",
          { className: "note" },
          `: ${atLeast}${formatCount(u.ready)} ready job${u.ready === 1 ? "" : "s"} wait for a server with a handler for this type`,
        ),
      ),
    ),
  );
}

/** Live servers with their worker counts and last heartbeat. */
export function workersPanel(overview: Overview, now: number): HTMLElement {
  const workers = overview.workers;
  return h(
    "section",
    { className: "panel workers" },
    h("h2", null, `Workers (${workers.length} server${workers.length === 1 ? "" : "s"})`),
    workers.length === 0
      ? h("p", { className: "note" }, "No live server.")
      : h(
          "table",
          null,
          h("thead", null, h("tr", null, h("th", null, "server"), h("th", null, "host"), h("th", null, "pid"), h("th", null, "busy"), h("th", null, "seen"))),
          h(
            "tbody",
            null,
            ...workers.map((w) =>
              h(
                "tr",
                null,
                h("td", { title: w.instanceId, className: "mono" }, w.instanceId.length > 12 ? `…${w.instanceId.slice(-8)}` : w.instanceId),
                h("td", null, w.host),
                h("td", null, String(w.pid)),
                h("td", null, `${w.busy} / ${w.workers}`),
                h("td", { title: formatIso(w.lastSeenAt) }, formatRelative(w.lastSeenAt, now)),
              ),
            ),
          ),
        ),
  );
}

/** Topic badges (depth, log lag); the selected job topic's partitions as chips that filter the list. */
export function topicsPanel(overview: Overview, filter: JobFilter, actions: OverviewActions): HTMLElement {
  const topics = overview.topics;
  const selected = topics.find((t) => t.name === filter.topic && t.kind !== "log");
  return h(
    "section",
    { className: "panel topics" },
    h("h2", null, "Topics"),
    topics.length === 0 ? h("p", { className: "note" }, "No topic.") : h("div", { className: "badges" }, ...topics.map((t) => topicBadge(t, filter, actions))),
    selected ? partitionBreakdown(selected, filter, actions) : null,
  );
}

function topicBadge(topic: OverviewTopic, filter: JobFilter, actions: OverviewActions): HTMLElement {
  const isLog = topic.kind === "log";
  const lagTitle = topic.groups?.map((g) => `${g.group}: lag ${formatCount(g.lag)}`).join("\n");
  const parts = [
    h("span", { className: "badge-name" }, topic.name),
    h("span", { className: "badge-depth", title: isLog ? "records retained" : "unfinished jobs" }, formatCount(topic.depth)),
    topic.lag !== undefined
      ? h("span", { className: `badge-lag${topic.lag > 0 ? " lagging" : ""}`, title: lagTitle ?? "consumer lag" }, `lag ${formatCount(topic.lag)}`)
      : null,
    h("span", { className: "badge-kind" }, isLog ? "log" : `${topic.partitions} p`),
  ];
  if (isLog) return h("span", { className: "badge badge-log", title: `retained log, ${topic.partitions} partitions` }, ...parts);
  const active = filter.topic === topic.name;
  return h(
    "button",
    {
      className: `badge${active ? " selected" : ""}`,
      attrs: { type: "button", "data-topic": topic.name, "aria-pressed": active ? "true" : "false" },
      title: active ? "Show every topic" : `List jobs of topic ${topic.name}`,
      onClick: () => actions.filter({ topic: active ? undefined : topic.name, partition: undefined }),
    },
    ...parts,
  );
}

function partitionBreakdown(topic: OverviewTopic, filter: JobFilter, actions: OverviewActions): HTMLElement {
  const depths = new Map((topic.partitionDepths ?? []).map((p) => [p.partition, p.depth]));
  const chips = Array.from({ length: topic.partitions }, (_, partition) => {
    const active = filter.partition === partition;
    const depth = depths.get(partition);
    return h(
      "button",
      {
        className: `chip${active ? " selected" : ""}${depth ? " busy" : ""}`,
        attrs: { type: "button", "data-partition": partition },
        title: active ? "Every partition" : `List partition ${partition}`,
        onClick: () => actions.filter({ partition: active ? undefined : partition }),
      },
      `#${partition}`,
      depth !== undefined ? h("span", { className: "chip-depth" }, formatCount(depth)) : null,
    );
  });
  return h("div", { className: "partitions" }, h("h3", null, `${topic.name}: partitions`), h("div", { className: "chips" }, ...chips));
}

/** The header's database size. */
export function databaseSize(overview: Overview): HTMLElement {
  return h("span", { className: "db-size", title: "Size of the whole database on disk" }, `database ${formatBytes(overview.databaseBytes)}`);
}
