// A child process of bench/overload.js, in one of two roles (argv[2]: JSON { role, url, ... }):
//
// * "worker": one later server (`workerCount` workers) on PostgreSQL whose handler for the
//   bench's job type waits `handlerMs` on a timer. Each job's claim latency (its handler's
//   start less the wall time its producer called enqueueMany) goes into a histogram of the
//   second (since the orchestrator's t0) it started in; every closed second is sent to the
//   orchestrator as {type:"second", sec, hist, cpuMs} (hist: sparse bucket -> count, see
//   `bucketOf` in bench/overload-series.js; cpuMs: this process's CPU in that second). Each
//   payload's sequence number is marked, so a handler run twice for one job is counted
//   (`duplicates`).
// * "producer": enqueues `batch` jobs per enqueueMany (a publisher with no server, as
//   bench/producer.js) at an offered rate the orchestrator sets and changes, on an absolute
//   schedule: the jobs due by time t are the integral of the rate so far; a batch goes out once
//   a whole batch is due, up to `maxInFlight` batches at once (beyond that it falls behind,
//   and catches up as soon as a slot frees). Sends {type:"progress", sent, committed, failed}
//   every 200 ms. Each payload is { k, t }: a sequence number and the wall time of the call.
//
// IPC: -> {type:"ready"}; <- {type:"go", t0}; producer <- {type:"rate", rate} (jobs/s, any
// time); <- {type:"stop"}; -> the final { ok, result } message (bench/lib.js reportPhase), then
// exits. Both exit by themselves when the orchestrator goes away.
import { benchPublisher, JOB_TYPE, NAMESPACE, reportPhase, sleep, wallNow } from "./lib.js";
import { bucketOf } from "./overload-series.js";

const cfg = JSON.parse(process.argv[2]);
const errors = [];
process.on("disconnect", () => process.exit(0));

function message(type) {
  return new Promise((resolve) => process.on("message", (m) => m?.type === type && resolve(m)));
}

function backend(postgres) {
  return postgres({ connectionString: cfg.url, namespace: NAMESPACE });
}

async function worker() {
  const { BackgroundJobServer } = await import("@later/runtime");
  const { postgres } = await import("@later/runtime/postgres");
  let seen = new Uint8Array(1 << 20);
  let started = 0;
  let duplicates = 0;
  let t0 = null;
  const seconds = new Map(); // sec -> Map(bucket -> count)
  const otherStages = {};
  const handle = async (_ctx, payload) => {
    const now = wallNow();
    started++;
    const k = payload.k;
    if (k >= seen.length) {
      const grown = new Uint8Array(Math.max(seen.length * 2, k + 1));
      grown.set(seen);
      seen = grown;
    }
    if (seen[k]) duplicates++;
    seen[k] = 1;
    if (t0 !== null) {
      const sec = Math.floor((now - t0) / 1000);
      let hist = seconds.get(sec);
      if (!hist) seconds.set(sec, (hist = new Map()));
      const b = bucketOf(now - payload.t);
      hist.set(b, (hist.get(b) ?? 0) + 1);
    }
    await sleep(cfg.handlerMs);
  };
  const server = await BackgroundJobServer.start({
    context: {},
    backend: backend(postgres),
    workerCount: cfg.workers,
    handlers: { [JOB_TYPE]: { handle } },
    onEvent: (e) => {
      if (e.type === "error") errors.push(`${e.where}: ${e.error}`);
      else if (e.type === "job" && e.stage !== "running" && e.stage !== "success") otherStages[e.stage] = (otherStages[e.stage] ?? 0) + 1;
      else if (e.type === "job-skipped" || e.type === "job-released") otherStages[e.type] = (otherStages[e.type] ?? 0) + 1;
    },
  });
  const stop = message("stop");
  process.send({ type: "ready" });
  t0 = (await message("go")).t0;
  let cpu = process.cpuUsage();
  const flush = (all) => {
    const current = Math.floor((wallNow() - t0) / 1000);
    const used = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    for (const [sec, hist] of [...seconds].sort((a, b) => a[0] - b[0])) {
      if (!all && sec >= current) continue;
      seconds.delete(sec);
      process.send({ type: "second", sec, hist: Object.fromEntries(hist), cpuMs: (used.user + used.system) / 1000 });
    }
  };
  const timer = setInterval(() => flush(false), 1000);
  await stop;
  clearInterval(timer);
  flush(true);
  await server.shutdown({ deadlineMs: 5_000 });
  return { started, duplicates, otherStages };
}

async function producer() {
  const { JobPublisher, RetryPolicy, systemClock } = await import("@later/runtime");
  const { postgres } = await import("@later/runtime/postgres");
  const store = backend(postgres);
  await store.open();
  const publisher = benchPublisher({ JobPublisher, RetryPolicy, systemClock }, store);
  let rate = 0;
  let base = { at: 0, due: 0 }; // jobs due at time t: base.due + rate × (t − base.at)
  const dueAt = (t) => base.due + (rate * (t - base.at)) / 1000;
  let sent = 0;
  let committed = 0;
  let failed = 0;
  let stopping = false;
  const inFlight = new Set();
  process.on("message", (m) => {
    if (m?.type !== "rate") return;
    const now = wallNow();
    base = { at: now, due: dueAt(now) }; // jobs due and not yet sent at the old rate stay due
    rate = m.rate;
  });
  const stop = message("stop").then(() => (stopping = true));
  process.send({ type: "ready" });
  await message("go");
  base = { at: wallNow(), due: 0 };
  const progress = setInterval(() => process.send({ type: "progress", sent, committed, failed }), 200);
  let maxBehind = 0;
  while (!stopping) {
    const now = wallNow();
    const due = dueAt(now);
    maxBehind = Math.max(maxBehind, due - sent - cfg.batch);
    while (sent + cfg.batch <= dueAt(wallNow()) && inFlight.size < cfg.maxInFlight) {
      const t = wallNow();
      const payloads = Array.from({ length: cfg.batch }, (_, i) => ({ k: sent + i, t }));
      sent += cfg.batch;
      const p = publisher
        .enqueueMany(JOB_TYPE, payloads)
        .then(
          () => (committed += payloads.length),
          (error) => {
            failed += payloads.length;
            errors.push(`enqueueMany: ${error?.message ?? error}`);
          },
        )
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    // Until the next batch is due (at most 50 ms, so a new rate or "stop" is seen soon), or a slot frees.
    const wait = rate > 0 ? Math.min(50, Math.max(1, ((sent + cfg.batch - dueAt(wallNow())) * 1000) / rate)) : 50;
    await Promise.race([sleep(wait), stop, ...(inFlight.size >= cfg.maxInFlight ? inFlight : [])]);
  }
  await Promise.all(inFlight);
  clearInterval(progress);
  await store.close();
  return { sent, committed, failed, maxBehindJobs: Math.round(maxBehind) };
}

await reportPhase(cfg.role === "worker" ? worker : producer, errors);
