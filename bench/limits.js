// Per job type limits (X9, issue 28 point 5, the per-type part), on PostgreSQL and SQLite:
//
// 1. A `concurrency` limit set but never reached: processing N prefilled no-op jobs with 10
//    workers, the type limited to 1,000 at once, against the same type without a limit; the
//    same build, back to back in the same run, which goes first alternating with the
//    repetition (paired runs). Target: limited ÷ unlimited >= 0.95.
// 2. `concurrency: 5` with 1-second jobs and 10 workers: the running count, sampled every
//    100 ms from the database (every server's) and from the handlers in flight, never above 5,
//    and throughput within 10% of 5 handlers' worth (5 jobs/s). Target: ratio >= 0.90.
//
// Each phase runs in a fresh child process (bench/limits-phase.js) on a fresh database
// (PostgreSQL: one per phase on BENCH_PG_URL's server, dropped after; SQLite: a file under
// os.tmpdir()).
//
//   pnpm bench:limits                                (= pnpm build && node bench/limits.js; also run by `pnpm bench`)
//   BENCH_JOBS=300 BENCH_REPS=1 BENCH_SLOW_JOBS=10 node bench/limits.js   (a smoke run)
//
// Env: BENCH_JOBS (20000), BENCH_REPS (3), BENCH_SLOW_JOBS (50: 1-second jobs of phase 2),
// BENCH_PG_URL, BENCH_BACKENDS ("postgres,sqlite").
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { BenchDatabases } from "./pg-databases.js";
import { killAll, runPhase } from "./phase-runner.js";
import { cell, pairedRatios, ratio } from "./report.js";

const N = Number(process.env.BENCH_JOBS ?? 20_000);
const REPS = Math.max(1, Number(process.env.BENCH_REPS ?? 3));
const SLOW_JOBS = Number(process.env.BENCH_SLOW_JOBS ?? 50);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const BACKENDS = (process.env.BENCH_BACKENDS ?? "postgres,sqlite").split(",").filter(Boolean);
const WORKERS = 10;
const NEVER_REACHED = 1_000;
const SLOW_LIMIT = 5;
const SLOW_MS = 1_000;

const tmp = mkdtempSync(path.join(os.tmpdir(), "later-bench-limits-"));
const dbs = new BenchDatabases(PG_URL);
let fileSeq = 0;

async function cleanup() {
  killAll();
  await dbs.dropAll();
  rmSync(tmp, { recursive: true, force: true });
}
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
]) {
  process.on(signal, () => {
    void cleanup().finally(() => process.exit(code));
  });
}

/** One phase on a fresh store of `backend`; resolves to its result (or { error }). */
async function phase(backend, label, cfg) {
  let store;
  let db = null;
  if (backend === "postgres") {
    db = await dbs.create(`limits_${label}`);
    store = { url: db.url };
  } else store = { file: path.join(tmp, `${++fileSeq}-${label}.db`) };
  const timeoutMs = cfg.deadlineMs + 60_000;
  const r = await runPhase({ backend, ...store, sampleMs: 0, ...cfg }, timeoutMs, "limits-phase.js");
  if (db) await dbs.drop(db.name);
  else for (const suffix of ["", "-wal", "-shm"]) rmSync(store.file + suffix, { force: true });
  const what = r.error
    ? `ERROR ${String(r.error).split("\n")[0]}`
    : `${Math.round(r.jobsPerSec)} jobs/s${cfg.sampleMs ? `, most running ${r.mostRunningSampled} (db) ${r.mostInFlight} (handlers)` : ""}`;
  process.stderr.write(`  ${backend} ${label}: ${what}\n`);
  return r;
}

const jobsPerSec = (r) => r.jobsPerSec;
const lines = [];
process.stderr.write(
  `later limits bench: ${N} no-op jobs and ${SLOW_JOBS} 1-second jobs, workerCount ${WORKERS}, ${REPS} repetitions, ${BACKENDS.join(" and ")}, load ${os.loadavg()[0].toFixed(2)}\n`,
);
for (const backend of BACKENDS) {
  const limited = [];
  const unlimited = [];
  for (let rep = 0; rep < REPS; rep++) {
    for (const isLimited of rep % 2 ? [false, true] : [true, false]) {
      const r = await phase(backend, isLimited ? "limited" : "unlimited", {
        n: N,
        workers: WORKERS,
        limit: isLimited ? NEVER_REACHED : null,
        handlerMs: 0,
        deadlineMs: 120_000,
      });
      (isLimited ? limited : unlimited).push(r);
    }
  }
  const slow = await phase(backend, "concurrency5", {
    n: SLOW_JOBS,
    workers: WORKERS,
    limit: SLOW_LIMIT,
    handlerMs: SLOW_MS,
    sampleMs: 100,
    deadlineMs: SLOW_JOBS * SLOW_MS + 60_000,
  });
  const allDone = [...limited, ...unlimited].every((r) => !r.error && r.succeeded === N && !r.timedOut);
  const slowOk = !slow.error && slow.succeeded === SLOW_JOBS;
  const ideal = (SLOW_LIMIT * 1_000) / SLOW_MS;
  lines.push(
    `### ${backend}`,
    "",
    `| processing ${N} no-op jobs, ${WORKERS} workers (jobs/s) | concurrency ${NEVER_REACHED} (never reached) | no limit |`,
    "| --- | ---: | ---: |",
    `| median (min–max) of ${REPS} | ${cell(limited, jobsPerSec)} | ${cell(unlimited, jobsPerSec)} |`,
    "",
    `* limited ÷ unlimited = ${ratio(limited, unlimited, jobsPerSec)}; per repetition ${pairedRatios(limited, unlimited, jobsPerSec)} [target ≥ 0.95]`,
    `* every run stored all ${N} jobs as done: ${allDone ? "yes" : "NO"}`,
    slowOk
      ? `* concurrency ${SLOW_LIMIT}, ${SLOW_JOBS} jobs of ${SLOW_MS} ms, ${WORKERS} workers: most running sampled every 100 ms ${slow.mostRunningSampled} (database, ${slow.samples} samples), ${slow.mostInFlight} (handlers in flight) [never above ${SLOW_LIMIT}: ${Math.max(slow.mostRunningSampled, slow.mostInFlight) <= SLOW_LIMIT ? "yes" : "NO"}]; ${slow.jobsPerSec.toFixed(2)} jobs/s = ${(slow.jobsPerSec / ideal).toFixed(2)} of ${SLOW_LIMIT} handlers' worth (${ideal} jobs/s) [target ≥ 0.90]`
      : `* concurrency ${SLOW_LIMIT} with 1-second jobs: ${slow.error ? `ERROR ${String(slow.error).split("\n")[0]}` : `only ${slow.succeeded} of ${SLOW_JOBS} done`}`,
    "",
  );
}
await cleanup();
console.log(lines.join("\n"));
console.log(`load average at the end ${os.loadavg()[0].toFixed(2)}`);
