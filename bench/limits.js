// Per job type and per group limits (X9), on PostgreSQL and SQLite:
//
// 1. A `concurrency` limit set but never reached: processing N prefilled no-op jobs with 10
//    workers, the type limited to 1,000 at once, against the same type without a limit; the
//    same build, back to back in the same run, which goes first alternating with the
//    repetition (paired runs). Target: limited ÷ unlimited >= 0.95.
// 2. `concurrency: 5` with 1-second jobs and 10 workers: the running count, sampled every
//    100 ms from the database (every server's) and from the handlers in flight, never above 5,
//    and throughput within 10% of 5 handlers' worth (5 jobs/s). Target: ratio >= 0.90.
// 3. A `groupConcurrency` set but never reached: the N no-op jobs spread over 1,000 groups,
//    `groupConcurrency: 100` (10 workers: never reached), against the same grouped jobs
//    without a limit; paired as in 1. Reported as a ratio (the group claim walks the ready
//    groups: its cost over the plain claim's is what this shows).
//    Phases 1 and 3 also print the CPU per job (medians): the worker process's (on SQLite the
//    database's work too) and, on PostgreSQL, the local server's processes' (from /proc).
// 4. Fairness: a backlog of B no-op jobs of one group ("big", `groupConcurrency: 5`, 10
//    workers); once 1,000 of them (or B/10 when fewer) have succeeded, 100 jobs of another
//    group ("small") are enqueued at once. Reported: the small jobs' dispatch wait (enqueue to
//    handler start) p50/p99/max, and how many big jobs started meanwhile. The phase ends once
//    every small job has started (the backlog is not drained).
//
// Each phase runs in a fresh child process (bench/limits-phase.js) on a fresh database
// (PostgreSQL: one per phase on BENCH_PG_URL's server, dropped after; SQLite: a file under
// os.tmpdir()).
//
//   pnpm bench:limits                                (= pnpm build && node bench/limits.js; also run by `pnpm bench`)
//   node bench/limits.js --jobs 2000 --backlog 2000 --reps 1 --slow-jobs 10   (a smoke run)
//
// Flags (each also an env variable): --jobs N (BENCH_JOBS, 20000: phases 1 and 3),
// --backlog B (BENCH_BACKLOG, 100000: phase 4), --reps R (BENCH_REPS, 3),
// --slow-jobs S (BENCH_SLOW_JOBS, 50: 1-second jobs of phase 2), BENCH_PG_URL,
// BENCH_BACKENDS ("postgres,sqlite").
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setting } from "./lib.js";
import { BenchDatabases } from "./pg-databases.js";
import { killAll, runPhase } from "./phase-runner.js";
import { cell, pairedRatios, ratio } from "./report.js";

const N = setting("jobs", "BENCH_JOBS", 20_000);
const BACKLOG = setting("backlog", "BENCH_BACKLOG", 100_000);
const REPS = setting("reps", "BENCH_REPS", 3);
const SLOW_JOBS = setting("slow-jobs", "BENCH_SLOW_JOBS", 50);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const BACKENDS = (process.env.BENCH_BACKENDS ?? "postgres,sqlite").split(",").filter(Boolean);
const WORKERS = 10;
const NEVER_REACHED = 1_000;
const SLOW_LIMIT = 5;
const SLOW_MS = 1_000;
const GROUPS = 1_000;
const GROUP_NEVER_REACHED = 100;
const FAIR_GROUP_LIMIT = 5;
const SMALL_JOBS = 100;
const FAIR_AFTER = Math.min(1_000, Math.max(1, Math.floor(BACKLOG / 10)));

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
    : cfg.fairness
      ? `small group's dispatch wait p99 ${r.wait ? ms(r.wait.p99) : "-"} ms, ${r.bigStartedMeanwhile} big jobs started meanwhile${r.timedOut ? " (TIMED OUT)" : ""}`
      : `${Math.round(r.jobsPerSec)} jobs/s${cfg.sampleMs ? `, most running ${r.mostRunningSampled} (db) ${r.mostInFlight} (handlers)` : ""}`;
  process.stderr.write(`  ${backend} ${label}: ${what}\n`);
  return r;
}

