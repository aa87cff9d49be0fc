// Overload and pressure that pins vacuum, on PostgreSQL: one worker process (a server of
// `--workers` workers, default 32, whose handler waits 1 ms on a timer) and one producer process
// (enqueueMany in batches of 128 at a paced offered rate), each scenario on a fresh database.
// Every second the orchestrator samples the database: the stage counters (succeeded and ready
// jobs, exact: they change in the statements that move jobs), later_jobs' dead tuples, size and
// autovacuums (pg_stat_user_tables, pg_total_relation_size, pg_stat_progress_vacuum) and the
// server's CPU (/proc); the worker process reports each job's claim latency (enqueue to handler
// start) per second. Scenarios (`--only`, in this order):
//
// * capacity: a ramp of the offered rate (from `--ramp-from`, + `--ramp-step` every
//   `--ramp-step-s` seconds) until two steps in a row do not keep up; the clean capacity is the
//   best completion rate of a step. `--capacity N` skips it and takes N jobs/s.
// * overload: `--warmup-s` at 0.7× capacity, then 1.5× for `--overload-s`, then no more offered
//   until the backlog has drained (at most `--drain-max-s`). Target: the per-10-s completion
//   rate during the overload never below 0.90× capacity, and the backlog drains.
// * idle: 0.8× capacity; after `--warmup-s`, an idle-in-transaction session (BEGIN; SELECT
//   txid_current(); then nothing: it holds the xmin horizon) for `--idle-s`, then `--after-s`
//   without it, then the drain. Target: at least 0.5× capacity throughout; caught up within
//   60 s after the session ends.
// * readers: as idle, with `--readers` REPEATABLE READ sessions, each in a loop: BEGIN; three
//   count(*) of later_jobs; COMMIT, for `--readers-s`. Same targets. Each count runs as
//   PostgreSQL's defaults plan it (a parallel scan: 3 processes per reader); `--readers-parallel off`
//   runs them without parallel workers.
//
// Each scenario but capacity begins with a quiet queue: `--quiet-s` (10) at `--quiet-rate` (200
// jobs/s), as a server that starts, or has run a while, on a nearly empty table before the load
// comes; its connections then plan their statements on that small table (see bench/README.md,
// "Overload and pressure that pins vacuum").
//
// Every scenario ends by counting the jobs: every job the producer enqueued succeeded, once.
// Prints a markdown table on stdout and each scenario's 10-s windows on stderr.
//
//   pnpm bench:overload                 (= pnpm build && node bench/overload.js; also the end of `pnpm bench`)
//   node bench/overload.js --warmup-s 10 --overload-s 20 --idle-s 20 --readers-s 20 --after-s 10   (a smoke run)
//
// Flags (each also an env variable BENCH_OVERLOAD_<FLAG>, upper case, - as _) and their
// defaults: bench/README.md, "Overload and pressure that pins vacuum".
import os from "node:os";
import pg from "pg";
import { loadSystem, setting, sleep, wallNow } from "./lib.js";
import { completionRatios, printSeries, windows, windowsOf } from "./overload-series.js";
import { idleSession, readerSessions, sampleOf, storedStages } from "./overload-db.js";
import { BenchDatabases } from "./pg-databases.js";
import { awaitMessage, killAll, spawnPhase } from "./phase-runner.js";
import { int, markdownTable, ms } from "./report.js";

const env = (flag) => `BENCH_OVERLOAD_${flag.toUpperCase().replaceAll("-", "_")}`;
const flag = (name, fallback) => setting(name, env(name), fallback);
const raw = (name) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : process.env[env(name)];
};
const ONLY = (raw("only") ?? "capacity,overload,idle,readers").split(",").filter(Boolean);
const GIVEN_CAPACITY = raw("capacity") === undefined ? null : flag("capacity", 0);
const [RAMP_FROM, RAMP_STEP, RAMP_STEP_S] = [flag("ramp-from", 1000), flag("ramp-step", 1000), flag("ramp-step-s", 5)];
const [WARMUP_S, OVERLOAD_S, IDLE_S, READERS_S, AFTER_S] = [
  flag("warmup-s", 30),
  flag("overload-s", 180),
  flag("idle-s", 300),
  flag("readers-s", 180),
  flag("after-s", 90),
];
const DRAIN_MAX_S = flag("drain-max-s", 600);
const QUIET_S = setting("quiet-s", env("quiet-s"), 10, 0);
const QUIET_RATE = flag("quiet-rate", 200);
const QUIET = { label: "quiet start", s: QUIET_S, rate: QUIET_RATE, pressure: null };
const WORKERS = flag("workers", 32);
const READERS = flag("readers", 4);
/** `--readers-parallel off`: the readers' scans without parallel workers (`max_parallel_workers_per_gather = 0`). */
const READERS_PARALLEL = (raw("readers-parallel") ?? "on") !== "off";
const HANDLER_MS = 1;
const BATCH = 128;
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

