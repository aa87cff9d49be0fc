// A job server in its own process, for the multi-process tests.
//
// argv[2] is a JSON config (see ChildConfig in helpers.ts): SQLite or
// PostgreSQL, per `backend.kind`. stdout protocol,
// one line each:
//   ready <instanceId>            the server has started
//   started <jobId> <attempt>     a { hang: true } job began and will never finish
//   dying <jobId> <attempt>       a { die: true } job began: the process SIGKILLs itself (with dieOnPayload)
//   done <jobId> <attempt> <ms>   a handler finished (with printDone), wall clock ms
//   event-error <code> <where>: <error>   the runtime reported an error event (code "-" when it has none)
//   stopped                       graceful shutdown finished (after "stop" on stdin, or stdin EOF)
// With `attemptLogFile`, every attempt (payload `{ key?, n? }`) and applied
// outcome write also goes to the attempt log (attempt-log-writer.mjs).
// A payload may also say how its attempts go (the soak's producer chooses it):
// `ms` the work takes (default `handlerDelayMs`; the wait ends early when the
// claim's signal aborts, logged `aborted`) and `fail`: attempts 1..fail throw;
// `result`: the handler resolves to it (stored with the success, X6).
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { BackgroundJobServer, topic } from "@later/runtime";
import { attemptLog } from "./attempt-log-writer.mjs";
import { childBackend } from "./child-backend.mjs";

const config = JSON.parse(process.argv[2]);
const say = (line) => process.stdout.write(`${line}\n`);
const log = config.attemptLogFile ? attemptLog(config.attemptLogFile) : null;

/** The job's work: waits `ms` (none for 0); resolves "aborted" when the claim's signal fires first (its lease was lost). */
const work = (signal, ms) =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve("aborted");
    if (ms <= 0) return resolve("ok");
    const timer = setTimeout(() => resolve("ok"), ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve("aborted");
      },
      { once: true },
    );
  });

const handler = {
  handle: async (ctx, payload) => {
    const end = log?.start(ctx, payload?.key, payload?.n);
    if (config.hangOnPayload && payload !== null && typeof payload === "object" && payload.hang === true) {
      say(`started ${ctx.jobId} ${ctx.attempt}`);
      await new Promise(() => {}); // never settles: only SIGKILL ends this attempt
    }
    if (config.dieOnPayload && payload !== null && typeof payload === "object" && payload.die === true) {
      say(`dying ${ctx.jobId} ${ctx.attempt}`);
      process.kill(process.pid, "SIGKILL"); // no cleanup of any kind: a crash inside the handler
    }
    const result = await work(ctx.signal, payload?.ms ?? config.handlerDelayMs ?? 0);
    if (result === "aborted") {
      end?.("aborted");
      throw ctx.signal.reason;
    }
    if (typeof payload?.fail === "number" && ctx.attempt <= payload.fail) {
      end?.("fail");
      throw new Error(`planned failure of attempt ${ctx.attempt} (fails ${payload.fail})`);
    }
    if (config.logFile) appendFileSync(config.logFile, `${ctx.jobId}\n`);
    end?.("ok");
    if (config.printDone) say(`done ${ctx.jobId} ${ctx.attempt} ${Date.now()}`);
    return payload?.result; // X6: a payload may name the handler's result
  },
};

const server = await BackgroundJobServer.start({
  context: {},
  backend: childBackend(config),
  autoMigrate: true,
  workerCount: config.workerCount,
  ...(config.topics ? { topics: config.topics.map((t) => topic(t.name, t.partitions)) } : {}),
  ...config.server,
  handlers: Object.fromEntries(["work", ...(config.extraJobTypes ?? [])].map((type) => [type, handler])),
  onEvent: (event) => {
    log?.event(event);
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
// EOF on stdin too: a parent that died takes its children with it.
createInterface({ input: process.stdin })
  .on("line", (line) => {
    if (line.trim() === "stop") void stop();
  })
  .on("close", () => void stop());
