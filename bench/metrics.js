// What the Prometheus metrics cost (docs/semantics.md M3): processing of N prefilled
// no-op jobs on SQLite with the metrics on (the default) and off
// (`metrics: false`), the same build, back to back in the same run, which
// of the two goes first alternating with the repetition. Each phase runs in
// a fresh child process (bench/phase.js), so JIT state and heap never carry
// over. Target: on ÷ off >= 0.95.
//
//   pnpm bench:metrics                         (= pnpm build && node bench/metrics.js)
//   BENCH_JOBS=20000 BENCH_REPS=4 node bench/metrics.js
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { killAll, runPhase as runPhaseChild } from "./phase-runner.js";
import { cell, pairedRatios, ratio } from "./report.js";

const N = Number(process.env.BENCH_JOBS ?? 20_000);
const REPS = Math.max(1, Number(process.env.BENCH_REPS ?? 4));
const CONCURRENCY = 10;
const CHILD_TIMEOUT_MS = 90_000;

const tmp = mkdtempSync(path.join(os.tmpdir(), "later-bench-metrics-"));
let fileSeq = 0;

function cleanup() {
  killAll();
  rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
]) {
  process.on(signal, () => {
    cleanup();
    process.exit(code);
  });
}

/** Runs one phase of bench/phase.js in a fresh child; resolves to its result (or { error }). */
function runPhase(cfg) {
  return runPhaseChild(cfg, CHILD_TIMEOUT_MS, "phase.js");
}

async function processing(metricsOff) {
  const file = path.join(tmp, `${++fileSeq}-${metricsOff ? "off" : "on"}.db`);
  const pre = await runPhase({ system: "later", phase: "prefill", file, n: N, variant: "publisher" });
  if (pre.error) return pre;
  const r = await runPhase({ system: "later", phase: "process", file, n: N, concurrency: CONCURRENCY, deadlineMs: 60_000, metricsOff });
  rmSync(file, { force: true });
  for (const suffix of ["-wal", "-shm"]) rmSync(file + suffix, { force: true });
  process.stderr.write(
    `  metrics ${metricsOff ? "off" : "on "}: ${r.error ? `ERROR ${String(r.error).split("\n")[0]}` : `${Math.round(r.jobsPerSec)} jobs/s`}\n`,
  );
  return r;
}

/**
 * What recording costs per job apart from everything else: the three calls a
 * regular job's attempt makes (start, handler end, outcome written), a
 * million times in this process, CPU time per job (process.cpuUsage, so a
 * busy machine slows it less than wall time).
 */
async function recordingCostNs() {
  const dist = (p) => new URL(`../packages/runtime/dist/${p}`, import.meta.url).href;
  const [{ LaterMetrics }, { ServerMetrics }, { newJobId }, { Registry }] = await Promise.all([
    import(dist("metrics/later-metrics.js")),
    import(dist("metrics/server-metrics.js")),
    import(dist("core/job-id.js")),
    import("prom-client"),
  ]);
  const recorder = new ServerMetrics(LaterMetrics.of(new Registry()), "bench");
  const now = Date.now();
  const jobs = Array.from({ length: 1000 }, (_, i) => ({
    id: newJobId(now - 50),
    jobType: i % 2 ? "a" : "b",
    payload: "{}",
    attempt: 1,
    retryPolicy: null,
    runAt: now - 3,
  }));
  const success = { kind: "success" };
  const rounds = 1000;
  const run = () => {
    for (let r = 0; r < rounds; r++) {
      for (const job of jobs) {
        recorder.attemptStarted(job, now, true);
        recorder.attemptEnded(job, (r % 10) + 1, "success", 2);
        recorder.outcomeWritten(job, success, now + 2);
      }
    }
  };
  run(); // warm-up
  const cpu = process.cpuUsage();
  run();
  const used = process.cpuUsage(cpu);
  return ((used.user + used.system) * 1000) / (rounds * jobs.length);
}

process.stderr.write(`later metrics bench (SQLite): ${N} no-op jobs, workerCount ${CONCURRENCY}, ${REPS} repetitions, load ${os.loadavg()[0].toFixed(2)}\n`);
const on = [];
const off = [];
for (let rep = 0; rep < REPS; rep++) {
  for (const metricsOff of rep % 2 ? [true, false] : [false, true]) (metricsOff ? off : on).push(await processing(metricsOff));
}
cleanup();
const jobsPerSec = (r) => r.jobsPerSec;
const allDone = [...on, ...off].every((r) => !r.error && r.succeeded === N);
const recordingNs = await recordingCostNs();
console.log(`| processing, 1 process, SQLite, ${N} jobs (jobs/s) | metrics on | metrics off |`);
console.log("| --- | ---: | ---: |");
console.log(`| median (min–max) of ${REPS} | ${cell(on, jobsPerSec)} | ${cell(off, jobsPerSec)} |`);
console.log("");
console.log(`* on ÷ off = ${ratio(on, off, jobsPerSec)}; per repetition ${pairedRatios(on, off, jobsPerSec)} [target ≥ 0.95]`);
console.log(`* recording, CPU per job (attempt start, handler end, outcome written; 10^6 jobs in one process): ${recordingNs.toFixed(0)} ns`);
console.log(`* every run stored all ${N} jobs as done: ${allDone ? "yes" : "NO"}; load average at the end ${os.loadavg()[0].toFixed(2)}`);
