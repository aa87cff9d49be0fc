// A job server with per job type limits (X9) in its own process, for limits.test.ts.
//
// argv[2] is a JSON config: { backend, namespace, workerCount, logFile, handlerMs }. Handlers:
// "capped" (`concurrency: 3`), "paced" (`rateLimit: { max: 5, perMs: 500 }`) and "grouped"
// (`groupConcurrency: 2`), each taking `handlerMs` of work. Every attempt appends to `logFile`,
// synchronously (one short line in append mode: whole on disk before the handler goes on):
//   start <jobType> <jobId> <attempt> <pid> <wallMs> <group>   the handler began
//   end <jobType> <jobId> <attempt> <pid> <wallMs> <group>     it returned
// where <group> is the payload's `g` (the group the job was enqueued with), "-" when none.
// Prints `ready <instanceId>` once started, `event-error ...` for error events, `stopped` after
// "stop" on stdin (or stdin EOF).
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { BackgroundJobServer } from "@later/runtime";
import { childBackend } from "./child-backend.mjs";

const config = JSON.parse(process.argv[2]);
const say = (line) => process.stdout.write(`${line}\n`);
const record = (what, ctx, group) =>
  appendFileSync(config.logFile, `${what} ${ctx.jobType} ${ctx.jobId} ${ctx.attempt} ${process.pid} ${Date.now()} ${group}\n`);

const handle = async (ctx, payload) => {
  const group = payload?.g ?? "-";
  record("start", ctx, group);
  await new Promise((resolve) => setTimeout(resolve, config.handlerMs));
  record("end", ctx, group);
};

const server = await BackgroundJobServer.start({
  context: {},
  backend: childBackend(config),
  autoMigrate: true,
  workerCount: config.workerCount,
  handlers: {
    capped: { concurrency: 3, handle },
    paced: { rateLimit: { max: 5, perMs: 500 }, handle },
    grouped: { groupConcurrency: 2, handle },
  },
  onEvent: (event) => {
    if (event.type === "error") say(`event-error ${event.code ?? "-"} ${event.where}: ${event.error.replace(/\s+/g, " ")}`);
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
createInterface({ input: process.stdin })
  .on("line", (line) => {
    if (line.trim() === "stop") void stop();
  })
  .on("close", () => void stop());
