// Side-by-side benchmark: later on PostgreSQL beside graphile-worker (defaults
// and fast path), pg-boss, BullMQ on Redis, and later on SQLite. Same run, same
// PostgreSQL server, a fresh database per system and phase.
// Run: `pnpm bench` (builds first) or `node bench/postgres.js`.
// Env: BENCH_JOBS (20000), BENCH_REPS (3), BENCH_LATENCY_REPS (10), BENCH_PG_URL, BENCH_REDIS_URL,
// BENCH_REDIS_DB (9), BENCH_ONLY (column keys), BENCH_PROFILE=1 (append bench/profile-postgres.js).
// What each figure means, and every system's settings: bench/README.md.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadSystem } from "./lib.js";
import { BenchDatabases } from "./pg-databases.js";
import { killAll, runPhase, runWork } from "./phase-runner.js";
import { cell, int, markdownTable, median, ms, pairedRatios, pairedWins, pooledPercentile, ratio, values } from "./report.js";

const envInt = (name, dflt) => Math.max(1, Number.parseInt(process.env[name] ?? "", 10) || dflt);
const N = envInt("BENCH_JOBS", 20_000);
const REPS = envInt("BENCH_REPS", 3);
// A p99 of 2,000 samples is the 20th-worst: one stall of the machine moves it, so latency gets more
// runs, and its percentiles are taken over the samples of every run pooled (20,000 by default). Ten,
// not six: on this kind of VM one run's p99 ranged from 8 to 250 ms in a day, for every system alike,
// and with six runs one stalled run decided the pooled p99.
const LATENCY_REPS = envInt("BENCH_LATENCY_REPS", 10);
const BATCH = 1000;
const IN_FLIGHT = 10;
const CONCURRENCY = 10;
const RATE = 200;
const LATENCY_JOBS = Math.min(2000, N);
const CHILD_TIMEOUT_MS = 120_000;
const WORK_DEADLINE_MS = 90_000;
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const redisUrl = new URL(process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379");
const REDIS = { host: redisUrl.hostname, port: Number(redisUrl.port || 6379), db: envInt("BENCH_REDIS_DB", 9), prefix: "later-bench" };

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const tmp = mkdtempSync(path.join(os.tmpdir(), "later-bench-pg-"));
const dbs = new BenchDatabases(PG_URL);
const log = (s) => process.stderr.write(`${s}\n`);

async function cleanup() {
  killAll();
  await dbs.dropAll();
  rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", () => {
  killAll();
  rmSync(tmp, { recursive: true, force: true });
});
for (const [sig, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
])
  process.on(sig, () => cleanup().finally(() => process.exit(code)));

// Columns. `enqueue: false`: the enqueue path is the same as another column's.
const ALL_COLUMNS = [
  { key: "laterPg", title: "later (PostgreSQL)", system: "later", store: "pg" },
  // The same build with its stage counters turned off (bench/counters-off.js: PostgreSQL drops the triggers, SQLite skips the writes).
  { key: "laterPgOff", title: "later (PostgreSQL, counters off)", system: "later", variant: "countersOff", store: "pg", latency: false },
  // The same build with one empty middleware ({ enqueue: (ctx, next) => next(), attempt: (ctx, next) => next() }) on publisher and server (X10).
  { key: "laterPgMw", title: "later (PostgreSQL, empty middleware)", system: "later", variant: "emptyMiddleware", store: "pg", latency: false },
  { key: "laterPgDiscard", title: "later (PostgreSQL, successMs 0)", system: "later", variant: "discard", store: "pg", enqueue: false, latency: false },
  { key: "gwDefaults", title: "graphile-worker (defaults)", system: "graphile-worker", variant: "defaults", store: "pg" },
  { key: "gwFast", title: "graphile-worker (fast path)", system: "graphile-worker", variant: "fast", store: "pg", enqueue: false },
  { key: "pgBoss", title: "pg-boss", system: "pg-boss", store: "pg" },
  // A floor for enqueue: a plain one-row INSERT of the same payload through pg (bench/systems/pg-insert.js); nothing to process.
  { key: "pgInsert", title: "plain INSERT through pg", system: "pg-insert", store: "pg", process: false, latency: false },
  { key: "bullmq", title: "BullMQ (Redis)", system: "bullmq", store: "redis" },
  { key: "laterSqlite", title: "later (SQLite)", system: "later", store: "sqlite" },
  { key: "laterSqliteOff", title: "later (SQLite, counters off)", system: "later", variant: "countersOff", store: "sqlite", latency: false },
  { key: "laterSqliteMw", title: "later (SQLite, empty middleware)", system: "later", variant: "emptyMiddleware", store: "sqlite", latency: false },
];
// BENCH_ONLY=laterPg,gwFast runs only those columns (for development; the ratios need laterPg, gwDefaults and gwFast,
// the counters' on/off ratios laterPg with laterPgOff and laterSqlite with laterSqliteOff, the middleware's laterPg with
// laterPgMw and laterSqlite with laterSqliteMw).
const only = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());
const COLUMNS = only ? ALL_COLUMNS.filter((c) => only.includes(c.key)) : ALL_COLUMNS;

