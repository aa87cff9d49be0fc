// The other process of the latency phase: enqueues `count` jobs at `rate`
// jobs/s into an already migrated database, each payload carrying the wall
// time (ms, sub-ms resolution) taken just before its enqueue call.
//
// Protocol (IPC with bench/phase.js): -> {type:"ready"}, <- {type:"go"},
// -> {type:"done", ...stats}, then exits. Exits by itself when its parent
// goes away or after a hard deadline, so it can never outlive the bench.
import { JOB_TYPE, NAMESPACE, benchPublisher, sleep, wallNow } from "./lib.js";

const cfg = JSON.parse(process.argv[2]);
const hardDeadline = setTimeout(() => process.exit(3), cfg.hardDeadlineMs ?? 40_000);
hardDeadline.unref();
process.on("disconnect", () => process.exit(0));

async function openEnqueuer() {
  if (cfg.system === "later") {
    const { JobPublisher, RetryPolicy, systemClock } = await import("@later/runtime");
    const { sqlite } = await import("@later/runtime/sqlite");
    const backend = sqlite({ file: cfg.file, namespace: NAMESPACE });
    await backend.open();
    // A publisher without a server (no workers in this process). Same class
    // and code path as server.publisher; only the local wake hook is a no-op.
    const publisher = benchPublisher({ JobPublisher, RetryPolicy, systemClock }, backend);
    return { enqueue: (payload) => publisher.enqueue(JOB_TYPE, payload), close: () => backend.close() };
  }
  const { default: Database } = await import("better-sqlite3");
  const { better, defineQueue } = await import("plainjob");
  const { quietLogger } = await import("./lib.js");
  const queue = defineQueue({ connection: better(new Database(cfg.file)), logger: quietLogger });
  return { enqueue: async (payload) => queue.add(JOB_TYPE, payload), close: () => queue.close() };
}

const enq = await openEnqueuer();
const go = new Promise((resolve) => process.on("message", (m) => m?.type === "go" && resolve()));
process.send({ type: "ready" });
await go;

const intervalMs = 1000 / cfg.rate;
const callMs = [];
const t0 = wallNow();
let maxBehindMs = 0;
for (let k = 0; k < cfg.count; k++) {
  const target = t0 + k * intervalMs;
  let now = wallNow();
  if (target - now >= 1) {
    await sleep(Math.floor(target - now));
    now = wallNow();
  }
  maxBehindMs = Math.max(maxBehindMs, now - target);
  const t = wallNow();
  await enq.enqueue({ k, t });
  callMs.push(wallNow() - t);
}
const elapsedMs = wallNow() - t0;
await enq.close();
callMs.sort((a, b) => a - b);
process.send({
  type: "done",
  sent: cfg.count,
  elapsedMs,
  achievedRate: cfg.count / (elapsedMs / 1000),
  enqueueCallP50Ms: callMs[Math.floor(callMs.length * 0.5)],
  enqueueCallP99Ms: callMs[Math.floor(callMs.length * 0.99)],
  maxBehindMs,
});
// Let the message flush, then leave.
setTimeout(() => process.exit(0), 50);
