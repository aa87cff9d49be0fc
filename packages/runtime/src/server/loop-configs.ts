/**
 * What the composition root hands each loop of its resolved options: every
 * runner and the rescuer takes a narrow config listing only the fields it
 * reads (as River's `JobRescuerConfig`), built here from
 * {@link ResolvedServerOptions}.
 */
import type { ResolvedServerOptions } from "../config/server-options.js";
import type { RetryDecisionConfig } from "../core/retry/retry-decision.js";
import type { StuckJobRescuerConfig } from "../maintenance/stuck-job-rescuer.js";
import type { PartitionRunnerConfig } from "../partition/partition-runner-config.js";
import type { JobExecutorConfig } from "../worker/job-executor.js";
import type { WorkerPoolConfig } from "../worker/worker-pool-config.js";
import type { StepRunnerConfig } from "../worker/step-runner.js";
import type { LaterMiddleware } from "../middleware/later-middleware.js";

/** The executors' attempt middleware: the server's metrics first (an observer entry) when on, then option `middleware`. */
type AttemptMiddleware = readonly LaterMiddleware[];

/** What the retry decision reads: the handlers' `retry` options, the default policy, the clock and randomness. */
export function retryDecisionConfig<C>(options: ResolvedServerOptions<C>): RetryDecisionConfig<C> {
  const { context, handlers, defaultRetryPolicy, random, clock } = options;
  return { context, handlers, defaultRetryPolicy, random, clock };
}

/** What a job executor reads (the worker pool's and the partition runner's). */
export function jobExecutorConfig<C>(options: ResolvedServerOptions<C>, middleware: AttemptMiddleware): JobExecutorConfig<C> {
  const { handlers, backend, jobTimeoutMs, onEvent, eventsEnabled } = options;
  return { ...retryDecisionConfig(options), handlers, backend, jobTimeoutMs, onEvent, eventsEnabled, middleware };
}

export function workerPoolConfig<C>(options: ResolvedServerOptions<C>, middleware: AttemptMiddleware): WorkerPoolConfig<C> {
  const { workerCount, pollIntervalMs, leaseMs, retentionMs } = options;
  return { ...jobExecutorConfig(options, middleware), workerCount, pollIntervalMs, leaseMs, retentionMs };
}

export function partitionRunnerConfig<C>(options: ResolvedServerOptions<C>, middleware: AttemptMiddleware): PartitionRunnerConfig<C> {
  const { workerCount, pollIntervalMs, leaseMs, retentionMs, partitionMemberExpiryMs, partitionRunMax, topics } = options;
  return { ...jobExecutorConfig(options, middleware), workerCount, pollIntervalMs, leaseMs, retentionMs, partitionMemberExpiryMs, partitionRunMax, topics };
}

export function stuckJobRescuerConfig<C>(options: ResolvedServerOptions<C>): StuckJobRescuerConfig<C> {
  return { ...retryDecisionConfig(options), intervalMs: options.rescueIntervalMs, graceMs: options.stuckGraceMs, retentionMs: options.retentionMs };
}

/** What the testing kit's step runner reads (X11): the executor's config, the lease, retention and the topics whose heads it claims. */
export function stepRunnerConfig<C>(options: ResolvedServerOptions<C>, middleware: AttemptMiddleware): StepRunnerConfig<C> {
  const { leaseMs, retentionMs, topics } = options;
  return { ...jobExecutorConfig(options, middleware), leaseMs, retentionMs, topics };
}
