// SQLite benchmark: later (@later/runtime) beside plainjob, same run, same
// machine, a fresh SQLite file (WAL) under os.tmpdir() for every phase.
// Run: `pnpm bench:sqlite` (builds first) or `node bench/sqlite.js`.
//
// What is measured, and how (details and results in bench/README.md):
//
// * Every phase runs in a fresh child process (bench/phase.js), so JIT state,
//   heap and peak RSS never carry over from one phase or system to the next.
// * Enqueue phases, later: the primary figure uses a standalone JobPublisher
//   (exported by @later/runtime; the same class as server.publisher) on an
//   opened, migrated backend, with no server, so no job is claimed while
//   enqueueing -- the same situation as plainjob's queue without a worker.
//   A second row enqueues through server.publisher of a running server whose
//   single worker is parked on a gate (workerCount 1, handler awaits a promise
//   released at shutdown), so only the pool's small claim buffer is taken
//   (the count is printed in Details); it shows what the server's wake-ups
//   (local enqueue wake + WAL watcher) add to enqueueing.
// * Enqueue phases, plainjob: defineQueue only, no worker. queue.add and
//   queue.addMany are synchronous; the "10 in flight" loops still await each
//   call, but with a synchronous driver that is serial either way.
// * Processing: one process pre-fills 20,000 jobs (bulk API), a second
//   process then starts the workers and is timed from just before start until
//   the 20,000th job is stored as done (later: the "success" job event, sent
//   after the outcome batch commits; plainjob: onCompleted, called after
//   markJobAsDone). Concurrency 10: later workerCount 10; plainjob 10
//   defineWorker instances on one queue (each runs one job at a time).
// * Latency: the worker process starts the workers, then forks
//   bench/producer.js, which enqueues 200 jobs/s for 10 s (2,000 jobs) with
//   the wall time of the enqueue call in the payload; the worker process
//   records handler start minus that time. later runs with pollIntervalMs at
//   its default (1000). plainjob runs with its default poll (1000 ms) and
//   again with pollIntervall 10 (a tuned setting), shown as its own column.
// * plainjob gets a logger that drops debug/info: its default logger is
//   `console`, which writes several debug lines to stdout per job.
// * Peak RSS: getrusage maxRSS of the worker process (the process is
//   dedicated to that phase, so its peak is the phase's peak).
//
// Every child has a hard timeout and is killed if it overruns; the producer
// exits by itself when its parent goes away. The temp folder is removed.
import { execFileSync, fork } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";

const N = 20_000;
const BATCH = 1000;
const CONCURRENCY = 10;
const RATE = 200;
const LATENCY_JOBS = 2000;
const FAST_POLL_MS = 10;
const CHILD_TIMEOUT_MS = 60_000;
const TOTAL_BUDGET_MS = 230_000;
const REPS = Math.max(1, Number.parseInt(process.env.BENCH_REPS ?? "3", 10) || 3);

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const tmp = mkdtempSync(path.join(os.tmpdir(), "later-bench-"));
const children = new Set();
const started = Date.now();
let fileSeq = 0;

function cleanup() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", cleanup); // also on a crash of this script: no child or temp file is left behind
process.on("SIGINT", () => {
  cleanup();
  process.exit(130);
});
process.on("SIGTERM", () => {
  cleanup();
  process.exit(143);
});

function freshFile(label) {
  return path.join(tmp, `${String(++fileSeq).padStart(2, "0")}-${label}.db`);
}

/** Runs one phase in a fresh child process; resolves to its result (or { error }). */
function runPhase(cfg) {
  if (Date.now() - started > TOTAL_BUDGET_MS) return Promise.resolve({ error: "skipped: time budget spent" });
  return new Promise((resolve) => {
    const child = fork(path.join(here, "phase.js"), [JSON.stringify(cfg)], { cwd: root, stdio: ["ignore", "inherit", "inherit", "ipc"] });
    children.add(child);
    let settled = false;
    const finish = (value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(value);
    };
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish({ error: `killed after ${CHILD_TIMEOUT_MS} ms` });
    }, CHILD_TIMEOUT_MS);
    child.on("message", (m) => finish(m.ok ? m.result : { error: m.error, errors: m.errors }));
    child.on("exit", (code, signal) => {
      children.delete(child);
      finish({ error: `exited (code ${code}, signal ${signal}) without a result` });
    });
  });
}

