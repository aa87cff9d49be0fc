export { ManualClock } from "./manual-clock.js";
export { injectWorkerLoopFault } from "./inject-worker-loop-fault.js";
export { liveResources, openBackendsNow, type LiveResources } from "./live-resources.js";
