// Retained-log benchmark (issue 14, point 7): later's retained log on SQLite
// and PostgreSQL beside Redis Streams (through ioredis) and beside later's own
// bulk job enqueue and job processing, for 100-byte and 2 KiB records, in one
// run on one machine. Not part of the test run.
// Run: `pnpm bench:log` (builds first) or `node bench/log.js [options]`:
//   --records N     records (and jobs) per batched, replay and consume phase (default 50000)
//   --seconds S     length of each one-at-a-time append phase (default 3)
//   --backend LIST  sqlite,postgres,redis (default all three)
//   --size LIST     record sizes in bytes, e.g. 100,2048 or 100,2KiB (default both)
//   --max-batch N   records per consumer batch / XREADGROUP COUNT (default 1000)
//   --page N        records per replay read / XRANGE COUNT (default 10000)
// Env: BENCH_PG_URL, BENCH_REDIS_URL, BENCH_REDIS_DB (as bench/postgres.js).
// What each figure means and what limits it: bench/README.md, "Retained log".
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { sleep, wallNow } from "./lib.js";
import { BenchDatabases } from "./pg-databases.js";
import { awaitMessage, killAll, runPhase, runWork, spawnPhase } from "./phase-runner.js";
import { int, markdownTable } from "./report.js";

const { values: opts } = parseArgs({
  options: {
    records: { type: "string", default: "50000" },
    seconds: { type: "string", default: "3" },
    backend: { type: "string", default: "sqlite,postgres,redis" },
    size: { type: "string", default: "100,2048" },
    "max-batch": { type: "string", default: "1000" },
    page: { type: "string", default: "10000" },
  },
});
const positive = (name, text) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${text}`);
  return n;
};
const N = positive("records", opts.records);
const SECONDS = Number(opts.seconds);
if (!(SECONDS > 0)) throw new Error(`--seconds must be a positive number, got ${opts.seconds}`);
const BACKENDS = opts.backend.split(",").map((s) => s.trim());
for (const b of BACKENDS) if (!["sqlite", "postgres", "redis"].includes(b)) throw new Error(`--backend: unknown backend ${b} (sqlite, postgres, redis)`);
const SIZES = opts.size.split(",").map((s) => {
  const m = /^(\d+)\s*(k|kib)?$/i.exec(s.trim());
  if (!m) throw new Error(`--size: ${s} is not a size in bytes (100, 2048, 2KiB)`);
  return Number(m[1]) * (m[2] ? 1024 : 1);
});
const MAX_BATCH = positive("max-batch", opts["max-batch"]);
const PAGE = positive("page", opts.page);
const BATCH = 1000;
const IN_FLIGHT = 10;
const PARTITIONS = 8;
const MEMBERS = 2;
const CONCURRENCY = 10;
const CHILD_TIMEOUT_MS = 120_000;
const DEADLINE_MS = 120_000;
const SETTLE_DEADLINE_MS = 30_000;
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const redisUrl = new URL(process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379");
const REDIS = { host: redisUrl.hostname, port: Number(redisUrl.port || 6379), db: Number(process.env.BENCH_REDIS_DB ?? 9) };

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const tmp = mkdtempSync(path.join(os.tmpdir(), "later-bench-log-"));
const dbs = new BenchDatabases(PG_URL);
const redisKeys = new Set();
const log = (s) => process.stderr.write(`${s}\n`);

async function dropRedisKeys() {
  if (redisKeys.size === 0) return;
  const redis = new Redis({ ...REDIS, lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  await redis.del(...redisKeys);
  redisKeys.clear();
  await redis.quit();
}
async function cleanup() {
  killAll();
  await dbs.dropAll();
  await dropRedisKeys().catch(() => {});
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

let fileSeq = 0;
/** A fresh store (a SQLite file, a PostgreSQL database) for the `later` bench system and the log phases; `release()` drops it. */
async function freshStore(backend, label) {
  if (backend === "sqlite") return { target: { system: "later", file: path.join(tmp, `${++fileSeq}-${label}.db`) }, release: async () => {} };
  const db = await dbs.create(`log_${label}`);
  return { target: { system: "later", pgUrl: db.url }, release: () => dbs.drop(db.name) };
}

const logPhase = (cfg) => runPhase({ partitions: PARTITIONS, ...cfg }, CHILD_TIMEOUT_MS, "log-phase.js");

async function timed(label, run) {
  const t = Date.now();
  let r;
  try {
    r = await run();
  } catch (e) {
    r = { error: String(e?.stack ?? e) };
  }
  log(`  ${label}: ${r.error ? `ERROR ${String(r.error).split("\n")[0]}` : "ok"} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
  return r;
}

