// Two builds of later in one process, phases alternating, for a before/after
// figure on a machine whose speed drifts from run to run (this one's whole
// bench runs differ by a third from one run to the next, more than most
// changes we measure). Both builds' dist/ are imported side by side; each
// gets its own SQLite file or PostgreSQL database; every round runs A then B
// or B then A, and the medians and the median of the per-round ratios are
// printed.
//
//   node bench/ab-builds.js --a . --b ../later-before [--rounds 20] [--only insert,claim,single,process]
//
// AB_SERVER_OPTIONS (JSON) is merged into both servers' options of the process
// phase, e.g. '{"metrics":false}' to see a difference without the metrics.
//
// With AB_A_EMPTY_MIDDLEWARE=1, side A also gets one middleware that only
// calls next() (X10) on its publisher and its server: with `--a . --b .`, what
// an empty middleware costs (issue 29).
//
// `--b` is a checkout of another commit with `pnpm install && pnpm build`
// done in it (e.g. `git worktree add ../later-before <commit>`).
//
// Phases (both backends unless BENCH_ONLY=sqlite or postgres):
// - insert: 5 × enqueueMany(1000) through a standalone publisher; ms per
//   1,000 jobs, and (PostgreSQL) the server's CPU for them, from /proc of the
//   database's own connections;
// - claim / finish: the seam's claimReady of 512 prefilled jobs (a batch size of PostgreSQL's claim ladder), then their
//   finishMany as successes; µs per job;
// - single: 500 single enqueues, 10 in flight; jobs/s;
// - process: a server of 10 workers runs 5,000 prefilled jobs; jobs/s, from
//   its start to the last success event, and from the first success to the
//   last (without the start).
import { readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { median } from "./report.js";

const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const roots = { A: path.resolve(arg("a", ".")), B: path.resolve(arg("b", "")) };
if (!arg("b")) {
  console.error("usage: node bench/ab-builds.js --a . --b ../later-before [--rounds 20] [--only insert,claim,single,process]");
  process.exit(2);
}
const ROUNDS = Number(arg("rounds", "20"));
const ONLY = arg("only", "insert,claim,single,process").split(",");
const KINDS = (process.env.BENCH_ONLY ?? "sqlite,postgres").split(",");
const ADMIN_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const pg = createRequire(path.join(roots.A, "packages/runtime/package.json"))("pg");
const admin = new pg.Client(ADMIN_URL);
const cleanups = [];
/** One middleware that does nothing but call next(), around every enqueue and attempt. */
/** Extra server options of the process phase, both sides (AB_SERVER_OPTIONS). */
const SERVER_OPTIONS = JSON.parse(process.env.AB_SERVER_OPTIONS ?? "{}");
const EMPTY_MIDDLEWARE = { enqueue: (_ctx, next) => next(), attempt: (_ctx, next) => next() };

/** CPU ms of the PostgreSQL processes serving database `db` (their connections), from /proc. */
async function serverCpuMs(db) {
  const { rows } = await admin.query("SELECT pid FROM pg_stat_activity WHERE datname = $1", [db]);
  let ticks = 0;
  for (const { pid } of rows) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      /* gone */
    }
  }
  return ticks * 10;
}

