// Shared helpers for the benchmarks (bench/sqlite.js, bench/postgres.js and the child processes they start).
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

/** `--name value` from the command line, else the env variable `env`, else `fallback`: an integer of at least `min` (default 1). */
export function setting(flag, env, fallback, min = 1) {
  const at = process.argv.indexOf(`--${flag}`);
  const raw = at >= 0 ? process.argv[at + 1] : process.env[env];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`--${flag} (${env}) must be an integer of at least ${min}, got ${raw}`);
  return value;
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

/** The bench system module for `name` (bench/systems/<name>.js). */
export function loadSystem(name) {
  return import(`./systems/${name}.js`);
}

/**
 * Starts `call(k, wallTime)` for k = 0..count-1 at `rate` calls per second on
 * an absolute schedule (no drift). Open loop: a call starts on time even when
 * earlier ones are still running, up to `maxInFlight`; beyond that it waits
 * (and counts as behind schedule). `wallTime` is taken at the scheduled start,
 * so time spent waiting for a free slot counts as latency.
 * Returns { elapsedMs, achievedRate, maxBehindMs, callP50Ms, callP99Ms }.
 */
export async function pacedCalls(count, rate, call, maxInFlight = 10) {
  const intervalMs = 1000 / rate;
  const callMs = [];
  const inFlight = new Set();
  const t0 = wallNow();
  let maxBehindMs = 0;
  for (let k = 0; k < count; k++) {
    const target = t0 + k * intervalMs;
    let now = wallNow();
    if (target - now >= 1) {
      await sleep(Math.floor(target - now));
      now = wallNow();
    }
    const t = wallNow();
    while (inFlight.size >= maxInFlight) await Promise.race(inFlight);
    maxBehindMs = Math.max(maxBehindMs, wallNow() - target);
    const p = call(k, t).then(() => {
      callMs.push(wallNow() - t);
      inFlight.delete(p);
    });
    inFlight.add(p);
  }
  await Promise.all(inFlight);
  const elapsedMs = wallNow() - t0;
  callMs.sort((a, b) => a - b);
  return { elapsedMs, achievedRate: count / (elapsedMs / 1000), maxBehindMs, callP50Ms: percentile(callMs, 50), callP99Ms: percentile(callMs, 99) };
}

/** p50/p95/p99/max/mean (ms) of unsorted samples. */
export function latencySummary(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1],
    mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
  };
}

/**
 * Runs a phase child's `phase()` and sends its result to the parent as the
 * final `{ ok, result | error, errors }` message (the error events it saw,
 * the first 20), then exits once it is sent, whatever handles are still open.
 */
export async function reportPhase(phase, errors) {
  let message;
  try {
    const result = await phase();
    message = { ok: true, result: { ...result, errors: errors.slice(0, 20), errorCount: errors.length } };
  } catch (error) {
    message = { ok: false, error: String(error?.stack ?? error), errors: errors.slice(0, 20) };
  }
  process.send(message, () => process.exit(0));
}

/**
 * A standalone JobPublisher (the class behind server.publisher) for the
 * bench's no-op job type, with no server: nothing in its process claims
 * jobs, and the local wake hook is a no-op. `JobPublisher`, `RetryPolicy`,
 * `systemClock`: the runtime's (each bench loads the build it measures);
 * `extra`: more options (`middleware`, `coalesce`).
 */
export function benchPublisher({ JobPublisher, RetryPolicy, systemClock }, backend, extra = {}) {
  return new JobPublisher({
    backend,
    clock: systemClock,
    defaultRetryPolicy: RetryPolicy.default(),
    encoders: new Map([[JOB_TYPE, JSON.stringify]]),
    topics: new Map(),
    retentionMs: 86_400_000,
    onCommitted: () => {},
    ...extra,
  });
}