const { postgres } = await import("@later/runtime/postgres");
/** BullMQ 6 loads ioredis (an optional peer dependency) only when a queue connects: look for it the way bullmq will. */
function ioredisMissing() {
  try {
    const fromBullmq = createRequire(createRequire(import.meta.url).resolve("bullmq"));
    fromBullmq.resolve("ioredis");
    return null;
  } catch {
    return "ioredis is not installed (BullMQ 6 needs it as a peer dependency: add ioredis ^5 to the root devDependencies)";
  }
}
const unavailable = {
  laterPg: typeof postgres === "function" ? null : "@later/runtime does not export postgres() yet",
  bullmq: ioredisMissing(),
};
const systems = Object.fromEntries(await Promise.all([...new Set(COLUMNS.map((c) => c.system))].map(async (s) => [s, await loadSystem(s)])));

let fileSeq = 0;
/** A fresh store for one phase of one column; `release()` drops it. */
async function freshTarget(col, label) {
  const base = { system: col.system, variant: col.variant };
  if (col.store === "sqlite") return { target: { ...base, file: path.join(tmp, `${++fileSeq}-${label}.db`) }, release: async () => {} };
  if (col.store === "redis") return { target: { ...base, redis: REDIS }, release: async () => {} };
  const db = await dbs.create(`${col.key}_${label}`);
  return { target: { ...base, pgUrl: db.url }, release: () => dbs.drop(db.name) };
}

