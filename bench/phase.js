// One phase of the SQLite benchmark, for one system, in a process of its own
// (started by bench/sqlite.js). It reports one JSON result over IPC and exits.
// A fresh process per phase keeps JIT state, heap and peak RSS separate.
//
// argv[2]: JSON { system: "later" | "plainjob", phase, file, ... } (see bench/sqlite.js)
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { storedStageCounts, turnCountersOff } from "./counters-off.js";
import { JOB_TYPE, NAMESPACE, benchPublisher, gate, peakRssMb, percentile, quietLogger, sleep, wallNow, reportPhase } from "./lib.js";

const cfg = JSON.parse(process.argv[2]);
const errors = [];

// ---------------------------------------------------------------- later ----

async function later() {
  const [runtime, { sqlite }] = await Promise.all([import("@later/runtime"), import("@later/runtime/sqlite")]);
  return { ...runtime, sqlite };
}

/** An enqueue-only publisher: no server, so nothing in this process claims jobs. */
async function laterPublisherOnly(file) {
  const { sqlite, JobPublisher, RetryPolicy, systemClock } = await later();
  const backend = sqlite({ file, namespace: NAMESPACE });
  await backend.open();
  await backend.migrations.up();
  // cfg.countersOff: the same build with the stage counters turned off (bench/counters-off.js).
  if (cfg.countersOff) await turnCountersOff({ file });
  const publisher = benchPublisher({ JobPublisher, RetryPolicy, systemClock }, backend);
  return { publisher, close: () => backend.close(), info: "standalone JobPublisher, no server" };
}

/** A running server whose only worker is parked on a gate: only the pool's small claim buffer gets claimed. */
async function laterBlockedServer(file) {
  const { BackgroundJobServer, sqlite } = await later();
  const g = gate();
  let started = 0;
  const server = await BackgroundJobServer.start({
    context: {},
    backend: sqlite({ file, namespace: NAMESPACE }),
    autoMigrate: true,
    workerCount: 1,
    handlers: {
      [JOB_TYPE]: {
        handle: async () => {
          started++;
          await g.promise;
        },
      },
    },
    onEvent: (e) => e.type === "error" && errors.push(`${e.where}: ${e.error}`),
  });
  let claimed = "?";
  return {
    publisher: server.publisher,
    close: async () => {
      claimed = (await server.backend.inspect.stageCounts()).counts.running;
      const stopping = server.shutdown({ deadlineMs: 5000 });
      g.open();
      await stopping;
    },
    info: () => `server running, 1 worker parked: ${started} handler call(s) started, ${claimed} job(s) claimed (running) at the end of enqueueing`,
  };
}

async function laterEnqueuer(kind) {
  const e = kind === "server" ? await laterBlockedServer(cfg.file) : await laterPublisherOnly(cfg.file);
  return {
    bulk: (payloads) => e.publisher.enqueueMany(JOB_TYPE, payloads),
    single: (payload) => e.publisher.enqueue(JOB_TYPE, payload),
    close: e.close,
    info: e.info,
  };
}

async function laterProcess() {
  const { BackgroundJobServer, sqlite } = await later();
  if (cfg.countersOff) await turnCountersOff({ file: cfg.file });
  const n = cfg.n;
  const done = gate();
  let succeeded = 0;
  let handled = 0;
  let lastHandlerAt = 0;
  const t0 = wallNow();
  const server = await BackgroundJobServer.start({
    context: {},
    backend: sqlite({ file: cfg.file, namespace: NAMESPACE }),
    autoMigrate: true,
    workerCount: cfg.concurrency,
    // cfg.metricsOff: the same build with the Prometheus metrics turned off (bench/metrics.js).
    ...(cfg.metricsOff ? { metrics: false } : {}),
    handlers: {
      [JOB_TYPE]: {
        handle: async () => {
          handled++;
          lastHandlerAt = wallNow();
        },
      },
    },
    onEvent: (e) => {
      if (e.type === "job" && e.stage === "success" && ++succeeded === n) done.open();
      else if (e.type === "error") errors.push(`${e.where}: ${e.error}`);
    },
  });
  const timedOut = await Promise.race([done.promise.then(() => false), sleep(cfg.deadlineMs).then(() => true)]);
  const t1 = wallNow();
  const counts = cfg.countersOff ? await storedStageCounts({ file: cfg.file }, NAMESPACE) : (await server.backend.inspect.stageCounts()).counts;
  await server.shutdown({ deadlineMs: 5000 });
  return {
    elapsedMs: t1 - t0,
    jobsPerSec: succeeded / ((t1 - t0) / 1000),
    lastHandlerMs: lastHandlerAt - t0,
    handled,
    succeeded,
    timedOut,
    stored: counts,
    peakRssMb: peakRssMb(),
  };
}

