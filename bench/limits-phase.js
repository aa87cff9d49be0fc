// One phase of bench/limits.js (X9, per job type and per group limits), in a process of its own:
// prefills `n` jobs of one type straight into the store (spread round-robin over `groups`
// groups when `groups` > 0), then starts a server of `workers` workers whose handler for the
// type has `concurrency: limit` (none when `limit` is null) and `groupConcurrency: groupLimit`
// (none when null or absent) and takes `handlerMs` (0: a no-op), and times it from the server's
// start to the n-th success. Every `sampleMs` it samples the running count twice: the
// database's (`running` of the stage counters, every server's) and this process's handlers in
// flight. Reports one JSON result over IPC and exits.
//
// `fairness: { small, after }`: the `n` prefilled jobs are one group ("big"); once `after` of
// them have succeeded, `small` jobs of group "small" are enqueued (one enqueueMany) and the
// phase ends when every small job has started (the big backlog is not waited for). Each small
// job's dispatch wait is its handler's start less its enqueue (wall clock, this process);
// reported as p50/p95/p99/max, with how many big jobs started meanwhile.
//
// argv[2]: JSON { backend: "postgres" | "sqlite", url | file, n, workers, limit, groupLimit?, groups?, fairness?,
//                 handlerMs, sampleMs, deadlineMs }
import { latencySummary, NAMESPACE, reportPhase, sleep, wallNow } from "./lib.js";
import { postgresServerCpuMs } from "./statement-meter.js";

const cfg = JSON.parse(process.argv[2]);
const errors = [];
const JOB_TYPE = "limited";

async function openBackend() {
  if (cfg.backend === "postgres") {
    const { postgres } = await import("@later/runtime/postgres");
    return postgres({ connectionString: cfg.url, namespace: NAMESPACE });
  }
  const { sqlite } = await import("@later/runtime/sqlite");
  return sqlite({ file: cfg.file, namespace: NAMESPACE });
}

async function prefill() {
  const { newJobId } = await import("@later/runtime");
  const backend = await openBackend();
  await backend.open();
  await backend.migrations.up();
  const now = Date.now();
  for (let i = 0; i < cfg.n; i += 1000) {
    const jobs = Array.from({ length: Math.min(1000, cfg.n - i) }, (_, k) => ({
      id: newJobId(now),
      jobType: JOB_TYPE,
      payload: JSON.stringify({ i: i + k }),
      runAt: now,
      retryPolicy: null,
      group: cfg.fairness ? "big" : cfg.groups > 0 ? `g${(i + k) % cfg.groups}` : null,
    }));
    await backend.jobs.insertMany({ jobs, now });
  }
  await backend.close();
}

/** The handler options of the type: the limits of `cfg`. */
function limits() {
  const options = {};
  if (cfg.limit !== null) options.concurrency = cfg.limit;
  if (cfg.groupLimit !== null && cfg.groupLimit !== undefined) options.groupConcurrency = cfg.groupLimit;
  return options;
}

async function phase() {
  await prefill();
  return cfg.fairness ? fairnessPhase() : throughputPhase();
}

