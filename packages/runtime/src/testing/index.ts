export { ManualClock } from "./manual-clock.js";
export { injectWorkerLoopFault } from "./inject-worker-loop-fault.js";
export { liveResources, openBackendsNow, type LiveResources } from "./live-resources.js";
export {
  TestJobs,
  createTypedTestJobs,
  type EnqueuedJob,
  type HandlePayload,
  type TestJobsOptions,
  type WorkOptions,
  type DrainAttempt,
  type DrainOptions,
  type DrainResult,
} from "./test-jobs.js";
