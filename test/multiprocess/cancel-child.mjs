// A job server whose handler ignores its signal for a while, for cancel.test.ts (X3).
//
// argv[2] is a JSON config: { backend: BackendSpec, namespace, leaseMs }. Its "work" handler reports
// when its signal aborts, then carries on for 200 ms and throws, as a handler that ignores the
// signal would. stdout protocol, one line each:
//   ready <instanceId>                   the server has started
//   started <jobId> <attempt>            a handler began
//   aborted <jobId> <code> <reason>      its ctx.signal aborted (code and reason of the abort's error)
//   event-cancelled <jobId> <attempt>    the server's job-cancelled event
//   settled <jobId>                      the handler threw, after the abort
// "stop" on stdin shuts the server down (outcomes flushed) and exits 0.
import { createInterface } from "node:readline";
import { BackgroundJobServer, RetryPolicy } from "@later/runtime";
import { childBackend } from "./child-backend.mjs";

const config = JSON.parse(process.argv[2]);
const say = (line) => process.stdout.write(`${line}\n`);

const server = await BackgroundJobServer.start({
  context: {},
  backend: childBackend(config),
  autoMigrate: true,
  workerCount: 1,
  leaseMs: config.leaseMs,
  pollIntervalMs: 50,
  handlers: {
    work: {
      retry: () => RetryPolicy.fixed(3, 0),
      handle: async (ctx) => {
        say(`started ${ctx.jobId} ${ctx.attempt}`);
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
        const reason = ctx.signal.reason;
        say(`aborted ${ctx.jobId} ${reason?.code} ${reason?.reason}`);
        await new Promise((resolve) => setTimeout(resolve, 200)); // ignores it for a while
        say(`settled ${ctx.jobId}`);
        throw new Error("failed after the cancel");
      },
    },
  },
  onEvent: (event) => {
    if (event.type === "job-cancelled") say(`event-cancelled ${event.jobId} ${event.attempt}`);
  },
});
say(`ready ${server.instanceId}`);
createInterface({ input: process.stdin }).on("line", async (line) => {
  if (line.trim() !== "stop") return;
  await server.shutdown({ deadlineMs: 1_000 });
  process.exit(0);
});
