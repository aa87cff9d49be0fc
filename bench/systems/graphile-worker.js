// graphile-worker 0.17 as a bench system. target.variant: "defaults" or
// "fast" (localQueue 500, completeJobBatchDelay 0, failJobBatchDelay 0).
import { EventEmitter } from "node:events";
import { Logger, makeWorkerUtils, run, runMigrations } from "graphile-worker";
import { JOB_TYPE } from "../lib.js";
import { queryOnce } from "../pg-databases.js";

// job:complete is emitted when completeJob() is *called*; with batching the
// DELETE lands later, so the orchestrator waits for the table to drain.
export const completionIsStored = false;

const FAST_PATH = { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 };

/** Errors and warnings only: at info level graphile-worker logs a line per completed job. */
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") console.error(`[graphile-worker] ${message}`);
});

export async function prepare(target) {
  await runMigrations({ connectionString: target.pgUrl, logger });
}

export async function openEnqueuer(target) {
  const utils = await makeWorkerUtils({ connectionString: target.pgUrl, logger });
  return {
    bulk: (payloads) => utils.addJobs(payloads.map((payload) => ({ identifier: JOB_TYPE, payload }))),
    single: (payload) => utils.addJob(JOB_TYPE, payload),
    close: () => utils.release(),
  };
}

export async function startWorkers(target, { concurrency, onJob, onDone, onError }) {
  const events = new EventEmitter();
  events.on("job:complete", ({ error }) => (error ? onError(`job failed: ${error}`) : onDone()));
  events.on("pool:fatalError", ({ error }) => onError(`pool:fatalError: ${error}`));
  const fast = target.variant === "fast";
  const runner = await run({
    connectionString: target.pgUrl,
    concurrency,
    noHandleSignals: true,
    logger,
    events,
    taskList: { [JOB_TYPE]: async (payload) => onJob(payload) },
    ...(fast ? { preset: { worker: FAST_PATH } } : {}),
  });
  return {
    settings: `concurrency ${concurrency}, pollInterval default (2000, LISTEN wakes)${fast ? ", localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0" : ""}`,
    stored: () => stored(target),
    stop: () => runner.stop(),
  };
}

/** Completed jobs are deleted, so what is left in the table is not done yet. */
export async function stored(target) {
  const { rows } = await queryOnce(target.pgUrl, "select count(*)::int as n from graphile_worker._private_jobs");
  return { remaining: rows[0].n };
}

export async function storedAllDone(target) {
  return (await stored(target)).remaining === 0;
}
