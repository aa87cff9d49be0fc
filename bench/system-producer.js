// The other process of bench/postgres.js's latency phase: enqueues `count`
// jobs at `rate` jobs/s through the system's single-enqueue call, each payload
// carrying the wall time (ms, sub-ms resolution) taken just before the call.
//
// IPC with bench/system-phase.js: -> {type:"ready"}, <- {type:"go"},
// -> {type:"done", ...stats}, then exits. Exits by itself when its parent
// goes away or after a hard deadline, so it can never outlive the bench.
import { loadSystem, pacedCalls } from "./lib.js";

const cfg = JSON.parse(process.argv[2]);
const hardDeadline = setTimeout(() => process.exit(3), cfg.hardDeadlineMs ?? 40_000);
hardDeadline.unref();
process.on("disconnect", () => process.exit(0));

const system = await loadSystem(cfg.target.system);
const enqueuer = await system.openEnqueuer(cfg.target);
const go = new Promise((resolve) => process.on("message", (m) => m?.type === "go" && resolve()));
process.send({ type: "ready" });
await go;
const stats = await pacedCalls(cfg.count, cfg.rate, (k, t) => enqueuer.single({ k, t }));
await enqueuer.close();
process.send({ type: "done", sent: cfg.count, ...stats });
setTimeout(() => process.exit(0), 50);
