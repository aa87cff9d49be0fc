// One phase of bench/limits.js (X9, per job type limits), in a process of its own: prefills
// `n` jobs of one type straight into the store, then starts a server of `workers` workers
// whose handler for the type has `concurrency: limit` (none when `limit` is null) and takes
// `handlerMs` (0: a no-op), and times it from the server's start to the n-th success. Every
// `sampleMs` it samples the running count twice: the database's (`running` of the stage
// counters, every server's) and this process's handlers in flight. Reports one JSON result
// over IPC and exits.
//
// argv[2]: JSON { backend: "postgres" | "sqlite", url | file, n, workers, limit, handlerMs, sampleMs, deadlineMs }
import { NAMESPACE, reportPhase, sleep, wallNow } from "./lib.js";

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
    }));
    await backend.jobs.insertMany({ jobs, now });
  }
  await backend.close();
}

async function phase() {
  await prefill();
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
  const t0 = wallNow();
  const server = await BackgroundJobServer.start({
    context: {},
    backend: await openBackend(),
    workerCount: cfg.workers,
    handlers: { [JOB_TYPE]: cfg.limit === null ? { handle } : { concurrency: cfg.limit, handle } },
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
  sampling = false;
  await sampler;
  await server.shutdown({ deadlineMs: 5_000 });
  return {
    elapsedMs: t1 - t0,
    jobsPerSec: succeeded / ((t1 - t0) / 1000),
    succeeded,
    timedOut,
    mostInFlight,
    samples: samples.length,
    mostRunningSampled: samples.reduce((m, s) => Math.max(m, s.db), 0),
  };
}

await reportPhase(phase, errors);
