// The attempt log of a child process (partition-child.mjs, worker-child.mjs
// with `attemptLogFile`): one line per event, appended synchronously, so a
// line is on disk before the handler returns or the runner goes on. Read and
// checked by attempt-log.ts. t = the monotonic clock in ms (process.hrtime,
// CLOCK_MONOTONIC): sub-ms, and one clock for every process on the machine,
// so times of two processes compare (the tests read it as attemptLogNow()).
// Not performance.timeOrigin + performance.now(): timeOrigin pairs a
// wall-clock reading with a monotonic one taken apart at process start, and a
// process preempted between the two is off by milliseconds for its whole
// life (4 ms seen with the CPUs busy). A job without a key or number logs "-"
// for it.
//   start <jobId> <key> <n> <attempt> <pid> <t>                 an attempt began
//   end <jobId> <key> <n> <attempt> <pid> <t> ok|fail|aborted   it ended (aborted: ctx.signal fired)
//   applied <jobId> <attempt> <stage> <t>                       the runner's success/requeued/failed event:
//                                                               the outcome write of that claim was applied
import { appendFileSync } from "node:fs";

const now = () => (Number(process.hrtime.bigint()) / 1e6).toFixed(3);

/** The log writer of one child: `start(ctx, key, n)` returns the attempt's `end(result)`; `event(e)` logs applied writes. */
export function attemptLog(file) {
  const write = (line) => appendFileSync(file, `${line}\n`);
  return {
    start(ctx, key, n) {
      const id = `${ctx.jobId} ${key ?? "-"} ${n ?? "-"} ${ctx.attempt} ${process.pid}`;
      write(`start ${id} ${now()}`);
      return (result) => write(`end ${id} ${now()} ${result}`);
    },
    event(event) {
      if (event.type === "job" && (event.stage === "success" || event.stage === "requeued" || event.stage === "failed")) {
        write(`applied ${event.jobId} ${event.attempt} ${event.stage} ${now()}`);
      }
    },
  };
}
