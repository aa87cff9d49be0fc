// Where the time goes per job in later's PostgreSQL backend: one process,
// a fresh database per part, every statement of every pg client counted and
// timed (bench/statement-meter.js), plus this process's CPU, its event-loop
// use, and the CPU of the local PostgreSQL server's processes (from /proc).
// Run: `node bench/profile-postgres.js` (or BENCH_PROFILE=1 pnpm bench).
// Env: BENCH_JOBS (20000), BENCH_PG_URL. Prints markdown.
import { performance } from "node:perf_hooks";
import { JOB_TYPE, NAMESPACE, benchPublisher, wallNow } from "./lib.js";
import { BenchDatabases } from "./pg-databases.js";
import { int, markdownTable } from "./report.js";
import { StatementMeter, postgresServerCpuMs } from "./statement-meter.js";

const N = Math.max(1, Number.parseInt(process.env.BENCH_JOBS ?? "", 10) || 20_000);
const SINGLE_N = Math.min(N, 5000);
const CONCURRENCY = 10;
const dbs = new BenchDatabases(process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
const runtime = { ...(await import("@later/runtime")), ...(await import("@later/runtime/postgres")) };
if (typeof runtime.postgres !== "function") {
  console.log("profile-postgres: n/a (@later/runtime does not export postgres() yet)");
  process.exit(0);
}
const { BackgroundJobServer, JobPublisher, RetryPolicy, postgres, systemClock } = runtime;

// Names of the backend's hot statements (default schema, quoted as the backend quotes it), to label them.
// An internal module: when it moves, statements are labelled by their text.
let names = new Map();
try {
  const { PostgresJobQueries } = await import("../packages/runtime/dist/backend/postgres/postgres-job-queries.js");
  names = new Map(
    Object.entries(new PostgresJobQueries('"later"'))
      .filter(([, s]) => s?.name)
      .map(([k, s]) => [s.name, k]),
  );
} catch {
  /* labels from text only */
}
const meter = new StatementMeter(
  (name, text) => names.get(name) ?? (/^\s*(begin|commit|rollback)\b/i.test(text) ? text.trim().split(/\s/)[0].toUpperCase() : undefined),
);
meter.install();

const backendFor = (url) => postgres({ connectionString: url, namespace: NAMESPACE });
const fmtUs = (ms) => int(ms * 1000);

async function measured(body) {
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const pg0 = await postgresServerCpuMs();
  meter.take();
  const t0 = wallNow();
  const extra = await body();
  const wallMs = wallNow() - t0;
  const pgCpuMs = (await postgresServerCpuMs()) - pg0; // sampled before connections close
  const statements = meter.take();
  const cpu = process.cpuUsage(cpu0);
  return { wallMs, statements, nodeCpuMs: (cpu.user + cpu.system) / 1000, elu: performance.eventLoopUtilization(elu0).utilization, pgCpuMs, ...extra };
}

async function withDatabase(label, body) {
  const db = await dbs.create(`profile_${label}`);
  try {
    const b = backendFor(db.url);
    await b.open();
    await b.migrations.up();
    await b.close();
    return await body(db.url);
  } finally {
    await dbs.drop(db.name);
  }
}

async function withPublisher(url, body) {
  const backend = backendFor(url);
  await backend.open();
  const publisher = benchPublisher({ JobPublisher, RetryPolicy, systemClock }, backend);
  try {
    return await body(publisher);
  } finally {
    await backend.close();
  }
}

const payloads = (n) => Array.from({ length: n }, (_, i) => ({ i }));

const bulk = await withDatabase("bulk", (url) =>
  withPublisher(url, (p) =>
    measured(async () => {
      const all = payloads(N);
      for (let i = 0; i < N; i += 1000) await p.enqueueMany(JOB_TYPE, all.slice(i, i + 1000));
    }),
  ),
);
const single = await withDatabase("single", (url) =>
  withPublisher(url, (p) =>
    measured(async () => {
      let next = 0;
      const loop = async () => {
        while (next < SINGLE_N) await p.enqueue(JOB_TYPE, { i: next++ });
      };
      await Promise.all(Array.from({ length: 10 }, loop));
    }),
  ),
);
const processing = await withDatabase("process", async (url) => {
  await withPublisher(url, async (p) => {
    const all = payloads(N);
    for (let i = 0; i < N; i += 1000) await p.enqueueMany(JOB_TYPE, all.slice(i, i + 1000));
  });
  let handlerMs = 0;
  let done = 0;
  let allDone;
  const finished = new Promise((r) => (allDone = r));
  let server;
  const r = await measured(async () => {
    server = await BackgroundJobServer.start({
      context: {},
      backend: backendFor(url),
      workerCount: CONCURRENCY,
      handlers: {
        [JOB_TYPE]: {
          handle: async () => {
            const t = performance.now();
            handlerMs += performance.now() - t;
          },
        },
      },
      onEvent: (e) => {
        if (e.type === "job" && e.stage === "success" && ++done === N) allDone();
      },
    });
    await finished;
    return { handlerMs };
  });
  await server.shutdown({ deadlineMs: 5000 });
  return r;
});
meter.uninstall();

// ---------------------------------------------------------------- report ----

function statementTable(r, jobs) {
  const rows = [...r.statements]
    .sort((a, b) => b[1].totalMs - a[1].totalMs)
    .map(([label, s]) => [
      label,
      int(s.calls),
      (s.calls / jobs).toFixed(s.calls / jobs < 0.1 ? 4 : 2),
      (s.totalMs / s.calls).toFixed(2),
      fmtUs(s.totalMs / jobs),
      s.maxMs.toFixed(1),
    ]);
  return markdownTable(["statement", "calls", "per job", "mean round trip (ms)", "round-trip µs per job", "max (ms)"], rows);
}

function summary(title, r, jobs) {
  const calls = [...r.statements.values()].reduce((a, s) => a + s.calls, 0);
  return [
    `### ${title}`,
    "",
    `${int(jobs)} jobs in ${int(r.wallMs)} ms = ${int(jobs / (r.wallMs / 1000))} jobs/s; per job: ${fmtUs(r.wallMs / jobs)} µs wall, ${(calls / jobs).toFixed(3)} statements, ` +
      `${fmtUs(r.nodeCpuMs / jobs)} µs CPU in this process (event loop busy ${(r.elu * 100).toFixed(0)} %), ${fmtUs(r.pgCpuMs / jobs)} µs CPU in PostgreSQL server processes.`,
    "",
    statementTable(r, jobs),
    "",
  ].join("\n");
}

const stat = (label) => processing.statements.get(label) ?? { calls: 0, totalMs: 0 };
const claim = stat("claim");
// Successes take `finishSuccess`; any other outcome `finish`.
const finish = ["finish", "finishSuccess"].map(stat).reduce((a, b) => ({ calls: a.calls + b.calls, totalMs: a.totalMs + b.totalMs }));
const out = [
  `## later PostgreSQL backend: cost per job (${int(N)} no-op jobs, concurrency ${CONCURRENCY}, one process)`,
  "",
  summary("processing (prefilled, workerCount 10)", processing, N),
  `Claims: ${int(claim.calls)} statements, ${(N / Math.max(1, claim.calls)).toFixed(1)} jobs per claim on average, ${fmtUs(claim.totalMs / N)} µs round trip per job. ` +
    `Finishes: ${int(finish.calls)} statements, ${(N / Math.max(1, finish.calls)).toFixed(1)} jobs per finish, ${fmtUs(finish.totalMs / N)} µs per job. ` +
    `Handler: ${fmtUs(processing.handlerMs / N)} µs per job. Round trips overlap (several connections), so they add up to more than the wall time.`,
  "",
  `CPU per job: ${fmtUs(processing.nodeCpuMs / N)} µs in this process + ${fmtUs(processing.pgCpuMs / N)} µs in PostgreSQL = ${fmtUs((processing.nodeCpuMs + processing.pgCpuMs) / N)} µs, ` +
    `against ${fmtUs((2 * processing.wallMs) / N)} µs of two cores' time per job: ${int((100 * (processing.nodeCpuMs + processing.pgCpuMs)) / (2 * processing.wallMs))} % of the machine's CPU was in use.`,
  "",
  summary("bulk enqueue (20 × 1000 via enqueueMany)", bulk, N),
  summary(`single enqueue (${int(SINGLE_N)} jobs, 10 in flight)`, single, SINGLE_N),
];
process.stdout.write(`${out.join("\n")}\n`);
await dbs.dropAll();
