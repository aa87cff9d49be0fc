// A job server that wires its shutdown to SIGTERM/SIGINT (`shutdownOnSignals`), for signal.test.ts.
//
// argv[2] is a JSON config: { backend: BackendSpec, namespace, deadlineMs, leaseMs }. Its "work"
// handler ignores its signal and never settles. stdout protocol, one line each:
//   ready <instanceId>             the server has started and the signals are wired
//   started <jobId> <attempt>      a handler began
//   released <jobId> <attempt>     the shutdown put the job back (event job-released)
// The process exits through shutdownOnSignals: 0 once the shutdown finished.
import { BackgroundJobServer } from "@later/runtime";
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
      handle: (ctx) => {
        say(`started ${ctx.jobId} ${ctx.attempt}`);
        return new Promise(() => {}); // ignores ctx.signal: still running at the deadline
      },
    },
  },
  onEvent: (event) => {
    if (event.type === "job-released") say(`released ${event.jobId} ${event.attempt}`);
  },
});
server.shutdownOnSignals({ deadlineMs: config.deadlineMs });
say(`ready ${server.instanceId}`);