async function laterLatencyWorkers(onStart) {
  const { BackgroundJobServer, sqlite } = await later();
  const server = await BackgroundJobServer.start({
    context: {},
    backend: sqlite({ file: cfg.file, namespace: NAMESPACE }),
    autoMigrate: true,
    workerCount: cfg.concurrency,
    // pollIntervalMs left at its default (1000): wake-ups come from the WAL watcher.
    handlers: { [JOB_TYPE]: { handle: async (_ctx, payload) => onStart(payload.t) } },
    onEvent: (e) => e.type === "error" && errors.push(`${e.where}: ${e.error}`),
  });
  return { stop: () => server.shutdown({ deadlineMs: 5000 }), settings: "pollIntervalMs default (1000)" };
}

// ------------------------------------------------------------- plainjob ----

async function plainjob() {
  const { default: Database } = await import("better-sqlite3");
  const pj = await import("plainjob");
  return { Database, ...pj };
}

async function plainjobQueue(file) {
  const { Database, better, defineQueue } = await plainjob();
  return defineQueue({ connection: better(new Database(file)), logger: quietLogger });
}

async function plainjobEnqueuer() {
  const queue = await plainjobQueue(cfg.file);
  return {
    bulk: async (payloads) => queue.addMany(JOB_TYPE, payloads),
    single: async (payload) => queue.add(JOB_TYPE, payload),
    close: async () => queue.close(),
    info: "queue only, no worker (add/addMany are synchronous)",
  };
}

/** `concurrency` plainjob workers (each runs one job at a time) on one queue, in this process. */
async function plainjobWorkers(queue, processor, extra = {}) {
  const { defineWorker } = await plainjob();
  const workers = [];
  for (let i = 0; i < cfg.concurrency; i++) {
    workers.push(
      defineWorker(JOB_TYPE, processor, {
        queue,
        logger: quietLogger,
        ...(cfg.pollMs === undefined ? {} : { pollIntervall: cfg.pollMs }),
        ...extra,
      }),
    );
  }
  const running = workers.map((w) => w.start().catch((e) => errors.push(`worker: ${e?.message ?? e}`)));
  return async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.race([Promise.all(running), sleep(5000)]);
  };
}

async function plainjobProcess() {
  const { JobStatus } = await plainjob();
  const n = cfg.n;
  const done = gate();
  let completed = 0;
  let handled = 0;
  let lastHandlerAt = 0;
  const t0 = wallNow();
  const queue = await plainjobQueue(cfg.file);
  const stop = await plainjobWorkers(
    queue,
    async () => {
      handled++;
      lastHandlerAt = wallNow();
    },
    {
      onCompleted: () => {
        if (++completed === n) done.open();
      },
    },
  );
  const timedOut = await Promise.race([done.promise.then(() => false), sleep(cfg.deadlineMs).then(() => true)]);
  const t1 = wallNow();
  await stop();
  const stored = { done: queue.countJobs({ status: JobStatus.Done }), pending: queue.countJobs({ status: JobStatus.Pending }) };
  queue.close();
  return {
    elapsedMs: t1 - t0,
    jobsPerSec: completed / ((t1 - t0) / 1000),
    lastHandlerMs: lastHandlerAt - t0,
    handled,
    succeeded: completed,
    timedOut,
    stored,
    peakRssMb: peakRssMb(),
  };
}

async function plainjobLatencyWorkers(onStart) {
  const queue = await plainjobQueue(cfg.file);
  const stop = await plainjobWorkers(queue, async (job) => onStart(JSON.parse(job.data).t));
  return {
    stop: async () => {
      await stop();
      queue.close();
    },
    settings: cfg.pollMs === undefined ? "pollIntervall default (1000)" : `pollIntervall ${cfg.pollMs}`,
  };
}

// --------------------------------------------------------------- phases ----

async function enqueuer() {
  if (cfg.system === "later") return laterEnqueuer(cfg.variant);
  return plainjobEnqueuer();
}

