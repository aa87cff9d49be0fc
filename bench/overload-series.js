// The time series of bench/overload.js: per-second samples of the database and the worker
// process, grouped into 10-second windows per step of a scenario, and printed.
//
// A sample (taken every second by the orchestrator): { at (wall ms), success, ready, running,
// committed (jobs the producer has enqueued; committed − success: not done yet), dead, live, bytes (pg_total_relation_size),
// autovacuums, autoanalyzes, vacuuming, dbCpuMs }. Interval i runs from sample i to sample i + 1 and belongs
// to the step set at sample i (`labels[i]`); the worker's second i (handler starts in
// [t0 + i s, t0 + i + 1 s)) lines up with it.
import { int, markdownTable, median, ms } from "./report.js";

/** Histogram bucket of a latency in ms: 5 % wide above 0.1 ms (bucket b holds up to 0.1 × 1.05^b ms). */
export function bucketOf(latencyMs) {
  return latencyMs <= 0.1 ? 0 : Math.ceil(Math.log(latencyMs / 0.1) / Math.log(1.05));
}

/** Percentile `p` of the merged histograms (sparse bucket -> count), as its bucket's upper bound in ms; NaN when empty. */
export function histogramPercentile(hists, p) {
  const merged = new Map();
  for (const h of hists) for (const [b, n] of Object.entries(h)) merged.set(Number(b), (merged.get(Number(b)) ?? 0) + n);
  const total = [...merged.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (const b of [...merged.keys()].sort((x, y) => x - y)) {
    seen += merged.get(b);
    if (seen >= rank) return 0.1 * 1.05 ** b;
  }
  return NaN;
}

/**
 * The windows of a scenario: each run of intervals with one label cut into `size`-second
 * windows (a run's last window may be shorter). `seconds`: the worker's seconds (sec ->
 * { hist, cpuMs }).
 */
export function windows(samples, labels, seconds, size = 10) {
  const out = [];
  let from = 0;
  for (let i = 1; i < samples.length; i++) {
    const runEnds = i === samples.length - 1 || labels[i] !== labels[from];
    if (i - from < size && !runEnds) continue;
    out.push(windowOf(samples, labels[from], from, i, seconds));
    from = i;
  }
  return out;
}

function windowOf(samples, label, from, to, seconds) {
  const [a, b] = [samples[from], samples[to]];
  const s = (b.at - a.at) / 1000;
  const secs = Array.from({ length: to - from }, (_, k) => seconds.get(from + k)).filter(Boolean);
  const dbCpu = b.dbCpuMs - a.dbCpuMs;
  return {
    label,
    startS: Math.round((a.at - samples[0].at) / 1000),
    seconds: s,
    offered: (b.committed - a.committed) / s,
    completed: (b.success - a.success) / s,
    backlog: b.ready,
    notDone: Math.max(0, b.committed - b.success), // the producer's count is up to 200 ms older than the sample
    claimP99: histogramPercentile(
      secs.map((x) => x.hist),
      99,
    ),
    dead: b.dead,
    deadMax: Math.max(...samples.slice(from, to + 1).map((x) => x.dead)),
    bytes: b.bytes,
    autovacuums: b.autovacuums,
    autoanalyzes: b.autoanalyzes,
    vacuuming: samples.slice(from, to + 1).some((x) => x.vacuuming),
    // A process that exits (an autovacuum worker) takes its CPU out of the sum: a negative delta is shown as none.
    dbCpuPercent: dbCpu >= 0 ? (dbCpu / (s * 1000)) * 100 : NaN,
    workerCpuPercent: (secs.reduce((t, x) => t + x.cpuMs, 0) / (s * 1000)) * 100,
  };
}

/** The windows of `label` that last at least half a window (a step's short tail says little). */
export const windowsOf = (ws, label, size = 10) => ws.filter((w) => w.label === label && w.seconds >= size / 2);

/** { min, median } of the completion rate ÷ `clean` over `ws`; NaN when there are none. */
export function completionRatios(ws, clean) {
  const r = ws.map((w) => w.completed / clean);
  return r.length ? { min: Math.min(...r), median: median(r) } : { min: NaN, median: NaN };
}

const mb = (bytes) => (bytes / 2 ** 20).toFixed(0);
const fixed2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "–");

/** The scenario's windows as a markdown table, on stderr. */
export function printSeries(name, ws, clean) {
  const header = [
    "t (s)",
    "step",
    "offered j/s",
    "completed j/s",
    "÷ clean",
    "ready / not done (end)",
    "claim p99 ms",
    "dead tuples",
    "later_jobs MB",
    "autovacuums / autoanalyzes",
    "db CPU %",
    "worker CPU %",
  ];
  const rows = ws.map((w) => [
    `${w.startS}–${w.startS + Math.round(w.seconds)}`,
    w.label,
    int(w.offered),
    int(w.completed),
    fixed2(w.completed / clean),
    `${int(w.backlog)} / ${int(w.notDone)}`,
    ms(w.claimP99),
    int(w.dead),
    mb(w.bytes),
    `${w.autovacuums}${w.vacuuming ? " (running)" : ""} / ${w.autoanalyzes}`,
    int(w.dbCpuPercent),
    int(w.workerCpuPercent),
  ]);
  process.stderr.write(`\n${name}: per ${ws.length ? "10-s" : ""} window (clean capacity ${int(clean)} jobs/s)\n${markdownTable(header, rows)}\n\n`);
}
