// Shared helpers for the SQLite benchmark (bench/sqlite.js, bench/phase.js, bench/producer.js).
import { performance } from "node:perf_hooks";

export const JOB_TYPE = "noop";
export const NAMESPACE = "bench";

/** Wall-clock ms with sub-ms resolution; comparable across processes on one machine. */
export function wallNow() {
  return performance.timeOrigin + performance.now();
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Peak RSS of this process so far, in MB (getrusage ru_maxrss, KB on Linux). */
export function peakRssMb() {
  return process.resourceUsage().maxRSS / 1024;
}

/** A resolvable promise. */
export function gate() {
  let open;
  const promise = new Promise((r) => (open = r));
  return { promise, open };
}

/** A logger for plainjob that drops its per-job debug lines (see bench/README.md). */
export const quietLogger = {
  error: (...a) => console.error(...a),
  warn: (...a) => console.error(...a),
  info: () => {},
  debug: () => {},
};