async function phase(col, label, run) {
  if (unavailable[col.key]) return { na: true, error: unavailable[col.key] };
  const t = Date.now();
  const { target, release } = await freshTarget(col, label);
  let r;
  try {
    r = await run(target);
  } catch (e) {
    r = { error: String(e?.stack ?? e) };
  } finally {
    await release().catch(() => {});
  }
  log(`  ${col.title} ${label}: ${r.error ? `ERROR ${String(r.error).split("\n")[0]}` : "ok"} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
  return r;
}

const bulk = (col) => phase(col, "bulk", (target) => runPhase({ phase: "bulk", target, n: N, batch: BATCH }, CHILD_TIMEOUT_MS));
const single = (col) => phase(col, "single", (target) => runPhase({ phase: "single", target, n: N, inFlight: IN_FLIGHT }, CHILD_TIMEOUT_MS));
const processing = (col, processes) =>
  phase(col, `process x${processes}`, async (target) => {
    const pre = await runPhase({ phase: "prefill", target, n: N, batch: BATCH }, CHILD_TIMEOUT_MS);
    if (pre.error) return pre;
    return runWork(
      { target, n: N, concurrency: CONCURRENCY },
      { processes, completionIsStored: systems[col.system].completionIsStored, deadlineMs: WORK_DEADLINE_MS },
    );
  });
const latency = (col) =>
  phase(col, "latency", (target) =>
    runPhase({ phase: "latency", target, rate: RATE, count: LATENCY_JOBS, concurrency: CONCURRENCY, deadlineMs: 30_000 }, CHILD_TIMEOUT_MS),
  );

const load0 = os.loadavg();
const pgVersion = await dbs.serverVersion();
log(
  `later PostgreSQL side-by-side bench: ${N} no-op jobs, ${REPS} repetition(s), PostgreSQL ${pgVersion} at ${new URL(PG_URL).host}, Redis ${REDIS.host}:${REDIS.port} db ${REDIS.db}`,
);
for (const col of COLUMNS) if (unavailable[col.key]) log(`  ${col.title}: n/a (${unavailable[col.key]})`);

// Every phase runs REPS times, interleaved across systems (this kind of
// machine is noisy: one latency run's p99 moves by half from run to run);
// the table shows medians, with the range of the throughput figures. Each
// repetition starts one system further along, so that no system always runs
// right after the same neighbour (whose disk writes or dropped database can
// still be settling) or always first.
const T = {}; // `${column}.${figure}` -> results of every repetition
const add = (key, r) => (T[key] ??= []).push(r);
const order = (rep) => COLUMNS.map((_, i) => COLUMNS[(i + rep - 1) % COLUMNS.length]);
for (let rep = 1; rep <= REPS; rep++) {
  log(`repetition ${rep}/${REPS}`);
  for (const col of order(rep)) if (col.enqueue !== false) add(`${col.key}.bulk`, await bulk(col));
  for (const col of order(rep)) if (col.enqueue !== false) add(`${col.key}.single`, await single(col));
  for (const col of order(rep)) if (col.process !== false) add(`${col.key}.process1`, await processing(col, 1));
  for (const col of order(rep)) if (col.process !== false) add(`${col.key}.process2`, await processing(col, 2));
  if (rep <= LATENCY_REPS) for (const col of order(rep)) if (col.latency !== false) add(`${col.key}.latency`, await latency(col));
}
for (let rep = REPS + 1; rep <= LATENCY_REPS; rep++) {
  log(`latency repetition ${rep}/${LATENCY_REPS}`);
  for (const col of order(rep)) if (col.latency !== false) add(`${col.key}.latency`, await latency(col));
}
const load1 = os.loadavg();
await cleanup();

// ---------------------------------------------------------------- report ----

const jps = (r) => r.jobsPerSec;
const runs = (col, fig) => T[`${col.key}.${fig}`];
const sameAs = (col) => (col.enqueue === false ? "(same as defaults)" : null);
const row = (label, fig, f, fmt) => [
  label,
  ...COLUMNS.map((c) => (sameAs(c) && (fig === "bulk" || fig === "single") ? sameAs(c) : cell(runs(c, fig), f, fmt))),
];
/** The median over the latency runs of each of `fields`, formatted with `fmt` and joined with " / ". */
const lat = (col, fields, fmt = ms) => {
  const rs = runs(col, "latency");
  if (values(rs, () => 0).length === 0) return cell(rs, () => NaN); // "–", "n/a" or "error", as for the other rows
  return fields.map((k) => fmt(median(values(rs, (x) => x[k])))).join(" / ");
};
/** Percentiles `ps` of every latency sample of the column's runs together. */
const pooled = (col, ps) => {
  const rs = runs(col, "latency");
  if (values(rs, () => 0).length === 0) return cell(rs, () => NaN);
  return ps.map((p) => ms(pooledPercentile(rs, p))).join(" / ");
};

const rows = [
  row(`bulk enqueue, ${N / BATCH} × ${BATCH} (jobs/s)`, "bulk", jps),
  row(`single enqueue, ${IN_FLIGHT} in flight (jobs/s)`, "single", jps),
  row(`processing, 1 process × concurrency ${CONCURRENCY} (jobs/s)`, "process1", jps),
  row(`processing, 2 processes × concurrency ${CONCURRENCY} (jobs/s)`, "process2", jps),
  // PostgreSQL columns only: the server's processes are read from /proc.
  [
    "database server CPU per 1,000 jobs, processing ×1 (ms)",
    ...COLUMNS.map((c) => (c.store === "pg" ? cell(runs(c, "process1"), (r) => r.dbCpuMsPer1000 ?? NaN) : "–")),
  ],
  [
    "database server CPU per 1,000 jobs, processing ×2 (ms)",
    ...COLUMNS.map((c) => (c.store === "pg" ? cell(runs(c, "process2"), (r) => r.dbCpuMsPer1000 ?? NaN) : "–")),
  ],
  ["latency enqueue→handler start, p50 / p95 / p99 of all runs' samples pooled (ms)", ...COLUMNS.map((c) => pooled(c, [50, 95, 99]))],
  ["latency p99.9, all runs pooled (ms)", ...COLUMNS.map((c) => pooled(c, [99.9]))],
  row("latency p99, median (min–max) of the runs (ms)", "latency", (x) => x.p99, ms),
  ["latency max, median of the runs (ms)", ...COLUMNS.map((c) => lat(c, ["max"]))],
  ["latency runs: received / sent, offered rate (jobs/s)", ...COLUMNS.map((c) => lat(c, ["received", "sent", "offeredRate"], int))],
  ["worker CPU during latency run (% of one core)", ...COLUMNS.map((c) => lat(c, ["cpuPercent"], int))],
  row("peak RSS, worker process, processing ×1 (MB)", "process1", (r) => r.peakRssMb),
  ["peak RSS, worker process, latency run (MB)", ...COLUMNS.map((c) => lat(c, ["peakRssMb"], int))],
];

const version = (pkg) => {
  try {
    return JSON.parse(readFileSync(path.join(root, "node_modules", pkg, "package.json"), "utf8")).version;
  } catch {
    return "?";
  }
};
let revision = "?";
try {
  const git = (...a) => execFileSync("git", a, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  revision = git("rev-parse", "--short", "HEAD") + (git("status", "--porcelain", "--", "packages/runtime") ? " (runtime has uncommitted changes)" : "");
} catch {
  /* informational only */
}
const cpus = os.cpus();
const out = [];
out.push(
  `later @ ${revision}; ${cpus.length} cores × ${cpus[0]?.model ?? "?"}, Node ${process.version}, PostgreSQL ${pgVersion}, ${os.platform()} ${os.release()}`,
);
out.push(
  `graphile-worker ${version("graphile-worker")}, pg-boss ${version("pg-boss")}, bullmq ${version("bullmq")}, pg ${version("pg")}; load average at start ${load0.map((x) => x.toFixed(2)).join(" ")}, at end ${load1.map((x) => x.toFixed(2)).join(" ")}`,
);
out.push(
  `${N.toLocaleString("en-US")} no-op jobs per phase, a fresh database per system and phase. Throughput and processing RSS: ${REPS > 1 ? `median (min–max) of ${REPS} runs` : "one run"}; latency: ${LATENCY_REPS > 1 ? `${LATENCY_REPS} runs, percentiles of their samples pooled, other figures medians` : "one run"}, each ${LATENCY_JOBS} jobs at ${RATE} jobs/s from another process. Runs of every phase are interleaved across systems, each repetition starting one system further along.`,
);
out.push("");
out.push(markdownTable(["figure", ...COLUMNS.map((c) => c.title)], rows));

const [ours, gwFast, gwDefaults] = ["laterPg", "gwFast", "gwDefaults"].map((k) => ALL_COLUMNS.find((c) => c.key === k));
const p99 = (r) => r.p99;
out.push("");
out.push("Targets of issue 4 (ratios in this run; target in brackets):");
out.push(`* processing, 1 process: later (PostgreSQL) ÷ graphile-worker fast path = ${ratio(runs(ours, "process1"), runs(gwFast, "process1"), jps)} [≥ 1.2]`);
out.push(`* processing, 2 processes: later (PostgreSQL) ÷ graphile-worker fast path = ${ratio(runs(ours, "process2"), runs(gwFast, "process2"), jps)} [≥ 1.2]`);
const pooledRatio = (a, b) => {
  const [x, y] = [pooledPercentile(runs(a, "latency"), 99), pooledPercentile(runs(b, "latency"), 99)];
  return Number.isFinite(x) && Number.isFinite(y) ? `${(x / y).toFixed(2)}× (${ms(x)} ÷ ${ms(y)} ms)` : "n/a (a column has no figure)";
};
out.push(
  `* latency p99 (all runs pooled): later (PostgreSQL) ÷ graphile-worker fast path = ${pooledRatio(ours, gwFast)} [≤ 1]; ÷ defaults = ${pooledRatio(ours, gwDefaults)}`,
);
out.push(
  `  median of the per-run p99s: ÷ fast path = ${ratio(runs(ours, "latency"), runs(gwFast, "latency"), p99, ms)} ms; later's p99 lower in ${pairedWins(runs(ours, "latency"), runs(gwFast, "latency"), p99)} pairs of runs (one pair per repetition)`,
);
out.push(`* single enqueue: later (PostgreSQL) ÷ graphile-worker = ${ratio(runs(ours, "single"), runs(gwDefaults, "single"), jps)} [≥ 1]`);
out.push(`* bulk enqueue: later (PostgreSQL) ÷ graphile-worker = ${ratio(runs(ours, "bulk"), runs(gwDefaults, "bulk"), jps)} [≥ 1]`);

// Issue 31, point 4: a single enqueue against a plain INSERT of the same payload, and against pg-boss.
const [pgInsert, pgBoss] = ["pgInsert", "pgBoss"].map((k) => ALL_COLUMNS.find((c) => c.key === k));
out.push("");
out.push("Targets of issue 31, enqueue (ratios in this run; target in brackets; per repetition in order after the semicolon):");
out.push(
  `* single enqueue, ${IN_FLIGHT} in flight: later (PostgreSQL) ÷ plain INSERT through pg = ${ratio(runs(ours, "single"), runs(pgInsert, "single"), jps)} [≥ 0.75]; ${pairedRatios(runs(ours, "single"), runs(pgInsert, "single"), jps)}`,
);
out.push(`* single enqueue, ${IN_FLIGHT} in flight: later (PostgreSQL) ÷ pg-boss = ${ratio(runs(ours, "single"), runs(pgBoss, "single"), jps)} [≥ 1]`);
out.push(`* bulk enqueue: later (PostgreSQL) ÷ plain INSERT through pg = ${ratio(runs(ours, "bulk"), runs(pgInsert, "bulk"), jps)}`);

// Issue 13: the stage counters cost at most 5% of processing, and later stays 1.5x graphile-worker's fast path with them.
const [oursOff, sqliteOn, sqliteOff] = ["laterPgOff", "laterSqlite", "laterSqliteOff"].map((k) => ALL_COLUMNS.find((c) => c.key === k));
out.push("");
out.push("Targets of issue 13, stage counters (ratios in this run; target in brackets; per repetition in order after the semicolon):");
for (const [fig, what] of [
  ["process1", "1 process"],
  ["process2", "2 processes"],
]) {
  out.push(
    `* processing, ${what}: later (PostgreSQL) counters on ÷ off = ${ratio(runs(ours, fig), runs(oursOff, fig), jps)} [≥ 0.95]; ${pairedRatios(runs(ours, fig), runs(oursOff, fig), jps)}`,
  );
  out.push(
    `* processing, ${what}: later (SQLite) counters on ÷ off = ${ratio(runs(sqliteOn, fig), runs(sqliteOff, fig), jps)} [≥ 0.95]; ${pairedRatios(runs(sqliteOn, fig), runs(sqliteOff, fig), jps)}`,
  );
  out.push(`* processing, ${what}: later (PostgreSQL, counters on) ÷ graphile-worker fast path = ${ratio(runs(ours, fig), runs(gwFast, fig), jps)} [≥ 1.5]`);
}

// Issue 29: an empty middleware costs at most 2% of processing, in paired runs (same repetition, same build).
const [oursMw, sqliteMw] = ["laterPgMw", "laterSqliteMw"].map((k) => ALL_COLUMNS.find((c) => c.key === k));
out.push("");
out.push("Targets of issue 29, one empty middleware (ratios in this run; target in brackets; per repetition in order after the semicolon):");
for (const [fig, what] of [
  ["process1", "processing, 1 process"],
  ["process2", "processing, 2 processes"],
  ["bulk", "bulk enqueue"],
  ["single", "single enqueue"],
]) {
  const target = fig.startsWith("process") ? " [≥ 0.98]" : "";
  for (const [plain, mw, name] of [
    [ours, oursMw, "PostgreSQL"],
    [sqliteOn, sqliteMw, "SQLite"],
  ]) {
    out.push(
      `* ${what}: later (${name}) with ÷ without = ${ratio(runs(mw, fig), runs(plain, fig), jps)}${target}; ${pairedRatios(runs(mw, fig), runs(plain, fig), jps)}`,
    );
  }
}

// Issue 31, point 2: the database's CPU per job, later keeping its jobs and deleting them on success (J11), beside
// graphile-worker's fast path (which deletes every finished job); and the processing rate with 2 worker processes.
const discard = ALL_COLUMNS.find((c) => c.key === "laterPgDiscard");
const dbCpu = (r) => r.dbCpuMsPer1000 ?? NaN;
out.push("");
out.push("Targets of issue 31, database CPU per job (ratios in this run; target in brackets; per repetition after the semicolon):");
for (const fig of ["process1", "process2"]) {
  const what = fig === "process1" ? "1 process" : "2 processes";
  out.push(
    `* database CPU per job, ${what}: later successMs 0 ÷ graphile-worker fast path = ${ratio(runs(discard, fig), runs(gwFast, fig), dbCpu, ms)} [≤ 0.8]; ${pairedRatios(runs(discard, fig), runs(gwFast, fig), dbCpu)}`,
  );
  out.push(
    `* database CPU per job, ${what}: later keeping jobs ÷ graphile-worker fast path = ${ratio(runs(ours, fig), runs(gwFast, fig), dbCpu, ms)} [≤ 1.0]; ${pairedRatios(runs(ours, fig), runs(gwFast, fig), dbCpu)}`,
  );
}
out.push(
  `* processing, 2 processes: later successMs 0 ÷ graphile-worker fast path = ${ratio(runs(discard, "process2"), runs(gwFast, "process2"), jps)} [≥ 1.5]`,
);
out.push(
  `* processing, 2 processes: later keeping jobs ÷ graphile-worker fast path = ${ratio(runs(ours, "process2"), runs(gwFast, "process2"), jps)} [≥ 1.25]`,
);

// Anything that looked wrong, so it never hides behind a number; and the settings each system ran with.
out.push("");
out.push("Details:");
for (const col of COLUMNS) {
  for (const fig of ["bulk", "single", "process1", "process2", "latency"]) {
    (runs(col, fig) ?? []).forEach((r, i) => {
      const tag = `${col.title} ${fig}${runs(col, fig).length > 1 ? ` #${i + 1}` : ""}`;
      if (r.na) {
        if (i === 0 && fig === "bulk") out.push(`* ${col.title}: n/a (${r.error})`);
        return;
      }
      if (r.error) out.push(`* ${tag}: ERROR ${String(r.error).split("\n").slice(0, 3).join(" / ")}`);
      if (r.timedOut) out.push(`* ${tag}: deadline hit, ${r.done} of ${N} done`);
      if (r.errorCount) out.push(`* ${tag}: ${r.errorCount} error(s), e.g. ${r.errors[0]}`);
      if (fig.startsWith("process") && !r.error && i === 0) {
        out.push(
          `* ${tag}: ${r.settings}; stored at the end ${JSON.stringify(r.stored)}; per process handled/done ${r.perProcess.map((p) => `${p.handled}/${p.done}`).join(", ")}${r.settleMs ? `; waited ${ms(r.settleMs)} ms after the last handler for the completion writes` : ""}`,
        );
      }
      if (fig === "latency" && !r.error) {
        out.push(
          `* ${tag}: ${r.settings}; outcome ${r.outcome}; mean ${ms(r.mean)} ms; producer call p50/p99 ${ms(r.producer?.callP50Ms)} / ${ms(r.producer?.callP99Ms)} ms, max behind schedule ${ms(r.producer?.maxBehindMs)} ms`,
        );
      }
    });
  }
}
process.stdout.write(`${out.join("\n")}\n`);

if (process.env.BENCH_PROFILE === "1") {
  process.stdout.write("\n");
  spawnSync(process.execPath, [path.join(here, "profile-postgres.js")], { cwd: root, stdio: "inherit", env: process.env });
}