/** Starts the group's member children one after another (each registered before the next joins). */
async function startMembers(cfg) {
  const kids = [];
  const ids = [];
  for (let i = 0; i < MEMBERS; i++) {
    const child = spawnPhase({ partitions: PARTITIONS, ...cfg, phase: "member", name: `member-${i}` }, "log-phase.js");
    kids.push(child);
    const ready = await awaitMessage(child, "ready", 30_000);
    if (ready.error) throw new Error(`member ${i}: ${ready.error}`);
    ids.push(ready.memberId);
  }
  return { kids, ids };
}

// The runtime's rendezvous hashing (not exported; the bench reads the built module, as counters-off.js does).
const { ownedPartitions } = await import(new URL("../packages/runtime/dist/core/partition/rendezvous.js", import.meta.url).href);
const TOPIC = "bench-log";
/** How many partitions each of `ids` wins among them all. */
const split = (ids) => ids.map((id) => ownedPartitions(id, ids, [{ name: TOPIC, partitions: PARTITIONS }]).length);

/**
 * Settles the group before the log is filled. The members' ids are random,
 * and rendezvous hashing over two ids can split 8 partitions anywhere from
 * 8/0 to 4/4: while the split is worse than 5/3 the last member leaves and
 * joins again with a new id (at most 10 times). Then it wakes the members
 * every 100 ms until each holds its share (a member sees a newcomer at its
 * next heartbeat, every 5 s, and only then frees the newcomer's partitions).
 */
async function settleGroup(kids, ids) {
  const t0 = Date.now();
  let rerolls = 0;
  while (Math.max(...split(ids)) > Math.ceil(PARTITIONS / 2) + 1 && rerolls < 10) {
    rerolls++;
    kids.at(-1).send({ type: "reroll" });
    const m = await awaitMessage(kids.at(-1), "rerolled", 20_000);
    if (m.error) throw new Error(m.error);
    ids[ids.length - 1] = m.memberId;
  }
  const want = split(ids);
  for (;;) {
    const shares = [];
    for (const c of kids) {
      c.send({ type: "tick" });
      const m = await awaitMessage(c, "assigned", 10_000);
      if (m.error) throw new Error(m.error);
      shares.push(m.assigned);
    }
    const settled = shares.every((s, i) => s.length === want[i]) && new Set(shares.flat()).size === PARTITIONS;
    if (settled || Date.now() - t0 > SETTLE_DEADLINE_MS) return { shares: shares.map((s) => s.length), settled, rerolls, settleMs: Date.now() - t0 };
    await sleep(100);
  }
}

/** Sends "go" to every member and resolves when their handled counts add up to `n`: the wall time of the last one, or of the group's last commit when `settle`. */
async function consumeAll(kids, n, settle) {
  const latest = kids.map(() => ({ handled: 0, at: 0 }));
  let allIn;
  const allInPromise = new Promise((r) => (allIn = r));
  for (const [i, c] of kids.entries()) {
    c.on("message", (m) => {
      if (m?.type !== "progress") return;
      latest[i] = m;
      if (latest.reduce((s, x) => s + x.handled, 0) >= n) allIn(true);
    });
  }
  const t0 = wallNow();
  for (const c of kids) c.send({ type: "go" });
  let timer;
  const ok = await Promise.race([allInPromise, new Promise((r) => (timer = setTimeout(() => r(false), DEADLINE_MS)))]);
  clearTimeout(timer);
  const handled = latest.reduce((s, x) => s + x.handled, 0);
  if (!ok) return { error: `${handled} of ${n} handled when the ${DEADLINE_MS} ms deadline hit` };
  let t1 = Math.max(...latest.map((x) => x.at));
  let commitWaitMs = 0;
  if (settle) {
    kids[0].send({ type: "settle" });
    const settled = await awaitMessage(kids[0], "settled", 20_000);
    if (settled.error) return settled;
    commitWaitMs = settled.at - t1;
    t1 = settled.at;
  }
  return { elapsedMs: t1 - t0, recPerSec: n / ((t1 - t0) / 1000), handled, commitWaitMs };
}

