// pg-boss 10 as a bench system.
import PgBoss from "pg-boss";
import { JOB_TYPE } from "../lib.js";
import { queryOnce } from "../pg-databases.js";

// pg-boss calls complete() after the handler resolves without awaiting it,
// so the orchestrator waits until every job is stored as completed.
export const completionIsStored = false;

/** Jobs per fetch. pg-boss 10 sleeps the polling interval after every fetch, so throughput needs batches. */
const BATCH_SIZE = Number.parseInt(process.env.BENCH_PGBOSS_BATCH ?? "100", 10);
/** The smallest interval pg-boss 10 accepts (its default is 2). */
const POLL_SECONDS = 0.5;

async function boss(target, extra = {}) {
  const b = new PgBoss({ connectionString: target.pgUrl, ...extra });
  b.on("error", (e) => console.error(`[pg-boss] ${e?.message ?? e}`));
  await b.start();
  return b;
}

const stop = (b) => b.stop({ graceful: false, wait: true, timeout: 1000 });

export async function prepare(target) {
  const b = await boss(target, { supervise: false, schedule: false });
  await b.createQueue(JOB_TYPE);
  await stop(b);
}

export async function openEnqueuer(target) {
  const b = await boss(target, { supervise: false, schedule: false });
  return {
    bulk: (payloads) => b.insert(payloads.map((data) => ({ name: JOB_TYPE, data }))),
    single: (payload) => b.send(JOB_TYPE, payload),
    close: () => stop(b),
  };
}

/** `concurrency` work() subscriptions, each fetching up to BATCH_SIZE jobs per poll. */
export async function startWorkers(target, { concurrency, onJob, onDone, onError }) {
  const b = await boss(target);
  b.on("error", (e) => onError(String(e?.message ?? e)));
  const options = { batchSize: BATCH_SIZE, pollingIntervalSeconds: POLL_SECONDS };
  for (let i = 0; i < concurrency; i++) {
    await b.work(JOB_TYPE, options, async (jobs) => {
      for (const job of jobs) onJob(job.data);
      // onDone after the handler: the completion write happens after this returns.
      queueMicrotask(() => {
        for (let k = 0; k < jobs.length; k++) onDone();
      });
    });
  }
  return {
    settings: `${concurrency} × work({ batchSize: ${BATCH_SIZE}, pollingIntervalSeconds: ${POLL_SECONDS} })`,
    stored: () => stored(target),
    stop: () => stop(b),
  };
}

export async function stored(target) {
  const { rows } = await queryOnce(target.pgUrl, "select state, count(*)::int as n from pgboss.job where name = $1 group by state", [JOB_TYPE]);
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

export async function storedAllDone(target, n) {
  return ((await stored(target)).completed ?? 0) >= n;
}