const dbs = new BenchDatabases(PG_URL);
const later = await loadSystem("later");
async function cleanup() {
  killAll();
  await dbs.dropAll();
}
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
]) {
  process.on(signal, () => void cleanup().finally(() => process.exit(code)));
}

/** Asks a child to stop; resolves to its result, or { error } when it has not reported within a minute (it is then killed). */
function stopChild(child) {
  const result = awaitMessage(child, "result", 60_000);
  if (child.connected) child.send({ type: "stop" });
  return result;
}

const PRESSURES = { idle: (url) => idleSession(url), readers: (url) => readerSessions(url, READERS, READERS_PARALLEL) };

/**
 * One scenario on a fresh database. `control(i, samples)` is called after sample i and returns
 * the step for the next second ({ label, rate, pressure: null | "idle" | "readers" }), or null
 * once nothing more is to be offered: the producer stops and the scenario ends when every job
 * it enqueued has succeeded (or after DRAIN_MAX_S).
 */
async function scenario(name, control) {
  const db = await dbs.create(`overload_${name}`);
  await later.prepare({ system: "later", pgUrl: db.url });
  const kids = {
    worker: spawnPhase({ role: "worker", url: db.url, workers: WORKERS, handlerMs: HANDLER_MS }, "overload-phase.js"),
    producer: spawnPhase({ role: "producer", url: db.url, batch: BATCH, maxInFlight: 8 }, "overload-phase.js"),
  };
  const ready = await Promise.all(Object.values(kids).map((c) => awaitMessage(c, "ready", 60_000)));
  if (ready.some((r) => r.error)) throw new Error(`${name}: ${ready.find((r) => r.error).error}`);
  const seconds = new Map();
  kids.worker.on("message", (m) => m?.type === "second" && seconds.set(m.sec, m));
  let committed = 0;
  kids.producer.on("message", (m) => m?.type === "progress" && (committed = m.committed));
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const samples = [];
  const labels = [];
  let step = null;
  let pressure = null;
  const pressureEnds = [];
  let stopIndex = null;
  let produced = null;
  const t0 = wallNow();
  for (const c of Object.values(kids)) c.send({ type: "go", t0 });
  for (let i = 0; ; i++) {
    const wait = t0 + i * 1000 - wallNow();
    if (wait > 0) await sleep(wait);
    samples.push(await sampleOf(client, produced ? produced.committed : committed));
    const s = samples[i];
    if (stopIndex === null) {
      const next = control(i, samples);
      if (next?.pressure !== step?.pressure && pressure) {
        pressureEnds.push({ index: i, stats: pressure.stop() });
        pressure = null;
      }
      if (next === null) {
        produced = await stopChild(kids.producer);
        // An enqueue can wait behind a stuck statement (a counter row it shares): the producer is then killed, and
        // its enqueued jobs are counted in the database at the end (a killed transaction rolls back).
        if (produced.error) produced = { ...produced, committed };
        stopIndex = i;
        samples[i].committed = produced.committed;
      } else {
        if (next.rate !== step?.rate && kids.producer.connected) kids.producer.send({ type: "rate", rate: next.rate });
        if (next.pressure && next.pressure !== step?.pressure) pressure = await PRESSURES[next.pressure](db.url);
        step = next;
      }
    }
    labels.push(stopIndex === null ? step.label : "drain");
    if (stopIndex !== null && ((s.success >= produced.committed && s.ready + s.running === 0) || i - stopIndex >= DRAIN_MAX_S)) break;
    if (i % 10 === 0) {
      process.stderr.write(
        `  ${name} ${i} s: ${labels[i]}, ${int(s.success)} succeeded, backlog ${int(s.ready)}, dead ${int(s.dead)}, autovacuums ${s.autovacuums}, autoanalyzes ${s.autoanalyzes}\n`,
      );
    }
  }
  labels.pop();
  const worker = await stopChild(kids.worker);
  const counted = await storedStages(client);
  await client.end();
  const last = samples[samples.length - 1];
  const pressureStats = await Promise.all(pressureEnds.map((p) => p.stats));
  for (const c of Object.values(kids)) if (c.exitCode === null) c.kill("SIGKILL");
  await dbs.drop(db.name);
  return {
    name,
    samples,
    ws: windows(samples, labels, seconds),
    stopIndex,
    drained: last.success >= produced.committed && last.ready + last.running === 0,
    drainS: (last.at - samples[stopIndex].at) / 1000,
    releaseIndex: pressureEnds[0]?.index ?? null,
    pressureStats: pressureStats[0] ?? null,
    produced,
    worker,
    ...counted,
  };
}