const log = (s) => process.stderr.write(`${s}\n`);

async function phase(label, cfg) {
  const t = Date.now();
  const r = await runPhase(cfg);
  log(`  ${label}: ${r.error ? `ERROR ${r.error.split("\n")[0]}` : "ok"} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
  return r;
}

async function processing(system, extra = {}) {
  const file = freshFile(`${system}-process`);
  const pre = await phase(`${system} prefill`, { system, phase: "prefill", file, n: N, variant: "publisher", countersOff: extra.countersOff });
  if (pre.error) return pre;
  return phase(`${system} process${extra.pollMs ? ` poll ${extra.pollMs}` : ""}${extra.countersOff ? " counters off" : ""}`, {
    system,
    phase: "process",
    file,
    n: N,
    concurrency: CONCURRENCY,
    deadlineMs: 45_000,
    ...extra,
  });
}

function latency(system, extra = {}) {
  return phase(`${system} latency${extra.pollMs ? ` poll ${extra.pollMs}` : ""}`, {
    system,
    phase: "latency",
    file: freshFile(`${system}-latency`),
    rate: RATE,
    count: LATENCY_JOBS,
    concurrency: CONCURRENCY,
    deadlineMs: 25_000,
    ...extra,
  });
}

// The runtime is measured from packages/runtime/dist: warn when a source file
// is newer than the build (`pnpm build` can silently build nothing, see README).
function staleBuildWarning() {
  const srcDir = path.join(root, "packages/runtime/src");
  const distIndex = path.join(root, "packages/runtime/dist/index.js");
  let built;
  try {
    built = statSync(distIndex).mtimeMs;
  } catch {
    return "packages/runtime/dist/index.js is missing: build the runtime first";
  }
  const newer = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const f = path.join(dir, e.name);
      if (e.isDirectory()) walk(f);
      else if (f.endsWith(".ts") && statSync(f).mtimeMs > built) newer.push(path.relative(root, f));
    }
  };
  walk(srcDir);
  return newer.length
    ? `runtime dist is older than ${newer.length} source file(s) (e.g. ${newer[0]}): run \`cd packages/runtime && npx tsc -p tsconfig.json\``
    : null;
}
const stale = staleBuildWarning();
if (stale) log(`WARNING: ${stale}`);

log(`later SQLite bench: ${N} no-op jobs, ${REPS} repetition(s) of the throughput phases, temp folder ${tmp}`);
// Throughput phases are short and this kind of machine is noisy, so they run
// REPS times, interleaved across systems; the table shows the median and the
// range. Latency phases run once each (10 s of traffic apiece).
const T = {}; // key -> results of every repetition
const add = (key, r) => (T[key] ??= []).push(r);
for (let rep = 1; rep <= REPS; rep++) {
  log(`repetition ${rep}/${REPS}`);
  add("later.bulk", await phase("later bulk", { system: "later", phase: "bulk", file: freshFile("later-bulk"), n: N, batch: BATCH, variant: "publisher" }));
  add(
    "later.bulkServer",
    await phase("later bulk (server up)", { system: "later", phase: "bulk", file: freshFile("later-bulk-srv"), n: N, batch: BATCH, variant: "server" }),
  );
  add("pj.bulk", await phase("plainjob bulk", { system: "plainjob", phase: "bulk", file: freshFile("plainjob-bulk"), n: N, batch: BATCH }));
  add(
    "later.single",
    await phase("later single", { system: "later", phase: "single", file: freshFile("later-single"), n: N, concurrency: CONCURRENCY, variant: "publisher" }),
  );
  add(
    "later.singleServer",
    await phase("later single (server up)", {
      system: "later",
      phase: "single",
      file: freshFile("later-single-srv"),
      n: N,
      concurrency: CONCURRENCY,
      variant: "server",
    }),
  );
  add("pj.single", await phase("plainjob single", { system: "plainjob", phase: "single", file: freshFile("plainjob-single"), n: N, concurrency: CONCURRENCY }));
  // With the stage counters on, and the same build with them turned off (bench/counters-off.js),
  // back to back; which of the two goes first alternates with the repetition.
  for (const off of rep % 2 ? [false, true] : [true, false])
    add(off ? "later.processOff" : "later.process", await processing("later", off ? { countersOff: true } : {}));
  add("pj.process", await processing("plainjob"));
  add("pjFast.process", await processing("plainjob", { pollMs: FAST_POLL_MS }));
  // Old files are not needed any more; removing them keeps the disk's dirty-page backlog small.
  for (const f of readdirSync(tmp)) rmSync(path.join(tmp, f), { force: true });
}
log("latency phases");
add("later.latency", await latency("later"));
add("pj.latency", await latency("plainjob"));
add("pjFast.latency", await latency("plainjob", { pollMs: FAST_POLL_MS }));

cleanup();

// ---------------------------------------------------------------- report ----

const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "–");
const ms = (x) => (Number.isFinite(x) ? (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : Math.round(x).toString()) : "–");
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
/** Median (min–max) of field `f` over the successful repetitions of `key`. */
const stat = (key, f, fmt = int) => {
  const rs = T[key] ?? [];
  const ok = rs
    .filter((r) => !r.error)
    .map(f)
    .filter(Number.isFinite);
  if (ok.length === 0) return rs.length ? "error" : "–";
  const failed = rs.length - ok.length;
  const range = ok.length > 1 ? ` (${fmt(Math.min(...ok))}–${fmt(Math.max(...ok))})` : "";
  return `${fmt(median(ok))}${range}${failed ? ` [${failed} failed]` : ""}`;
};
const one = (key, f) => {
  const r = T[key]?.[0];
  return !r ? "–" : r.error ? "error" : f(r);
};
const lat = (key) => one(key, (x) => `${ms(x.p50)} / ${ms(x.p95)} / ${ms(x.p99)}`);
const jps = (r) => r.jobsPerSec;
const LAT = ["later.latency", "pj.latency", "pjFast.latency"];

