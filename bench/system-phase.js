// One phase of bench/postgres.js, for one system (bench/systems/<name>.js),
// in a process of its own, so heap, JIT state and peak RSS are the phase's own.
//
// argv[2]: JSON { phase, target: { system, variant?, pgUrl?, file?, redis? }, ... }
// Phases bulk, single, prefill and latency report one { ok, result } message
// over IPC and exit. Phase "work" is driven by the orchestrator (several
// worker processes share one count):
//   -> {type:"ready"}          <- {type:"go"}     (start the workers)
//   -> {type:"progress", done, at}                (coalesced; `at` = wall time of the last completion)
//   <- {type:"settle"}         -> {type:"settled", at}  (only for systems whose completion signal precedes the write)
//   <- {type:"stop"}           -> { ok, result }  (then exits)
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { gate, latencySummary, loadSystem, peakRssMb, sleep, wallNow, reportPhase } from "./lib.js";
import { jobPayload } from "./record-bytes.js";

const cfg = JSON.parse(process.argv[2]);
const errors = [];
const onError = (text) => errors.push(text);
const system = await loadSystem(cfg.target.system);
// What a system loads lazily (later: its database driver, when the first backend is made) loads here,
// before any timed phase, as the other systems' libraries load with their modules.
await system.preload?.(cfg.target);

async function enqueueTimed(body) {
  await system.prepare(cfg.target);
  const e = await system.openEnqueuer(cfg.target);
  const t0 = wallNow();
  await body(e);
  const elapsedMs = wallNow() - t0;
  await e.close();
  return { elapsedMs, jobsPerSec: cfg.n / (elapsedMs / 1000) };
}

// `cfg.payloadBytes` (bench/log.js): payloads whose JSON is that long; otherwise `{ i }`.
const payloads = () => Array.from({ length: cfg.n }, (_, i) => (cfg.payloadBytes ? jobPayload(cfg.payloadBytes, i) : { i }));

async function bulkAll(e) {
  const all = payloads();
  for (let i = 0; i < all.length; i += cfg.batch) await e.bulk(all.slice(i, i + cfg.batch));
}

async function singlePhase() {
  return enqueueTimed(async (e) => {
    let next = 0;
    const loop = async () => {
      while (next < cfg.n) await e.single({ i: next++ });
    };
    await Promise.all(Array.from({ length: cfg.inFlight }, loop));
  });
}

function onMessage(type) {
  return new Promise((resolve) => process.on("message", (m) => m?.type === type && resolve(m)));
}

async function workPhase() {
  const stopRequested = onMessage("stop");
  process.send({ type: "ready" });
  await onMessage("go");
  let done = 0;
  let handled = 0;
  let lastAt = 0;
  let _flushTimer = null;
  const flush = () => {
    _flushTimer = null;
    process.send({ type: "progress", done, at: lastAt });
  };
  const workers = await system.startWorkers(cfg.target, {
    concurrency: cfg.concurrency,
    onJob: () => {
      handled++;
    },
    onDone: () => {
      done++;
      lastAt = wallNow();
      _flushTimer ??= setTimeout(flush, 5);
    },
    onError,
  });
  process.on("message", async (m) => {
    if (m?.type !== "settle") return;
    const until = wallNow() + 15_000;
    while (!(await system.storedAllDone(cfg.target, cfg.n)) && wallNow() < until) await sleep(2);
    process.send({ type: "settled", at: wallNow() });
  });
  await stopRequested;
  const stored = cfg.reportStored ? await workers.stored() : undefined;
  await workers.stop();
  return { handled, done, stored, settings: workers.settings, peakRssMb: peakRssMb() };
}

async function latencyPhase() {
  await system.prepare(cfg.target);
  const latencies = [];
  const allIn = gate();
  const workers = await system.startWorkers(cfg.target, {
    concurrency: cfg.concurrency,
    onJob: (payload) => {
      latencies.push(wallNow() - payload.t);
      if (latencies.length === cfg.count) allIn.open();
    },
    onDone: () => {},
    onError,
  });
  const producer = fork(
    fileURLToPath(new URL("./system-producer.js", import.meta.url)),
    [
      JSON.stringify({
        target: cfg.target,
        rate: cfg.rate,
        count: cfg.count,
        hardDeadlineMs: cfg.deadlineMs + 10_000,
      }),
    ],
    { stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  let producerStats = null;
  const producerReady = gate();
  const producerDone = gate();
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

  const cpu0 = process.cpuUsage();
  const t0 = wallNow();
  producer.send({ type: "go" });
  const deadline = sleep(cfg.deadlineMs).then(() => "deadline");
  await Promise.race([producerDone.promise, deadline]);
  // After the producer is done, give the workers up to 5 s to pick up the rest.
  const outcome = await Promise.race([allIn.promise.then(() => "all"), deadline, sleep(5000).then(() => "late")]);
  const wallMs = wallNow() - t0;
  const cpu = process.cpuUsage(cpu0);
  await workers.stop();
  if (producer.exitCode === null) producer.kill("SIGKILL");
  return {
    settings: workers.settings,
    outcome,
    received: latencies.length,
    sent: producerStats?.sent ?? null,
    offeredRate: producerStats?.achievedRate ?? null,
    producer: producerStats,
    ...latencySummary(latencies),
    // Every sample (µs resolution), so the orchestrator can pool the runs: a p99 of
    // all runs together is the 1 % tail of many more samples than one run's.
    samples: latencies.map((x) => Math.round(x * 1000) / 1000),
    cpuPercent: ((cpu.user + cpu.system) / 1000 / wallMs) * 100,
    peakRssMb: peakRssMb(),
  };
}

const phases = {
  bulk: () => enqueueTimed(bulkAll),
  single: singlePhase,
  prefill: async () => {
    await system.prepare(cfg.target);
    const e = await system.openEnqueuer(cfg.target);
    await bulkAll(e);
    await e.close();
    return { prefilled: cfg.n };
  },
  work: workPhase,
  latency: latencyPhase,
};

await reportPhase(phases[cfg.phase], errors);
