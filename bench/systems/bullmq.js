// BullMQ 5/6 on Redis as a bench system. target.redis: { host, port, db, prefix }.
import { Queue, Worker } from "bullmq";
import { JOB_TYPE } from "../lib.js";

export const completionIsStored = true; // "completed" is emitted after moveToCompleted

const connection = (target) => ({ host: target.redis.host, port: target.redis.port, db: target.redis.db, maxRetriesPerRequest: null });
const queue = (target) => new Queue(JOB_TYPE, { connection: connection(target), prefix: target.redis.prefix });

/** Removes everything of this queue under the bench's own prefix, in the bench's own Redis database index. */
export async function prepare(target) {
  const q = queue(target);
  await q.obliterate({ force: true });
  await q.close();
}

export async function openEnqueuer(target) {
  const q = queue(target);
  await q.waitUntilReady();
  return {
    bulk: (payloads) => q.addBulk(payloads.map((data) => ({ name: JOB_TYPE, data }))),
    single: (payload) => q.add(JOB_TYPE, payload),
    close: () => q.close(),
  };
}

export async function startWorkers(target, { concurrency, onJob, onDone, onError }) {
  const worker = new Worker(JOB_TYPE, async (job) => onJob(job.data), { connection: connection(target), prefix: target.redis.prefix, concurrency });
  worker.on("completed", () => onDone());
  worker.on("failed", (_job, e) => onError(`failed: ${e?.message ?? e}`));
  worker.on("error", (e) => onError(String(e?.message ?? e)));
  await worker.waitUntilReady();
  return {
    settings: `Worker concurrency ${concurrency}, defaults otherwise (completed jobs kept)`,
    stored: async () => {
      const q = queue(target);
      try {
        return await q.getJobCounts("completed", "waiting", "active", "failed");
      } finally {
        await q.close();
      }
    },
    stop: () => worker.close(),
  };
}