const jobsPerSec = (r) => r.jobsPerSec;
/** Medians of the runs' CPU per job: the worker process's, then (PostgreSQL) the local server's, in µs. */
function cpuLine(label, runs) {
  const median = (xs) => {
    const v = xs.filter((x) => typeof x === "number").sort((a, b) => a - b);
    return v.length === 0 ? null : v[Math.floor(v.length / 2)];
  };
  const w = median(runs.map((r) => r.workerCpuUsPerJob));
  const d = median(runs.map((r) => r.serverCpuUsPerJob));
  return `${label} ${w === null ? "-" : w.toFixed(1)} µs${d === null ? "" : `, database server ${d.toFixed(1)} µs`}`;
}
/** A wait in ms, to 0.1 ms. */
const ms = (v) => v.toFixed(1);
const lines = [];
process.stderr.write(
  `later limits bench: ${N} no-op jobs, ${SLOW_JOBS} 1-second jobs, a backlog of ${BACKLOG}, workerCount ${WORKERS}, ${REPS} repetitions, ${BACKENDS.join(" and ")}, load ${os.loadavg()[0].toFixed(2)}\n`,
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
  const grouped = [];
  const groupedFree = [];
  for (let rep = 0; rep < REPS; rep++) {
    for (const isLimited of rep % 2 ? [false, true] : [true, false]) {
      const r = await phase(backend, isLimited ? "grouplimited" : "groupfree", {
        n: N,
        workers: WORKERS,
        limit: null,
        groupLimit: isLimited ? GROUP_NEVER_REACHED : null,
        groups: GROUPS,
        handlerMs: 0,
        deadlineMs: 120_000,
      });
      (isLimited ? grouped : groupedFree).push(r);
    }
  }
  const fair = await phase(backend, "fairness", {
    n: BACKLOG,
    workers: WORKERS,
    limit: null,
    groupLimit: FAIR_GROUP_LIMIT,
    fairness: { small: SMALL_JOBS, after: FAIR_AFTER },
    handlerMs: 0,
    deadlineMs: 600_000,
  });
  const allDone = [...limited, ...unlimited].every((r) => !r.error && r.succeeded === N && !r.timedOut);
  const slowOk = !slow.error && slow.succeeded === SLOW_JOBS;
  const groupsDone = [...grouped, ...groupedFree].every((r) => !r.error && r.succeeded === N && !r.timedOut);
  const fairOk = !fair.error && !fair.timedOut && fair.smallStarted === SMALL_JOBS;
  const ideal = (SLOW_LIMIT * 1_000) / SLOW_MS;
  lines.push(
    `### ${backend}`,
    "",
    `| processing ${N} no-op jobs, ${WORKERS} workers (jobs/s) | concurrency ${NEVER_REACHED} (never reached) | no limit |`,
    "| --- | ---: | ---: |",
    `| median (min–max) of ${REPS} | ${cell(limited, jobsPerSec)} | ${cell(unlimited, jobsPerSec)} |`,
    "",
    `* limited ÷ unlimited = ${ratio(limited, unlimited, jobsPerSec)}; per repetition ${pairedRatios(limited, unlimited, jobsPerSec)} [target ≥ 0.95]`,
    `* CPU per job, medians: ${cpuLine("limited: worker", limited)}; ${cpuLine("unlimited: worker", unlimited)}`,
    `* every run stored all ${N} jobs as done: ${allDone ? "yes" : "NO"}`,
    slowOk
      ? `* concurrency ${SLOW_LIMIT}, ${SLOW_JOBS} jobs of ${SLOW_MS} ms, ${WORKERS} workers: most running sampled every 100 ms ${slow.mostRunningSampled} (database, ${slow.samples} samples), ${slow.mostInFlight} (handlers in flight) [never above ${SLOW_LIMIT}: ${Math.max(slow.mostRunningSampled, slow.mostInFlight) <= SLOW_LIMIT ? "yes" : "NO"}]; ${slow.jobsPerSec.toFixed(2)} jobs/s = ${(slow.jobsPerSec / ideal).toFixed(2)} of ${SLOW_LIMIT} handlers' worth (${ideal} jobs/s) [target ≥ 0.90]`
      : `* concurrency ${SLOW_LIMIT} with 1-second jobs: ${slow.error ? `ERROR ${String(slow.error).split("\n")[0]}` : `only ${slow.succeeded} of ${SLOW_JOBS} done`}`,
    "",
    `| processing ${N} no-op jobs over ${GROUPS} groups, ${WORKERS} workers (jobs/s) | groupConcurrency ${GROUP_NEVER_REACHED} (never reached) | no limit |`,
    "| --- | ---: | ---: |",
    `| median (min–max) of ${REPS} | ${cell(grouped, jobsPerSec)} | ${cell(groupedFree, jobsPerSec)} |`,
    "",
    `* group-limited ÷ unlimited = ${ratio(grouped, groupedFree, jobsPerSec)}; per repetition ${pairedRatios(grouped, groupedFree, jobsPerSec)}`,
    `* CPU per job, medians: ${cpuLine("group-limited: worker", grouped)}; ${cpuLine("unlimited: worker", groupedFree)}`,
    `* every run stored all ${N} jobs as done: ${groupsDone ? "yes" : "NO"}`,
    fairOk
      ? `* fairness: a backlog of ${BACKLOG} jobs of one group (groupConcurrency ${FAIR_GROUP_LIMIT}, ${WORKERS} workers), ${SMALL_JOBS} jobs of another enqueued after ${FAIR_AFTER} of it succeeded: their dispatch wait p50 ${ms(fair.wait.p50)} ms, p99 ${ms(fair.wait.p99)} ms, max ${ms(fair.wait.max)} ms; ${fair.bigStartedMeanwhile} jobs of the backlog started meanwhile`
      : `* fairness: ${fair.error ? `ERROR ${String(fair.error).split("\n")[0]}` : `only ${fair.smallStarted} of ${SMALL_JOBS} small jobs started${fair.timedOut ? " (timed out)" : ""}`}`,
    "",
  );
}
await cleanup();
console.log(lines.join("\n"));
console.log(`load average at the end ${os.loadavg()[0].toFixed(2)}`);
