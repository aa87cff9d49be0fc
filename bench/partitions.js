// Partitioned (ordered) jobs on both backends: processing jobs/s across the 8
// partitions of one topic and 1,000 keys, then the same with 100,000 jobs
// queued behind 50 blocked partition heads of another topic, which a head
// claim must not pay for (it locks partitions, then probes one head each).
// Run: `pnpm bench:partitions` (builds first) or `node bench/partitions.js`; `pnpm bench` runs it after bench/postgres.js.
// Env: BENCH_PART_JOBS (20000), BENCH_PART_BLOCKED (100000), BENCH_REPS (3), BENCH_PG_URL.
// later also runs with its stage counters turned off (bench/counters-off.js), back to back with them on, and with
// `partitionRunMax: 1` (a write per job, as before partition runs) beside the default runs of up to 128.
// The server runs in this process (10 workers); the jobs are written before it starts, so only processing is timed.
// Beside it, graphile-worker 0.17's ordered path (a job queue per key), on the same PostgreSQL server.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { BackgroundJobServer, partitionForKey, RetryPolicy, topic } from "@later/runtime";
import { prepareBackend, storedRetryPolicy } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { storedStageCounts, turnCountersOff } from "./counters-off.js";
import { BenchDatabases } from "./pg-databases.js";
import { cell, int, markdownTable, pairedRatios, ratio } from "./report.js";

const envInt = (name, dflt) => Math.max(1, Number.parseInt(process.env[name] ?? "", 10) || dflt);
const N = envInt("BENCH_PART_JOBS", 20_000);
const BLOCKED = envInt("BENCH_PART_BLOCKED", 100_000);
const REPS = envInt("BENCH_REPS", 3);
const KEYS = 1_000;
const PARTITIONS = 8;
const BLOCKED_HEADS = 50;
const WORKERS = 10;
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const TOPICS = [topic("orders", PARTITIONS), topic("stuck", BLOCKED_HEADS)];
const POLICY = storedRetryPolicy(RetryPolicy.noRetries());
const log = (s) => process.stderr.write(`${s}\n`);

const tmp = mkdtempSync(path.join(os.tmpdir(), "later-bench-part-"));
const dbs = new BenchDatabases(PG_URL);
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

let seq = 0;
/** A fresh database of one backend kind; `backend()` opens a new backend on it. */
async function freshStore(kind) {
  if (kind === "sqlite") {
    const file = path.join(tmp, `p${++seq}.db`);
    return { target: { file }, backend: () => sqlite({ file, namespace: "bench" }), release: async () => {} };
  }
  const db = await dbs.create("partitions");
  return {
    target: { pgUrl: db.url },
    backend: () => postgres({ connectionString: db.url, namespace: "bench", maxConnections: 12 }),
    release: () => dbs.drop(db.name),
  };
}

let idSeq = 0;
const id = () => `b${String(++idSeq).padStart(12, "0")}`;

/** Writes the jobs straight through the seam in batches (the sequence per partition is assigned there). */
async function insert(backend, jobs) {
  const now = Date.now();
  for (let i = 0; i < jobs.length; i += 2_000) await backend.jobs.insertMany({ jobs: jobs.slice(i, i + 2_000), now });
}

/** `countersOff`: the same build with the stage counters turned off (bench/counters-off.js); `runMax`: `partitionRunMax` (undefined: the default). */
async function run(kind, withBlocked, countersOff = false, runMax = undefined) {
  const store = await freshStore(kind);
  // Before any backend of the run is created: PostgreSQL builds its statements (with or without counting) at construction.
  const countersOn = countersOff ? await turnCountersOff(store.target) : () => {};
  const setup = store.backend();
  try {
    await prepareBackend(setup, true);
    await setup.partitions.topicRegister({ topics: TOPICS, now: Date.now() });
    const now = Date.now();
    if (withBlocked) {
      // Each of the 50 partitions of "stuck": a head delayed by a day, then its share of the 100,000.
      const heads = Array.from({ length: BLOCKED_HEADS }, (_, p) => ({
        id: id(),
        jobType: "stuck",
        payload: "{}",
        runAt: now + 86_400_000,
        retryPolicy: POLICY,
        topic: "stuck",
        partition: p,
      }));
      await insert(setup, heads);
      await insert(
        setup,
        Array.from({ length: BLOCKED }, (_, i) => ({
          id: id(),
          jobType: "stuck",
          payload: "{}",
          runAt: now,
          retryPolicy: POLICY,
          topic: "stuck",
          partition: i % BLOCKED_HEADS,
        })),
      );
    }
    const orders = Array.from({ length: N }, (_, i) => {
      const key = `customer-${i % KEYS}`;
      return {
        id: id(),
        jobType: "order",
        payload: JSON.stringify({ key, n: Math.floor(i / KEYS) }),
        runAt: now,
        retryPolicy: POLICY,
        topic: "orders",
        partition: partitionForKey(key, PARTITIONS),
      };
    });
    await insert(setup, orders);
    await setup.close();

    let done = 0;
    let outOfOrder = 0;
    const lastN = new Map();
    let finished;
    const allDone = new Promise((r) => (finished = r));
    const t0 = performance.now();
    const server = await BackgroundJobServer.start({
      context: null,
      backend: store.backend(),
      workerCount: WORKERS,
      topics: TOPICS,
      ...(runMax === undefined ? {} : { partitionRunMax: runMax }),
      handlers: {
        order: {
          handle: (_ctx, p) => {
            if ((lastN.get(p.key) ?? -1) >= p.n) outOfOrder++;
            lastN.set(p.key, p.n);
          },
        },
        stuck: { handle: () => undefined },
      },
      onEvent: (e) => {
        if (e.type === "job" && e.stage === "success" && e.jobType === "order" && ++done === N) finished();
      },
    });
    const deadline = setTimeout(() => finished(), 120_000);
    await allDone;
    const seconds = (performance.now() - t0) / 1000;
    clearTimeout(deadline);
    const stuckRan =
      (countersOff ? ((await storedStageCounts(store.target, "bench")).success ?? 0) : (await server.backend.inspect.stageCounts()).counts.success) - done;
    await server.shutdown({ deadlineMs: 5_000 });
    if (done < N) return { error: `deadline hit: ${done} of ${N} done` };
    return { jps: N / seconds, outOfOrder, stuckRan };
  } catch (error) {
    return { error: String(error?.stack ?? error) };
  } finally {
    countersOn();
    await setup.close().catch(() => {});
    await store.release();
  }
}