/** Closes the enqueuer and reports the rate since `t0`. */
async function enqueueResult(e, t0) {
  const ms = wallNow() - t0;
  await e.close();
  const info = typeof e.info === "function" ? e.info() : e.info;
  return { elapsedMs: ms, jobsPerSec: cfg.n / (ms / 1000), info };
}

async function bulkPhase() {
  const e = await enqueuer();
  const payloads = Array.from({ length: cfg.n }, (_, i) => ({ i }));
  const t0 = wallNow();
  for (let i = 0; i < cfg.n; i += cfg.batch) await e.bulk(payloads.slice(i, i + cfg.batch));
  return enqueueResult(e, t0);
}

async function singlePhase() {
  const e = await enqueuer();
  let next = 0;
  const loop = async () => {
    while (next < cfg.n) {
      const i = next++;
      await e.single({ i });
    }
  };
  const t0 = wallNow();
  await Promise.all(Array.from({ length: cfg.concurrency }, loop));
  return enqueueResult(e, t0);
}

async function prefillPhase() {
  const e = await enqueuer();
  const payloads = Array.from({ length: cfg.n }, (_, i) => ({ i }));
  for (let i = 0; i < cfg.n; i += 1000) await e.bulk(payloads.slice(i, i + 1000));
  await e.close();
  return { prefilled: cfg.n };
}

async function processPhase() {
  return cfg.system === "later" ? laterProcess() : plainjobProcess();
}

async function latencyPhase() {
  // The schema must exist before the producer's first enqueue: create it here.
  if (cfg.system === "later") {
    const { sqlite } = await later();
    const b = sqlite({ file: cfg.file, namespace: NAMESPACE });
    await b.open();
    await b.migrations.up();
    await b.close();
  } else {
    (await plainjobQueue(cfg.file)).close();
  }
  const latencies = [];
  const allIn = gate();
  const onStart = (t) => {
    latencies.push(wallNow() - t);
    if (latencies.length === cfg.count) allIn.open();
  };
  const workers = cfg.system === "later" ? await laterLatencyWorkers(onStart) : await plainjobLatencyWorkers(onStart);

  const producer = fork(
    fileURLToPath(new URL("./producer.js", import.meta.url)),
    [
      JSON.stringify({
        system: cfg.system,
        file: cfg.file,
        rate: cfg.rate,
        count: cfg.count,
        hardDeadlineMs: cfg.deadlineMs + 10_000,
      }),
    ],
    { stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  let producerStats = null;
  const producerDone = gate();
  const producerReady = gate();
  producer.on("message", (m) => {
    if (m?.type === "ready") producerReady.open();
    if (m?.type === "done") {
      producerStats = m;
      producerDone.open();
    }
  });
  producer.on("exit", (code) => {
    if (code) errors.push(`producer exited with ${code}`);
    producerReady.open();
    producerDone.open();
  });
  await producerReady.promise;

  // RSS sampling as a cross-check of getrusage's peak.
  let sampledPeak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    sampledPeak = Math.max(sampledPeak, process.memoryUsage().rss);
  }, 100);
  const cpu0 = process.cpuUsage();
  const t0 = wallNow();
  producer.send({ type: "go" });

  const deadline = sleep(cfg.deadlineMs).then(() => "deadline");
  await Promise.race([producerDone.promise, deadline]);
  // After the producer is done, give the workers up to 5 s to pick up the rest.
  const outcome = await Promise.race([allIn.promise.then(() => "all"), deadline, sleep(5000).then(() => "late")]);
  const wallMs = wallNow() - t0;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(sampler);
  await workers.stop();
  if (producer.exitCode === null) producer.kill("SIGKILL");

  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    settings: workers.settings,
    outcome,
    received: latencies.length,
    sent: producerStats?.sent ?? null,
    offeredRate: producerStats?.achievedRate ?? null,
    producer: producerStats,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1],
    mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
    cpuPercent: ((cpu.user + cpu.system) / 1000 / wallMs) * 100,
    peakRssMb: peakRssMb(),
    sampledPeakRssMb: sampledPeak / 1024 / 1024,
  };
}

const phases = { bulk: bulkPhase, single: singlePhase, prefill: prefillPhase, process: processPhase, latency: latencyPhase };

await reportPhase(phases[cfg.phase], errors);