async function stopMembers(kids) {
  const results = kids.map((c) => awaitMessage(c, "result", 30_000));
  for (const c of kids) c.send({ type: "stop" });
  return Promise.all(results);
}

/** The consume phase's members, on `target`: joined and settled before `fill()` runs, started together after it. */
async function withMembers(target, extra, fill, settle) {
  const { kids, ids } = await startMembers({ target, maxBatch: MAX_BATCH, ...extra });
  try {
    const group = settle ? await settleGroup(kids, ids) : null;
    const filled = await fill();
    const consumed = await consumeAll(kids, N, settle);
    const per = await stopMembers(kids);
    const failed = per.find((r) => r.error);
    return { ...filled, consume: failed ? { error: failed.error } : { ...consumed, group, perMember: per } };
  } finally {
    for (const c of kids) if (c.exitCode === null) c.kill("SIGKILL");
  }
}

/** later's retained log and job figures on one backend for one record size. */
async function laterRuns(backend, size) {
  const R = {};
  const title = `${backend} ${size} B`;
  R.single = await timed(`${title} append, 1 at a time`, async () => {
    const { target, release } = await freshStore(backend, "single");
    try {
      return await logPhase({ phase: "append-single", target, size, seconds: SECONDS, inFlight: IN_FLIGHT });
    } finally {
      await release();
    }
  });
  const { target, release } = await freshStore(backend, "log");
  try {
    const out = await withMembers(
      target,
      { size },
      async () => ({
        batch: await timed(`${title} append, batches of ${BATCH}`, () => logPhase({ phase: "append-batch", target, size, n: N, batch: BATCH })),
        replay: await timed(`${title} replay`, () => logPhase({ phase: "replay", target, size, page: PAGE })),
      }),
      true,
    );
    Object.assign(R, out);
    log(`  ${title} consume-and-commit: ${out.consume.error ? `ERROR ${out.consume.error}` : "ok"}`);
  } catch (e) {
    R.consume = { error: String(e?.stack ?? e) };
  } finally {
    await release();
  }
  R.jobBulk = await timed(`${title} job bulk enqueue`, async () => {
    const s = await freshStore(backend, "jobbulk");
    try {
      return await runPhase({ phase: "bulk", target: s.target, n: N, batch: BATCH, payloadBytes: size }, CHILD_TIMEOUT_MS);
    } finally {
      await s.release();
    }
  });
  R.jobWork = await timed(`${title} job processing`, async () => {
    const s = await freshStore(backend, "jobwork");
    try {
      const pre = await runPhase({ phase: "prefill", target: s.target, n: N, batch: BATCH, payloadBytes: size }, CHILD_TIMEOUT_MS);
      if (pre.error) return pre;
      return await runWork({ target: s.target, n: N, concurrency: CONCURRENCY }, { processes: MEMBERS, completionIsStored: true, deadlineMs: DEADLINE_MS });
    } finally {
      await s.release();
    }
  });
  return R;
}