/**
 * graphile-worker's ordered path, what its users pick for this: a named job
 * queue per key (`queueName`), whose jobs run one at a time in order. The
 * blocked case locks 50 queues (as a running job that never ends would) with
 * the 100,000 jobs in them added first, so they sort ahead of the rest.
 */
async function runGraphile(withBlocked, fast) {
  const { Logger, makeWorkerUtils, run: runWorker, runMigrations } = await import("graphile-worker");
  const { EventEmitter } = await import("node:events");
  const { queryOnce } = await import("./pg-databases.js");
  const { default: pg } = await import("pg");
  const logger = new Logger(() => (level, message) => {
    if (level === "error") log(`[graphile-worker] ${message}`);
  });
  const db = await dbs.create("gw_partitions");
  // Pools of our own, each with an error listener that outlives graphile-worker's:
  // its release ends a pool it made without waiting, then drops its listener, and
  // a connection still closing when the database is dropped would end this process.
  const pools = [];
  const pool = () => {
    const p = new pg.Pool({ connectionString: db.url, max: WORKERS + 2 });
    p.on("error", () => {});
    p.on("connect", (client) => client.on("error", () => {}));
    pools.push(p);
    return p;
  };
  try {
    await runMigrations({ pgPool: pool(), logger });
    const utils = await makeWorkerUtils({ pgPool: pool(), logger });
    const add = async (specs) => {
      for (let i = 0; i < specs.length; i += 2_000) await utils.addJobs(specs.slice(i, i + 2_000));
    };
    if (withBlocked) {
      await add(Array.from({ length: BLOCKED }, (_, i) => ({ identifier: "stuck", payload: {}, queueName: `stuck-${i % BLOCKED_HEADS}` })));
      await queryOnce(db.url, "update graphile_worker._private_job_queues set locked_at = now(), locked_by = 'blocked-head' where queue_name like 'stuck-%'");
    }
    await add(
      Array.from({ length: N }, (_, i) => ({
        identifier: "order",
        payload: { key: `customer-${i % KEYS}`, n: Math.floor(i / KEYS) },
        queueName: `customer-${i % KEYS}`,
      })),
    );
    await utils.release();
    let done = 0;
    let outOfOrder = 0;
    const lastN = new Map();
    let finished;
    const allDone = new Promise((r) => (finished = r));
    const events = new EventEmitter();
    events.on("job:complete", ({ job, error }) => {
      if (!error && job.task_identifier === "order" && ++done === N) finished();
    });
    const t0 = performance.now();
    const runner = await runWorker({
      pgPool: pool(),
      concurrency: WORKERS,
      noHandleSignals: true,
      logger,
      events,
      taskList: {
        order: async (p) => {
          if ((lastN.get(p.key) ?? -1) >= p.n) outOfOrder++;
          lastN.set(p.key, p.n);
        },
        stuck: async () => {},
      },
      ...(fast ? { preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } } : {}),
    });
    const deadline = setTimeout(() => finished(), 120_000);
    await allDone;
    // job:complete comes before the batched DELETE: wait for the table to hold no "order" job.
    while (
      (
        await queryOnce(
          db.url,
          "select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'order'",
        )
      ).rows[0].n > 0 &&
      performance.now() - t0 < 120_000
    )
      await new Promise((r) => setTimeout(r, 2));
    const seconds = (performance.now() - t0) / 1000;
    clearTimeout(deadline);
    await runner.stop();
    if (done < N) return { error: `deadline hit: ${done} of ${N} done` };
    return { jps: N / seconds, outOfOrder, stuckRan: 0 };
  } catch (error) {
    return { error: String(error?.stack ?? error) };
  } finally {
    await Promise.all(pools.map((p) => p.end().catch(() => {})));
    await dbs.drop(db.name).catch(() => {});
  }
}

