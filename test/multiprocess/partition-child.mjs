// A job server with the topic "orders" (8 partitions) in its own process,
// for partition-order.test.ts.
//
// argv[2] is a JSON config (PartitionChildConfig in partition-order.test.ts).
// The handler of job type "ordered" (payload { key, n }) writes the attempt
// log (start, end and applied lines, see attempt-log-writer.mjs) to `logFile`.
// Each attempt fails with probability `failProbability` (seeded PRNG) and
// takes a random 0..maxDelayMs ms; jobs of the key `slow.key` take
// `slow.delayMs` and never fail.
// stdout: `ready <instanceId>`, `event-error <code> <where>: <error>` (as worker-child.mjs), `stopped`;
// "stop" on stdin (or EOF) shuts the server down.
import { createInterface } from "node:readline";
import { BackgroundJobServer, topic } from "@later/runtime";
import { attemptLog } from "./attempt-log-writer.mjs";
import { childBackend } from "./child-backend.mjs";

const config = JSON.parse(process.argv[2]);
const say = (line) => process.stdout.write(`${line}\n`);
const log = attemptLog(config.logFile);

// mulberry32: a small seeded PRNG, so a run's failures and delays come from its config.
let state = config.seed >>> 0;
const random = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const server = await BackgroundJobServer.start({
  context: {},
  backend: childBackend(config),
  autoMigrate: true,
  workerCount: config.workerCount,
  topics: [topic("orders", 8)],
  ...config.server,
  handlers: {
    ordered: {
      handle: async (ctx, { key, n }) => {
        const end = log.start(ctx, key, n);
        const slow = config.slow !== undefined && key === config.slow.key;
        const fail = !slow && random() < config.failProbability;
        const delayMs = slow ? config.slow.delayMs : Math.floor(random() * (config.maxDelayMs + 1));
        const result = await new Promise((resolve) => {
          if (ctx.signal.aborted) return resolve("aborted");
          const timer = setTimeout(() => resolve(fail ? "fail" : "ok"), delayMs);
          ctx.signal.addEventListener(
            "abort",
            () => {
              clearTimeout(timer);
              resolve("aborted");
            },
            { once: true },
          );
        });
        end(result);
        if (result === "aborted") throw ctx.signal.reason;
        if (result === "fail") throw new Error(`random failure of ${key}/${n}`);
      },
    },
  },
  onEvent: (event) => {
    log.event(event);
    if (event.type === "error") {
      say(`event-error ${event.code ?? "-"} ${event.where}: ${event.error.replace(/\s+/g, " ")}`);
    }
  },
});
say(`ready ${server.instanceId}`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.shutdown({ deadlineMs: 2_000 });
  say("stopped");
  process.exit(0);
};
// EOF on stdin too: a parent that died takes its children with it.
createInterface({ input: process.stdin })
  .on("line", (line) => {
    if (line.trim() === "stop") void stop();
  })
  .on("close", () => void stop());
