import type { BackgroundJobServer } from "../server/background-job-server.js";

/**
 * Makes the next `times` worker-loop iterations of `server` throw right after
 * taking a claim, as a bug in the loop itself would, so tests can watch the
 * supervisor replace the loop and the claim recover through its lease.
 */
export function injectWorkerLoopFault(server: BackgroundJobServer<unknown>, times = 1): void {
  let left = times;
  server.workerLoopFault = () => {
    if (left <= 0) return;
    left--;
    throw new Error("injected worker loop fault");
  };
}
