import type { JobExecutorConfig } from "./job-executor.js";

/** What the {@link WorkerPool} reads of the server's options, its executor's included. */
export interface WorkerPoolConfig<C> extends JobExecutorConfig<C> {
  /** Workers `start()` starts. Server option `workerCount`. */
  workerCount: number;
  /** How often idle workers look for work when no wake-up arrives. Server option `pollIntervalMs`. */
  pollIntervalMs: number;
  /** Execution lease length, renewed every third of it. Server option `leaseMs`. */
  leaseMs: number;
  /** How long terminal jobs are kept. Server option `retentionMs`. */
  retentionMs: number;
}