async function throughputPhase() {
  const { BackgroundJobServer } = await import("@later/runtime");
  let succeeded = 0;
  let inFlight = 0;
  let mostInFlight = 0;
  let resolveDone;
  const done = new Promise((r) => (resolveDone = r));
  const handle =
    cfg.handlerMs > 0
      ? async () => {
          mostInFlight = Math.max(mostInFlight, ++inFlight);
          await sleep(cfg.handlerMs);
          inFlight--;
        }
      : async () => {
          mostInFlight = Math.max(mostInFlight, ++inFlight);
          inFlight--;
        };
  // CPU from the server's start to the n-th success: this process's (on SQLite the database's work too, which
  // runs in it), and on PostgreSQL the local server's processes (from /proc).
  const cpu0 = process.cpuUsage();
  const serverCpu0 = cfg.backend === "postgres" ? await postgresServerCpuMs() : null;
  const t0 = wallNow();
  const server = await BackgroundJobServer.start({
    context: {},
    backend: await openBackend(),
    workerCount: cfg.workers,
    handlers: { [JOB_TYPE]: { ...limits(), handle } },
    onEvent: (e) => {
      if (e.type === "job" && e.stage === "success" && ++succeeded === cfg.n) resolveDone();
      else if (e.type === "error") errors.push(`${e.where}: ${e.error}`);
    },
  });
  const samples = [];
  let sampling = cfg.sampleMs > 0;
  const sampler = (async () => {
    while (sampling) {
      samples.push({ db: (await server.backend.inspect.stageCounts()).counts.running, inFlight });
      await sleep(cfg.sampleMs);
    }
  })();
  const timedOut = await Promise.race([done.then(() => false), sleep(cfg.deadlineMs).then(() => true)]);
  const t1 = wallNow();
  const cpu = process.cpuUsage(cpu0);
  const serverCpuMs = serverCpu0 === null ? null : (await postgresServerCpuMs()) - serverCpu0;
  sampling = false;
  await sampler;
  await server.shutdown({ deadlineMs: 5_000 });
  return {
    elapsedMs: t1 - t0,
    jobsPerSec: succeeded / ((t1 - t0) / 1000),
    succeeded,
    workerCpuUsPerJob: succeeded > 0 ? (cpu.user + cpu.system) / succeeded : null,
    serverCpuUsPerJob: serverCpuMs === null || succeeded === 0 ? null : (serverCpuMs * 1000) / succeeded,
    timedOut,
    mostInFlight,
    samples: samples.length,
    mostRunningSampled: samples.reduce((m, s) => Math.max(m, s.db), 0),
  };
}

async function fairnessPhase() {
  const { BackgroundJobServer } = await import("@later/runtime");
  const { small, after } = cfg.fairness;
  let bigStarted = 0;
  let bigSucceeded = 0;
  let bigStartedAtEnqueue = null;
  const waits = [];
  let resolveWarm;
  const warm = new Promise((r) => (resolveWarm = r));
  let resolveDone;
  const done = new Promise((r) => (resolveDone = r));
  const handle = async (_ctx, payload) => {
    if (payload.enqueuedAt === undefined) {
      bigStarted++;
      if (cfg.handlerMs > 0) await sleep(cfg.handlerMs);
      if (++bigSucceeded === after) resolveWarm();
      return;
    }
    waits.push(wallNow() - payload.enqueuedAt);
    if (waits.length === small) resolveDone();
    if (cfg.handlerMs > 0) await sleep(cfg.handlerMs);
  };
  const server = await BackgroundJobServer.start({
    context: {},
    backend: await openBackend(),
    workerCount: cfg.workers,
    handlers: { [JOB_TYPE]: { ...limits(), handle } },
    onEvent: (e) => {
      if (e.type === "error") errors.push(`${e.where}: ${e.error}`);
    },
  });
  const deadline = sleep(cfg.deadlineMs).then(() => "timeout");
  let timedOut = (await Promise.race([warm.then(() => "warm"), deadline])) === "timeout";
  if (!timedOut) {
    bigStartedAtEnqueue = bigStarted;
    const enqueuedAt = wallNow();
    await server.publisher.enqueueMany(
      JOB_TYPE,
      Array.from({ length: small }, (_, i) => ({ i, enqueuedAt })),
      { group: "small" },
    );
    timedOut = (await Promise.race([done.then(() => "done"), deadline])) === "timeout";
  }
  const bigStartedMeanwhile = bigStartedAtEnqueue === null ? null : bigStarted - bigStartedAtEnqueue;
  await server.shutdown({ deadlineMs: 5_000 });
  return { timedOut, smallStarted: waits.length, bigStartedMeanwhile, wait: waits.length > 0 ? latencySummary(waits) : null };
}

await reportPhase(phase, errors);