/** The fixed steps as a control: step k lasts steps[k].s seconds. */
function stepsControl(steps) {
  return (i) => {
    let end = 0;
    for (const step of steps) if (i < (end += step.s)) return step;
    return null;
  };
}

/** The ramp of the capacity scenario; `result.steps` holds each step's offered and completed rate. */
function rampControl() {
  const result = { steps: [] };
  let rate = RAMP_FROM;
  let from = 0;
  let misses = 0;
  result.control = (i, samples) => {
    if (i > 0 && i - from >= RAMP_STEP_S) {
      const [a, b] = [samples[from], samples[i]];
      const s = (b.at - a.at) / 1000;
      const r = { rate, offered: (b.committed - a.committed) / s, completed: (b.success - a.success) / s, backlog: b.ready };
      r.keptUp = r.completed >= 0.95 * r.offered && r.backlog <= r.offered;
      result.steps.push(r);
      process.stderr.write(`  ramp ${int(rate)} j/s: offered ${int(r.offered)}, completed ${int(r.completed)}, backlog ${int(r.backlog)}\n`);
      misses = r.keptUp ? 0 : misses + 1;
      if (misses >= 2 || rate >= 200_000) return null;
      rate += RAMP_STEP;
      from = i;
    }
    return { label: `ramp ${rate}`, rate, pressure: null };
  };
  return result;
}

/** Every job the producer enqueued succeeded, once: "0 of N", or what went wrong. */
function lostCell(r) {
  const stored = Object.values(r.stages).reduce((t, n) => t + n, 0);
  const n = r.produced.error ? stored : r.produced.committed;
  const success = r.stages.success ?? 0;
  const others = Object.entries(r.stages).filter(([stage]) => stage !== "success");
  const ok = r.drained && success === n && others.length === 0 && r.worker.started === n && r.worker.duplicates === 0;
  if (ok) return `0 of ${int(n)}${r.retried ? ` (${r.retried} retried)` : ""}`;
  const why = [
    r.drained ? null : "not drained",
    r.produced.error ? `producer: ${r.produced.error}` : null,
    r.worker.error ? `worker: ${r.worker.error}` : `handler starts ${int(r.worker.started)}, run twice ${r.worker.duplicates}`,
    `stored ${JSON.stringify(r.stages)}`,
  ];
  return `**${int(n - success)} of ${int(n)} not succeeded** (${why.filter(Boolean).join("; ")})`;
}

/** Seconds from the release of the pressure until the jobs not done yet are at most one second of offered jobs. */
function caughtUpS(r, offered) {
  if (r.releaseIndex === null) return NaN;
  const at = r.samples.slice(r.releaseIndex).find((s) => s.committed - s.success <= offered);
  return at ? (at.at - r.samples[r.releaseIndex].at) / 1000 : NaN;
}

/** The most jobs ready, and the most not done yet (ready, claimed, or run and not yet stored as succeeded). */
const backlogCell = (r) => `${int(peak(r, (s) => s.ready))} / ${int(peak(r, (s) => s.committed - s.success))}`;
/** "autovacuums / autoanalyzes" of later_jobs by the end of the scenario. */
const avCell = (r) => `${r.samples[r.samples.length - 1].autovacuums} / ${r.samples[r.samples.length - 1].autoanalyzes}`;
const fixed2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "–");
const peak = (r, f) => Math.max(...r.samples.map(f));
const lines = [];
const rows = [];
/** One row of the table; `completion`, `claim`: the scenario's own cells. */
function row(r, offered, completion, claim, after) {
  const mb = `${int(peak(r, (s) => s.bytes) / 2 ** 20)} MB`;
  rows.push([r.name, offered, completion, claim, backlogCell(r), int(peak(r, (s) => s.dead)), mb, avCell(r), after, lostCell(r)]);
}

