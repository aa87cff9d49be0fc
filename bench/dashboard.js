// Dashboard benchmark (issue 15 point 4, docs/semantics.md D7): how long the dashboard's
// reads take with 1,000 and with 1,000,000 jobs queued, on SQLite and on
// PostgreSQL, through the Fetch handler a user mounts (`createDashboard` from
// `@later/runtime/dashboard`), in this process, on a fresh database each.
// Run: `pnpm bench:dashboard` (builds first) or `node bench/dashboard.js`.
//
// What is measured: the wall time of one request, answered in full (body
// read), for
//   * `GET api/overview` (stage counts, throughput, dispatch wait, workers,
//     topics, database size): the dashboard serves one snapshot a second to
//     every page, so each timed call first moves the dashboard's manual clock
//     past that second: every call computes a snapshot;
//   * `GET api/jobs?stage=enqueued&limit=50` and `?stage=failed&limit=50`: the
//     first page of each list;
//   * `GET api/jobs/{id}`: a failed job's detail (stage history, children).
// Each is called REPS times (default 25) after 20 warm-up calls; the table
// shows the median and the ratio of the 1M figure to the 1k figure. Target:
// under 50 ms each at 1M and within 3x of the 1k figure.
//
// The backlog: N jobs of a type no server handles (they stay `enqueued`),
// enqueued in calls of 1,000 through a publisher, plus 200 jobs that a server
// runs and fails for good, so the failed list and a failed job's detail have
// something to show. `BENCH_DASHBOARD_SIZES=1000,1000000` and
// `BENCH_DASHBOARD_BACKENDS=sqlite,postgres` choose what runs.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { BackgroundJobServer, JobPublisher, PermanentJobError, RetryPolicy, systemClock } from "@later/runtime";
import { createDashboard } from "@later/runtime/dashboard";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { ManualClock } from "@later/runtime/testing";
import { BenchDatabases } from "./pg-databases.js";

const SIZES = (process.env.BENCH_DASHBOARD_SIZES ?? "1000,1000000").split(",").map(Number);
const BACKENDS = (process.env.BENCH_DASHBOARD_BACKENDS ?? "sqlite,postgres").split(",");
const REPS = Number.parseInt(process.env.BENCH_DASHBOARD_REPS ?? "25", 10);
const PG_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const FAILED = 200;
/** Requests before the timed ones, so the first backlog size does not pay for the JIT's warm-up. */
const WARM_UP = 20;
const BATCH = 1000;
const NAMESPACE = "bench";

const tmp = mkdtempSync(path.join(os.tmpdir(), "later-bench-dashboard-"));
const databases = new BenchDatabases(PG_URL);
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

/** A fresh backend factory of `kind`: each call opens a new backend object on the same database. */
async function freshDatabase(kind, size) {
  if (kind === "sqlite") {
    const file = path.join(tmp, `dashboard-${size}.db`);
    return () => sqlite({ file, namespace: NAMESPACE });
  }
  const { url } = await databases.create(`dashboard_${size}`);
  return () => postgres({ connectionString: url, namespace: NAMESPACE });
}

/** N never-handled jobs plus FAILED failed ones; resolves to the id of one failed job. */
async function seed(backendOf, size) {
  const backend = backendOf();
  await backend.open();
  await backend.migrations.up();
  const publisher = new JobPublisher({
    backend,
    clock: systemClock,
    defaultRetryPolicy: RetryPolicy.default(),
    encoders: new Map([
      ["unhandled", JSON.stringify],
      ["fails", JSON.stringify],
    ]),
    topics: new Map(),
    retentionMs: 86_400_000,
    onCommitted: () => {},
  });
  try {
    const payload = { to: "someone@example.com", subject: "hello" };
    for (let done = 0; done < size; done += BATCH) {
      const n = Math.min(BATCH, size - done);
      await publisher.enqueueMany(
        "unhandled",
        Array.from({ length: n }, () => payload),
      );
    }
    await publisher.enqueueMany(
      "fails",
      Array.from({ length: FAILED }, (_, i) => ({ i })),
    );
  } finally {
    await backend.close();
  }
  let failed = 0;
  let lastFailed = null;
  let allFailedResolve;
  const allFailed = new Promise((resolve) => {
    allFailedResolve = resolve;
  });
  const server = await BackgroundJobServer.start({
    backend: backendOf(),
    context: null,
    workerCount: 10,
    pollIntervalMs: 50,
    handlers: {
      fails: {
        handle: () => {
          throw new PermanentJobError("refused: <b>not</b> a real address");
        },
      },
    },
    onEvent: (e) => {
      if (e.type === "job" && e.stage === "failed") {
        lastFailed = e.jobId;
        if (++failed === FAILED) allFailedResolve();
      }
    },
  });
  await allFailed;
  await server.shutdown();
  return lastFailed;
}

async function timed(dashboard, url, before) {
  const times = [];
  for (let i = 0; i < REPS + WARM_UP; i++) {
    before?.();
    const t0 = performance.now();
    const response = await dashboard(new Request(url));
    await response.arrayBuffer();
    const ms = performance.now() - t0;
    if (response.status !== 200) throw new Error(`${url}: HTTP ${response.status}`);
    if (i >= WARM_UP) times.push(ms);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

async function measure(kind, size) {
  const backendOf = await freshDatabase(kind, size);
  const t0 = performance.now();
  const failedId = await seed(backendOf, size);
  const seedS = (performance.now() - t0) / 1000;
  const clock = new ManualClock(Date.now());
  const backend = backendOf();
  await backend.open();
  const dashboard = createDashboard({ backend, clock });
  const base = "http://localhost/";
  try {
    return {
      seedS,
      overview: await timed(dashboard, `${base}api/overview`, () => clock.advance(1001)),
      enqueued: await timed(dashboard, `${base}api/jobs?stage=enqueued&limit=50`),
      failed: await timed(dashboard, `${base}api/jobs?stage=failed&limit=50`),
      detail: await timed(dashboard, `${base}api/jobs/${failedId}`),
    };
  } finally {
    await backend.close();
  }
}

const rows = [
  ["overview", "overview"],
  ["first page of enqueued", "enqueued"],
  ["first page of failed", "failed"],
  ["job detail", "detail"],
];
console.log(
  `later dashboard benchmark, ${new Date().toISOString()}, node ${process.version}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log(`median of ${REPS} requests each (ms); backlog sizes ${SIZES.join(", ")}`);
let allMet = true;
for (const kind of BACKENDS) {
  const results = {};
  for (const size of SIZES) {
    results[size] = await measure(kind, size);
    console.log(`  ${kind}: seeded ${size.toLocaleString("en")} jobs in ${results[size].seedS.toFixed(1)} s`);
  }
  const small = results[Math.min(...SIZES)];
  const large = results[Math.max(...SIZES)];
  console.log(`\n| ${kind} | ${SIZES.map((s) => `${s.toLocaleString("en")} jobs`).join(" | ")} | large ÷ small | target |`);
  console.log(`| --- | ${SIZES.map(() => "---:").join(" | ")} | ---: | --- |`);
  for (const [label, key] of rows) {
    const ratio = large[key] / small[key];
    const met = large[key] < 50 && ratio <= 3;
    allMet &&= met;
    console.log(
      `| ${label} | ${SIZES.map((s) => results[s][key].toFixed(2)).join(" | ")} | ${ratio.toFixed(2)}× | ${met ? "met" : "**not met**"} (< 50 ms, ≤ 3×) |`,
    );
  }
  console.log("");
}
await databases.dropAll();
console.log(
  `load at end ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}; targets ${allMet ? "all met" : "NOT all met"}`,
);
