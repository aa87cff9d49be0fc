export { ManualClock } from "./manual-clock.js";
export { injectWorkerLoopFault } from "./inject-worker-loop-fault.js";
export { liveServerIds } from "./live-servers.js";