/** Redis Streams figures for one record size, on one stream under a key of this run's own (deleted after). */
async function redisRuns(size) {
  const R = {};
  const prefix = `later-bench-log:${process.pid}:${size}`;
  const key = `${prefix}:stream`;
  redisKeys.add(key);
  const target = { redis: { ...REDIS, prefix } };
  const redis = new Redis({ ...REDIS, lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    const title = `redis ${size} B`;
    await redis.del(key);
    R.single = await timed(`${title} XADD, 1 at a time`, () => logPhase({ phase: "append-single", target, size, seconds: SECONDS, inFlight: IN_FLIGHT }));
    await redis.del(key);
    const out = await withMembers(
      target,
      { size },
      async () => {
        const batch = await timed(`${title} XADD, pipelines of ${BATCH}`, () => logPhase({ phase: "append-batch", target, size, n: N, batch: BATCH }));
        const replay = await timed(`${title} XRANGE`, () => logPhase({ phase: "replay", target, size, page: PAGE }));
        await redis.xgroup("CREATE", key, "bench-group", "0");
        return { batch, replay };
      },
      false,
    );
    Object.assign(R, out);
    log(`  ${title} XREADGROUP + XACK: ${out.consume.error ? `ERROR ${out.consume.error}` : "ok"}`);
  } catch (e) {
    R.consume ??= { error: String(e?.stack ?? e) };
  } finally {
    await redis.del(key).catch(() => {});
    redisKeys.delete(key);
    await redis.quit();
  }
  return R;
}

// ------------------------------------------------------------------ run ----

const load0 = os.loadavg();
const started = Date.now();
let pgVersion = "-";
let redisVersion = "-";
if (BACKENDS.includes("postgres")) pgVersion = await dbs.serverVersion();
if (BACKENDS.includes("redis")) {
  const r = new Redis({ ...REDIS, lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  redisVersion = /redis_version:(\S+)/.exec(await r.info("server"))?.[1] ?? "?";
  await r.quit();
}
log(
  `later retained-log bench: ${N} records per phase, ${SECONDS} s per one-at-a-time phase, sizes ${SIZES.join(", ")} B, backends ${BACKENDS.join(", ")}; temp folder ${tmp}`,
);

const COLUMNS = []; // { backend, size, title, R }
const NAMES = { sqlite: "SQLite", postgres: "PostgreSQL", redis: "Redis Streams" };
const sizeText = (size) => (size % 1024 === 0 ? `${size / 1024} KiB` : `${size} B`);
for (const backend of BACKENDS) {
  for (const size of SIZES) {
    log(`${NAMES[backend]}, ${sizeText(size)} records`);
    const R = backend === "redis" ? await redisRuns(size) : await laterRuns(backend, size);
    COLUMNS.push({ backend, size, title: `${NAMES[backend]}, ${sizeText(size)}`, R });
  }
}
const load1 = os.loadavg();
const totalS = (Date.now() - started) / 1000;
await cleanup();

// --------------------------------------------------------------- report ----

const fig = (r, f, fmt = int) => (!r ? "–" : r.error ? "error" : fmt(f(r)));
const mb = (x) => (Number.isFinite(x) ? (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : Math.round(x).toString()) : "–");
const isRedis = (c) => c.backend === "redis";
const rows = [
  [`append one at a time, ${IN_FLIGHT} in flight, ${SECONDS} s (rec/s) · Redis: XADD`, ...COLUMNS.map((c) => fig(c.R.single, (r) => r.recPerSec))],
  [`append in batches of ${BATCH} (rec/s) · Redis: pipelines of ${BATCH} XADD`, ...COLUMNS.map((c) => fig(c.R.batch, (r) => r.recPerSec))],
  [
    `replay from offset 0, pages of ${PAGE.toLocaleString("en-US")} (MB/s of values, passes after the first, ≥ 500 ms timed) · Redis: XRANGE COUNT ${PAGE}`,
    ...COLUMNS.map((c) => fig(c.R.replay, (r) => r.mbPerSec, mb)),
  ],
  ["replay (rec/s)", ...COLUMNS.map((c) => fig(c.R.replay, (r) => r.recPerSec))],
  [
    `consume-and-commit, group of ${MEMBERS} processes, ${PARTITIONS} partitions, batches ≤ ${MAX_BATCH} (rec/s) · Redis: XREADGROUP + XACK, ${MEMBERS} consumer processes`,
    ...COLUMNS.map((c) => fig(c.R.consume, (r) => r.recPerSec)),
  ],
  [`job bulk enqueue, batches of ${BATCH}, same payload size (jobs/s)`, ...COLUMNS.map((c) => (isRedis(c) ? "n/a" : fig(c.R.jobBulk, (r) => r.jobsPerSec)))],
  [
    `job processing, ${MEMBERS} processes × ${CONCURRENCY} workers, no-op (jobs/s)`,
    ...COLUMNS.map((c) => (isRedis(c) ? "n/a" : fig(c.R.jobWork, (r) => r.jobsPerSec))),
  ],
];

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
  `later @ ${revision}; ${cpus.length} cores × ${cpus[0]?.model ?? "?"}, Node ${process.version}, PostgreSQL ${pgVersion}, Redis ${redisVersion}, ${os.platform()} ${os.release()}`,
);
out.push(
  `${N.toLocaleString("en-US")} records (jobs) per phase, one run each, ${PARTITIONS} partitions; load average at start ${load0.map((x) => x.toFixed(2)).join(" ")}, at end ${load1.map((x) => x.toFixed(2)).join(" ")}; ${Math.round(totalS)} s in all`,
);
out.push("");
out.push(markdownTable(["figure", ...COLUMNS.map((c) => c.title)], rows));

const ratioLine = (what, a, b, target, fmt = int) => {
  if (!Number.isFinite(a) || !Number.isFinite(b)) return `* ${what}: n/a (a figure is missing) [≥ ${target}]`;
  const x = a / b;
  return `* ${what}: ${x.toFixed(2)}× (${fmt(a)} ÷ ${fmt(b)}) [≥ ${target}] ${x >= target ? "PASS" : "FAIL"}`;
};
const num = (r, f) => (r && !r.error ? f(r) : NaN);
out.push("");
out.push("Targets of issue 14 (ratios in this run; target in brackets):");
for (const c of COLUMNS.filter((c) => !isRedis(c))) {
  out.push(
    ratioLine(
      `${c.title}: batched append ÷ job bulk enqueue`,
      num(c.R.batch, (r) => r.recPerSec),
      num(c.R.jobBulk, (r) => r.jobsPerSec),
      1.5,
    ),
  );
  out.push(
    ratioLine(
      `${c.title}: consume-and-commit ÷ job processing`,
      num(c.R.consume, (r) => r.recPerSec),
      num(c.R.jobWork, (r) => r.jobsPerSec),
      1,
    ),
  );
}
for (const c of COLUMNS.filter((c) => c.backend === "sqlite")) {
  const x = num(c.R.replay, (r) => r.mbPerSec);
  out.push(`* ${c.title}: replay ${mb(x)} MB/s [≥ 100 MB/s] ${Number.isFinite(x) ? (x >= 100 ? "PASS" : "FAIL") : "n/a"}`);
}

out.push("");
out.push("Details:");
for (const c of COLUMNS) {
  const { R } = c;
  for (const [name, r] of Object.entries(R)) {
    if (r?.error) out.push(`* ${c.title} ${name}: ERROR ${String(r.error).split("\n").slice(0, 3).join(" / ")}`);
    if (r?.errorCount) out.push(`* ${c.title} ${name}: ${r.errorCount} error event(s), e.g. ${r.errors[0]}`);
  }
  const parts = [];
  if (R.single && !R.single.error) parts.push(`one at a time: ${int(R.single.records)} records in ${mb(R.single.elapsedMs / 1000)} s`);
  if (R.replay && !R.replay.error) {
    const second = R.replay.secondPass;
    parts.push(
      `replay: ${int(R.replay.records)} records, ${mb(R.replay.bytes / 1e6)} MB in ${int(R.replay.elapsedMs)} ms over the timed passes` +
        (second ? ` (the second pass alone, the first timed: ${mb(second.mbPerSec)} MB/s, ${int(second.records)} records in ${int(second.elapsedMs)} ms)` : ""),
    );
  }
  const k = R.consume;
  if (k && !k.error) {
    const g = k.group
      ? `members held ${k.group.shares.join(" + ")} partitions (settled in ${mb(k.group.settleMs / 1000)} s, ${k.group.rerolls} reroll(s)); `
      : "";
    parts.push(
      `consume: ${g}handled ${k.perMember.map((p) => int(p.handled)).join(" + ")} in ${int(k.elapsedMs)} ms${k.commitWaitMs ? `, last commit ${mb(k.commitWaitMs)} ms after the last handler` : ""}; peak RSS ${k.perMember.map((p) => int(p.peakRssMb)).join(", ")} MB`,
    );
  }
  const w = R.jobWork;
  if (w && !w.error)
    parts.push(
      `job processing: ${w.settings}; per process handled/done ${w.perProcess.map((p) => `${p.handled}/${p.done}`).join(", ")}; stored ${JSON.stringify(w.stored)}`,
    );
  if (parts.length) out.push(`* ${c.title}: ${parts.join("; ")}`);
}
process.stdout.write(`${out.join("\n")}\n`);