const rows = [
  ["bulk enqueue, 20 × 1000 (jobs/s)", stat("later.bulk", jps), stat("pj.bulk", jps), "(no worker: same as defaults)"],
  ["bulk enqueue, server running in the enqueuing process (jobs/s)", stat("later.bulkServer", jps), "n/a", "n/a"],
  ["single enqueue, 10 in flight (jobs/s)", stat("later.single", jps), stat("pj.single", jps), "(no worker: same as defaults)"],
  ["single enqueue, 10 in flight, server running (jobs/s)", stat("later.singleServer", jps), "n/a", "n/a"],
  ["processing, 1 process, concurrency 10 (jobs/s)", stat("later.process", jps), stat("pj.process", jps), stat("pjFast.process", jps)],
  ["processing, 1 process, concurrency 10, stage counters off (same build, bench/counters-off.js) (jobs/s)", stat("later.processOff", jps), "n/a", "n/a"],
  ["peak RSS, processing worker process (MB)", ...["later.process", "pj.process", "pjFast.process"].map((k) => stat(k, (r) => r.peakRssMb))],
  ["latency enqueue→handler start, p50 / p95 / p99 (ms)", ...LAT.map(lat)],
  ["latency max (ms)", ...LAT.map((k) => one(k, (x) => ms(x.max)))],
  ["latency run: jobs received / sent, offered rate (jobs/s)", ...LAT.map((k) => one(k, (x) => `${x.received} / ${x.sent ?? "?"}, ${int(x.offeredRate)}`))],
  ["worker process CPU during latency run (% of one core)", ...LAT.map((k) => one(k, (x) => int(x.cpuPercent)))],
  ["peak RSS, latency worker process (MB)", ...LAT.map((k) => one(k, (x) => int(x.peakRssMb)))],
];

let sqliteVersion = "?";
try {
  const db = new Database(":memory:");
  sqliteVersion = db.prepare("select sqlite_version() as v").get().v;
  db.close();
} catch {
  /* informational only */
}
const pjVersion = (() => {
  try {
    return JSON.parse(readFileSync(path.join(root, "node_modules/plainjob/package.json"), "utf8")).version;
  } catch {
    return "?";
  }
})();
const cpus = os.cpus();

