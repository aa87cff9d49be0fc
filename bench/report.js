// Number formatting and summaries for bench/postgres.js's table.
import { percentile } from "./lib.js";

export const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "–");
export const ms = (x) => (Number.isFinite(x) ? (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : Math.round(x).toString()) : "–");

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** The numbers `f(r)` of the runs that did not fail. */
export const values = (runs, f) =>
  (runs ?? [])
    .filter((r) => !r.error)
    .map(f)
    .filter(Number.isFinite);

/** "median (min–max) [k failed]" of `f` over `runs`; "n/a" when the column did not run, "error" when every run failed. */
export function cell(runs, f, fmt = int) {
  if (!runs) return "–";
  if (runs.length && runs.every((r) => r.na)) return "n/a";
  const ok = values(runs, f);
  if (ok.length === 0) return runs.length ? "error" : "–";
  const failed = runs.length - ok.length;
  const range = ok.length > 1 ? ` (${fmt(Math.min(...ok))}–${fmt(Math.max(...ok))})` : "";
  return `${fmt(median(ok))}${range}${failed ? ` [${failed} failed]` : ""}`;
}

/** "a ÷ b = 1.23×" from medians, or why not. */
export function ratio(aRuns, bRuns, f, fmt = int) {
  const x = values(aRuns, f);
  const y = values(bRuns, f);
  if (!x.length || !y.length) return "n/a (a column has no figure)";
  return `${(median(x) / median(y)).toFixed(2)}× (${fmt(median(x))} ÷ ${fmt(median(y))})`;
}

/** `f(a) ÷ f(b)` of each pair of runs (same repetition), in run order: "0.97, 1.01, 0.99". */
export function pairedRatios(aRuns, bRuns, f) {
  const out = [];
  for (let i = 0; i < Math.min(aRuns?.length ?? 0, bRuns?.length ?? 0); i++) {
    const [x, y] = [aRuns[i], bRuns[i]];
    out.push(x.error || y.error || !Number.isFinite(f(x)) || !Number.isFinite(f(y)) ? "–" : (f(x) / f(y)).toFixed(2));
  }
  return out.length ? out.join(", ") : "–";
}

/** Percentile `p` of every sample of the runs that did not fail, pooled (NaN when there are none). */
export function pooledPercentile(runs, p) {
  const all = (runs ?? [])
    .filter((r) => !r.error && Array.isArray(r.samples))
    .flatMap((r) => r.samples)
    .sort((a, b) => a - b);
  return percentile(all, p);
}

/** How many paired runs (same repetition, run back to back) `f(a) < f(b)`: "k of n". */
export function pairedWins(aRuns, bRuns, f) {
  let wins = 0;
  let pairs = 0;
  for (let i = 0; i < Math.min(aRuns?.length ?? 0, bRuns?.length ?? 0); i++) {
    const [x, y] = [aRuns[i], bRuns[i]];
    if (x.error || y.error || !Number.isFinite(f(x)) || !Number.isFinite(f(y))) continue;
    pairs++;
    if (f(x) < f(y)) wins++;
  }
  return `${wins} of ${pairs}`;
}

export function markdownTable(header, rows) {
  const out = [`| ${header.join(" | ")} |`, `| --- |${" ---: |".repeat(header.length - 1)}`];
  for (const r of rows) out.push(`| ${r.join(" | ")} |`);
  return out.join("\n");
}