/** A build's runtime and a fresh store of `kind` for it. */
async function side(label, kind) {
  const root = roots[label];
  const load = (entry) => import(pathToFileURL(path.join(root, "packages/runtime/dist", entry)).href);
  const later = { ...(await load("index.js")), ...(await load("sqlite.js")), ...(await load("postgres.js")) };
  let backend;
  let db = null;
  if (kind === "sqlite") {
    const file = path.join(tmpdir(), `later-ab-${label}-${process.pid}-${cleanups.length}.db`);
    backend = () => later.sqlite({ file, namespace: "ab" });
    cleanups.push(async () => {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true });
    });
  } else {
    db = `later_ab_${label.toLowerCase()}_${process.pid}_${cleanups.length}`;
    await admin.query(`CREATE DATABASE ${db}`);
    const url = new URL(ADMIN_URL);
    url.pathname = `/${db}`;
    backend = () => later.postgres({ connectionString: url.toString(), namespace: "ab" });
    cleanups.push(() => admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`));
  }
  const b = backend();
  await b.open();
  await b.migrations.up();
  const middleware = label === "A" && process.env.AB_A_EMPTY_MIDDLEWARE ? { middleware: [EMPTY_MIDDLEWARE] } : {};
  const publisher = new later.JobPublisher({
    ...middleware,
    backend: b,
    clock: later.systemClock,
    defaultRetryPolicy: later.RetryPolicy.default(),
    encoders: new Map([["noop", JSON.stringify]]),
    topics: new Map(),
    retentionMs: 86_400_000,
    onCommitted: () => {},
  });
  cleanups.push(() => b.close());
  return { later, backend, b, db, publisher, middleware, figures: {} };
}

const record = (s, key, value) => (s.figures[key] ??= []).push(value);

const PHASES = {
  async insert(s, kind) {
    const cpu0 = kind === "postgres" ? await serverCpuMs(s.db) : 0;
    const t0 = performance.now();
    for (let k = 0; k < 5; k++)
      await s.publisher.enqueueMany(
        "noop",
        Array.from({ length: 1000 }, (_, i) => ({ i })),
      );
    record(s, "insert: ms per 1,000 jobs (lower is better)", (performance.now() - t0) / 5);
    if (kind === "postgres") record(s, "insert: server CPU ms per 1,000 jobs", ((await serverCpuMs(s.db)) - cpu0) / 5);
  },
  async claim(s) {
    await s.publisher.enqueueMany(
      "noop",
      Array.from({ length: 512 }, (_, i) => ({ i })),
    );
    const now = Date.now();
    let t0 = performance.now();
    const { jobs } = await s.b.jobs.claimReady({ owner: "ab", limit: 512, now, leaseExpiresAt: now + 60_000, jobTypes: ["noop"] });
    record(s, "claim of 512: µs per job (lower is better)", ((performance.now() - t0) * 1000) / jobs.length);
    t0 = performance.now();
    await s.b.jobs.finishMany({
      finishes: jobs.map((j) => ({ id: j.id, attempt: j.attempt, outcome: { kind: "success" } })),
      now: now + 1,
      retentionMs: 86_400_000,
    });
    record(s, "finish of 512: µs per job (lower is better)", ((performance.now() - t0) * 1000) / jobs.length);
  },
  async single(s) {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < 500) await s.publisher.enqueue("noop", { i: next++ });
      }),
    );
    record(s, "single enqueue, 10 in flight: jobs/s", 500 / ((performance.now() - t0) / 1000));
  },
  async process(s) {
    const N = 5000;
    for (let k = 0; k < N; k += 1000)
      await s.publisher.enqueueMany(
        "noop",
        Array.from({ length: 1000 }, (_, i) => ({ i })),
      );
    let done = 0;
    let first = 0;
    let finished;
    const all = new Promise((r) => (finished = r));
    const t0 = performance.now();
    const server = await s.later.BackgroundJobServer.start({
      context: {},
      backend: s.backend(),
      workerCount: 10,
      ...s.middleware,
      handlers: { noop: { handle: async () => {} } },
      ...SERVER_OPTIONS,
      onEvent: (e) => {
        if (e.type === "job" && e.stage === "success") {
          if (++done === 1) first = performance.now();
          if (done === N) finished();
        }
      },
    });
    await all;
    const end = performance.now();
    record(s, "processing 5,000 jobs, 10 workers: jobs/s", N / ((end - t0) / 1000));
    // The same without the server's start (the first success's wait): what a running server sustains.
    record(s, "processing after the first success: jobs/s", (N - 1) / ((end - first) / 1000));
    await server.shutdown({ deadlineMs: 5000 });
  },
};

await admin.connect();
try {
  console.log(`A = ${roots.A}\nB = ${roots.B}\n${ROUNDS} rounds per phase, A and B alternating\n`);
  for (const kind of ["sqlite", "postgres"].filter((k) => KINDS.includes(k))) {
    for (const phase of ONLY) {
      const sides = { A: await side("A", kind), B: await side("B", kind) };
      // Two rounds each to warm up (JIT, statement caches), not counted.
      for (let r = 0; r < 2; r++) for (const l of ["A", "B"]) await PHASES[phase](sides[l], kind);
      for (const l of ["A", "B"]) sides[l].figures = {};
      for (let r = 0; r < ROUNDS; r++) for (const l of r % 2 ? ["A", "B"] : ["B", "A"]) await PHASES[phase](sides[l], kind);
      for (const key of Object.keys(sides.A.figures)) {
        const [a, b] = [sides.A.figures[key], sides.B.figures[key]];
        const ratios = a.map((x, i) => x / b[i]);
        console.log(
          `${kind.padEnd(8)} ${key.padEnd(52)} A ${median(a).toFixed(1).padStart(9)}  B ${median(b).toFixed(1).padStart(9)}  A÷B ${median(ratios).toFixed(3)} (median of the rounds' ratios)`,
        );
      }
      for (const c of cleanups.splice(0).reverse()) await c();
    }
  }
} finally {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  await admin.end();
}
