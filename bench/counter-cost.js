// What the PostgreSQL stage counters cost the server per job, apart from
// everything else a processing run measures: one process, the backend seam
// on one database, enqueue in batches of 1,000, then claim and finish in
// batches of 512 until the queue is empty, counters on and off in
// alternating runs (bench/counters-off.js). Server CPU is read from
// /proc/<pid>/stat of every PostgreSQL backend serving the bench database
// (the server must run on this machine), so the figure does not depend on
// how busy the client is.
//
//   node bench/counter-cost.js            (BENCH_PG_URL, BENCH_JOBS=20000, BENCH_REPS=4)
import { newJobId, RetryPolicy } from "@later/runtime";
import { storedRetryPolicy } from "@later/runtime/internal";
import { turnCountersOff } from "./counters-off.js";
import { BenchDatabases, queryOnce } from "./pg-databases.js";
import { wallNow } from "./lib.js";
import { postgresServerCpuMs } from "./statement-meter.js";

const ADMIN = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const REPS = Number(process.env.BENCH_REPS ?? 4);
/** CPU seconds used so far by the server processes connected to `database`. */
async function serverCpu(database) {
  const { rows } = await queryOnce(ADMIN, "SELECT pid FROM pg_stat_activity WHERE datname = $1", [database]);
  return (await postgresServerCpuMs(rows.map((r) => r.pid))) / 1000;
}

async function run(databases, countersOff) {
  const countersOn = countersOff ? await turnCountersOff({ pgUrl: ADMIN }) : () => {};
  const { postgres } = await import("@later/runtime/postgres");
  const db = await databases.create(countersOff ? "off" : "on");
  const backend = postgres({ connectionString: db.url, namespace: "bench", listen: false, maxConnections: 1 });
  try {
    await backend.open();
    await backend.migrations.up();
    const policy = storedRetryPolicy(RetryPolicy.default());
    const now = Date.now();
    const cpu0 = await serverCpu(db.name);
    const t0 = wallNow();
    for (let i = 0; i < JOBS; i += 1000) {
      const jobs = Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({
        id: newJobId(now + i + k),
        jobType: "noop",
        payload: "{}",
        runAt: now,
        retryPolicy: policy,
      }));
      await backend.jobs.insertMany({ jobs, now });
    }
    const cpu1 = await serverCpu(db.name);
    const t1 = wallNow();
    for (;;) {
      const at = Date.now();
      const { jobs } = await backend.jobs.claimReady({ owner: "bench", limit: 512, now: at, leaseExpiresAt: at + 60_000, jobTypes: ["noop"] });
      if (jobs.length === 0) break;
      await backend.jobs.finishMany({
        finishes: jobs.map((j) => ({ id: j.id, attempt: j.attempt, outcome: { kind: "success" } })),
        now: at,
        retentionMs: 86_400_000,
      });
    }
    const cpu2 = await serverCpu(db.name);
    const t2 = wallNow();
    const us = (s) => (s * 1e6) / JOBS;
    return { insertCpu: us(cpu1 - cpu0), processCpu: us(cpu2 - cpu1), insertWall: ((t1 - t0) * 1000) / JOBS, processWall: ((t2 - t1) * 1000) / JOBS };
  } finally {
    await backend.close();
    await databases.drop(db.name);
    countersOn();
  }
}

const databases = new BenchDatabases(ADMIN);
const results = { on: [], off: [] };
try {
  for (let r = 0; r < REPS; r++) {
    for (const off of r % 2 ? [true, false] : [false, true]) results[off ? "off" : "on"].push(await run(databases, off));
  }
} finally {
  await databases.dropAll();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) => `${median(xs).toFixed(1)} (${xs.map((x) => x.toFixed(1)).join(", ")})`;
console.log(`| µs per job, ${JOBS} jobs, ${REPS} runs each (median, then runs) | counters on | counters off |`);
console.log("| --- | ---: | ---: |");
for (const [key, label] of [
  ["insertCpu", "enqueue, server CPU"],
  ["processCpu", "claim + finish, server CPU"],
  ["insertWall", "enqueue, wall"],
  ["processWall", "claim + finish, wall"],
]) {
  console.log(`| ${label} | ${fmt(results.on.map((x) => x[key]))} | ${fmt(results.off.map((x) => x[key]))} |`);
}