/** The completion ratios (min, median) and the worst claim p99 of the windows of step `label`, as cells and the ratios. */
function during(r, label, clean) {
  const ws = windowsOf(r.ws, label);
  const q = completionRatios(ws, clean);
  return { q, completion: `${fixed2(q.min)} / ${fixed2(q.median)}`, claim: ms(Math.max(...ws.map((w) => w.claimP99))) };
}

async function main() {
  process.stderr.write(
    `later overload bench: ${WORKERS} workers, ${HANDLER_MS} ms handlers, batches of ${BATCH}, scenarios ${ONLY.join(", ")}, load ${os.loadavg()[0].toFixed(2)}\n`,
  );
  let clean = GIVEN_CAPACITY;
  if (clean === null && ONLY.length) {
    const ramp = rampControl();
    const r = await scenario("capacity", ramp.control);
    clean = Math.max(...ramp.steps.map((s) => s.completed));
    printSeries("capacity", r.ws, clean);
    row(
      r,
      `ramp ${int(RAMP_FROM)} + ${int(RAMP_STEP)} every ${RAMP_STEP_S} s`,
      `clean capacity ${int(clean)} jobs/s`,
      "–",
      `drained in ${r.drainS.toFixed(0)} s`,
    );
  }
  if (ONLY.includes("overload")) {
    const [warm, over] = [0.7 * clean, 1.5 * clean];
    const r = await scenario(
      "overload",
      stepsControl([QUIET, { label: "warm-up", s: WARMUP_S, rate: warm, pressure: null }, { label: "overload", s: OVERLOAD_S, rate: over, pressure: null }]),
    );
    printSeries("overload", r.ws, clean);
    const after = r.drained ? `drained in ${r.drainS.toFixed(0)} s` : `**not drained after ${DRAIN_MAX_S} s**`;
    const { q, completion, claim } = during(r, "overload", clean);
    row(r, `1.5× = ${int(over)} j/s for ${OVERLOAD_S} s`, completion, claim, after);
    lines.push(`* overload: completion ÷ clean per 10 s min ${fixed2(q.min)} [target ≥ 0.90: ${q.min >= 0.9 ? "yes" : "NO"}]; ${after}`);
  }
  for (const kind of ["idle", "readers"].filter((k) => ONLY.includes(k))) {
    const offered = 0.8 * clean;
    const label = kind === "idle" ? "idle session" : `${READERS} readers`;
    const r = await scenario(
      kind,
      stepsControl([
        QUIET,
        { label: "warm-up", s: WARMUP_S, rate: offered, pressure: null },
        { label, s: kind === "idle" ? IDLE_S : READERS_S, rate: offered, pressure: kind },
        { label: "after", s: AFTER_S, rate: offered, pressure: null },
      ]),
    );
    printSeries(kind, r.ws, clean);
    const back = caughtUpS(r, offered);
    const after = `caught up ${Number.isFinite(back) ? `${back.toFixed(0)} s` : `**not within ${AFTER_S} s**`} after; drained in ${r.drainS.toFixed(0)} s`;
    const { q, completion, claim } = during(r, label, clean);
    row(r, `0.8× = ${int(offered)} j/s, ${label} for ${kind === "idle" ? IDLE_S : READERS_S} s`, completion, claim, after);
    const extra = r.pressureStats?.transactions === undefined ? "" : ` (${r.pressureStats.transactions} reader transactions, ${r.pressureStats.scans} scans)`;
    lines.push(
      `* ${kind}: completion ÷ clean per 10 s min ${fixed2(q.min)} [target ≥ 0.50: ${q.min >= 0.5 ? "yes" : "NO"}]; caught up within 60 s after: ${back <= 60 ? "yes" : "NO"}${extra}`,
    );
  }
  await cleanup();
  console.log(
    markdownTable(
      [
        "scenario",
        "offered",
        "completion ÷ clean per 10 s (min / median)",
        "claim p99, worst 10 s (ms)",
        "peak ready / not done",
        "dead tuples peak",
        "later_jobs peak",
        "autovacuums / autoanalyzes",
        "after",
        "lost",
      ],
      rows,
    ),
  );
  console.log(
    `\n${lines.join("\n")}\nclean capacity ${int(clean)} jobs/s${GIVEN_CAPACITY === null ? " (measured)" : " (given)"}; load average at the end ${os.loadavg()[0].toFixed(2)}`,
  );
}

try {
  await main();
} catch (error) {
  console.error(error);
  await cleanup();
  process.exitCode = 1;
}