let revision = "?";
try {
  const git = (...a) => execFileSync("git", a, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  revision = git("rev-parse", "--short", "HEAD") + (git("status", "--porcelain", "--", "packages/runtime") ? " (runtime has uncommitted changes)" : "");
} catch {
  /* informational only */
}
const out = [];
out.push(
  `later @ ${revision}; Node ${process.version}, ${cpus.length} × ${cpus[0]?.model ?? "?"}, SQLite ${sqliteVersion} (better-sqlite3), plainjob ${pjVersion}, ${os.platform()} ${os.release()}`,
);
out.push(
  `${N.toLocaleString("en-US")} no-op jobs per phase, fresh SQLite file (WAL) per phase under ${os.tmpdir()}. Throughput and processing RSS: ${REPS > 1 ? `median (min–max) of ${REPS} runs` : "one run"}; latency: one run of ${LATENCY_JOBS} jobs at ${RATE} jobs/s from another process.`,
);
out.push("");
out.push(`| figure | later | plainjob (defaults, poll 1000 ms) | plainjob (poll ${FAST_POLL_MS} ms) |`);
out.push("| --- | ---: | ---: | ---: |");
for (const r of rows) out.push(`| ${r.join(" | ")} |`);
out.push("");
const offRatio = (_fmt) => {
  const [on, off] = ["later.process", "later.processOff"].map((k) => (T[k] ?? []).filter((r) => !r.error).map(jps));
  return on.length && off.length ? `${(median(on) / median(off)).toFixed(2)}× (${int(median(on))} ÷ ${int(median(off))})` : "n/a (a run failed)";
};
const perRep = (T["later.process"] ?? [])
  .map((r, i) => {
    const off = T["later.processOff"]?.[i];
    return r.error || !off || off.error ? "–" : (jps(r) / jps(off)).toFixed(2);
  })
  .join(", ");
out.push(`Stage counters (issue 13): processing with counters on ÷ off = ${offRatio()} [≥ 0.95]; per repetition ${perRep}`);

// Anything that looked wrong, so it never hides behind a number.
const notes = [];
const names = {
  "later.bulk": "later bulk",
  "later.bulkServer": "later bulk (server up)",
  "pj.bulk": "plainjob bulk",
  "later.single": "later single",
  "later.singleServer": "later single (server up)",
  "pj.single": "plainjob single",
  "later.process": "later process",
  "later.processOff": "later process (counters off)",
  "pj.process": "plainjob process",
  "pjFast.process": `plainjob process (poll ${FAST_POLL_MS})`,
  "later.latency": "later latency",
  "pj.latency": "plainjob latency",
  "pjFast.latency": `plainjob latency (poll ${FAST_POLL_MS})`,
};
for (const [key, name] of Object.entries(names)) {
  (T[key] ?? []).forEach((r, i) => {
    const tag = T[key].length > 1 ? `${name} #${i + 1}` : name;
    if (r.error) notes.push(`${tag}: ${r.error.split("\n").slice(0, 3).join(" | ")}`);
    if (r.errorCount) notes.push(`${tag}: ${r.errorCount} error event(s), first: ${r.errors[0]}`);
    if (r.timedOut) notes.push(`${tag}: deadline hit after ${ms(r.elapsedMs)} ms with ${r.succeeded}/${N} done`);
    if (r.stored && (r.succeeded !== N || r.handled !== N))
      notes.push(`${tag}: ${r.succeeded} done, ${r.handled} handler calls, stored ${JSON.stringify(r.stored)}`);
    if (r.stored && i === 0)
      notes.push(
        `${tag}: stored at the end ${JSON.stringify(r.stored)}; handler calls ${r.handled}; last handler start at ${ms(r.lastHandlerMs)} ms, last job stored as done at ${ms(r.elapsedMs)} ms`,
      );
    if (r.info && i === 0) notes.push(`${tag}: ${r.info}`);
    if (r.outcome && r.outcome !== "all") notes.push(`${tag}: only ${r.received}/${r.sent} jobs reached a handler (${r.outcome})`);
    if (r.producer)
      notes.push(
        `${tag}: ${r.settings}; producer enqueue call p50 ${ms(r.producer.enqueueCallP50Ms)} ms, p99 ${ms(r.producer.enqueueCallP99Ms)} ms, max lag behind schedule ${ms(r.producer.maxBehindMs)} ms; mean latency ${ms(r.mean)} ms; sampled peak RSS ${int(r.sampledPeakRssMb)} MB`,
      );
  });
}
if (stale) notes.unshift(`WARNING: ${stale}`);
out.push("");
out.push("Details:");
for (const n of notes) out.push(`- ${n}`);
out.push("");
out.push(`Total bench time ${((Date.now() - started) / 1000).toFixed(1)} s.`);
console.log(out.join("\n"));