const results = {};
for (const [name, fast] of [
  ["graphile", false],
  ["graphileFast", true],
]) {
  for (const blocked of [false, true]) {
    const runs = [];
    for (let r = 0; r < REPS; r++) {
      log(`graphile-worker${fast ? " (fast path)" : ""} ${blocked ? "with blocked queues" : "plain"} run ${r + 1}/${REPS}`);
      runs.push(await runGraphile(blocked, fast));
    }
    results[`${name}/${blocked}`] = runs;
  }
}
// later with its stage counters on and off, back to back in each repetition (which goes first alternates).
for (const kind of ["sqlite", "postgres"]) {
  for (const blocked of [false, true]) {
    const on = [];
    const off = [];
    for (let r = 0; r < REPS; r++) {
      for (const countersOff of r % 2 ? [true, false] : [false, true]) {
        log(`${kind}${countersOff ? " (counters off)" : ""} ${blocked ? "with blocked heads" : "plain"} run ${r + 1}/${REPS}`);
        (countersOff ? off : on).push(await run(kind, blocked, countersOff));
      }
    }
    results[`${kind}/${blocked}`] = on;
    results[`${kind}Off/${blocked}`] = off;
    const single = [];
    for (let r = 0; r < REPS; r++) {
      log(`${kind} (partitionRunMax 1) ${blocked ? "with blocked heads" : "plain"} run ${r + 1}/${REPS}`);
      single.push(await run(kind, blocked, false, 1));
    }
    results[`${kind}Run1/${blocked}`] = single;
  }
}
await dbs.dropAll();

const jps = (r) => r.jps;
const COLS = ["sqlite", "sqliteOff", "sqliteRun1", "postgres", "postgresOff", "postgresRun1", "graphile", "graphileFast"];
const rows = [
  [
    `ordered processing: ${int(N)} jobs, ${int(KEYS)} keys (later: ${PARTITIONS} partitions; graphile-worker: a queue per key) (jobs/s)`,
    ...COLS.map((c) => cell(results[`${c}/false`], jps)),
  ],
  [
    `the same with ${int(BLOCKED)} jobs behind ${BLOCKED_HEADS} blocked heads (graphile-worker: 50 locked queues) (jobs/s)`,
    ...COLS.map((c) => cell(results[`${c}/true`], jps)),
  ],
];
const out = [];
out.push(
  `${os.cpus().length} cores, Node ${process.version}; ${WORKERS} workers in one process; ${REPS > 1 ? `median (min–max) of ${REPS} runs` : "one run"}; a fresh database per run.`,
);
out.push("");
out.push(
  markdownTable(
    [
      "figure",
      "later (SQLite)",
      "later (SQLite, counters off)",
      "later (SQLite, partitionRunMax 1)",
      "later (PostgreSQL)",
      "later (PostgreSQL, counters off)",
      "later (PostgreSQL, partitionRunMax 1)",
      "graphile-worker (defaults)",
      "graphile-worker (fast path)",
    ],
    rows,
  ),
);
out.push("");
out.push(
  "Stage counters (issue 13): on ÷ off [target ≥ 0.95], per repetition after the semicolon; and later (PostgreSQL) ÷ graphile-worker's fast path on this ordered path, for reference:",
);
for (const blocked of [false, true]) {
  const what = blocked ? "behind blocked heads" : "plain";
  for (const kind of ["sqlite", "postgres"]) {
    out.push(
      `* ${what}, later (${kind === "sqlite" ? "SQLite" : "PostgreSQL"}) counters on ÷ off = ${ratio(results[`${kind}/${blocked}`], results[`${kind}Off/${blocked}`], jps)} [≥ 0.95]; ${pairedRatios(results[`${kind}/${blocked}`], results[`${kind}Off/${blocked}`], jps)}`,
    );
  }
  for (const kind of ["sqlite", "postgres"]) {
    out.push(
      `* ${what}, later (${kind === "sqlite" ? "SQLite" : "PostgreSQL"}) runs (default partitionRunMax) ÷ partitionRunMax 1 = ${ratio(results[`${kind}/${blocked}`], results[`${kind}Run1/${blocked}`], jps)}`,
    );
  }
  out.push(
    `* ${what}, later (PostgreSQL, counters on) ÷ graphile-worker fast path = ${ratio(results[`postgres/${blocked}`], results[`graphileFast/${blocked}`], jps)}`,
  );
}
out.push("");
for (const [key, runs] of Object.entries(results)) {
  runs.forEach((r, i) => {
    if (r.error) out.push(`* ${key} #${i + 1}: ERROR ${r.error.split("\n").slice(0, 3).join(" / ")}`);
    else if (r.outOfOrder || r.stuckRan) out.push(`* ${key} #${i + 1}: ${r.outOfOrder} jobs out of key order, ${r.stuckRan} blocked jobs ran (both must be 0)`);
  });
}
process.stdout.write(`${out.join("\n")}\n`);
