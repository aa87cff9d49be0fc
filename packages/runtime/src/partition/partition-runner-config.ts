import type { TopicConfig } from "../core/partition/topic.js";
import type { JobExecutorConfig } from "../worker/job-executor.js";

/**
 * How long a run goes on starting followers, from its head's start (P3): its
 * outcomes are written at least this often (plus the job running then),
 * however slow its jobs, so its successes show (events, `waitFor`, released
 * continuations) and a process that dies redoes at most this much of its work.
 * Fast jobs fill `partitionRunMax` well within it (128 no-op jobs: about 3 ms).
 */
export const PARTITION_RUN_MAX_MS = 100;

/** What the `PartitionRunner` reads of the server's options, its executor's included. */
export interface PartitionRunnerConfig<C> extends JobExecutorConfig<C> {
  /** Chains of heads run at once. Server option `workerCount`. */
  workerCount: number;
  /** How often it looks for ready heads when no wake-up arrives. Server option `pollIntervalMs`. */
  pollIntervalMs: number;
  /** Head lease length, renewed every third of it. Server option `leaseMs`. */
  leaseMs: number;
  /** How long terminal jobs are kept. Server option `retentionMs`. */
  retentionMs: number;
  /** A member that has not heartbeat for this long is dead. Server option `partitionMemberExpiryMs`. */
  partitionMemberExpiryMs: number;
  /** The topics whose partitions it takes part in owning (the reserved recurring topic included). */
  topics: readonly TopicConfig[];
  /** Most jobs one partition runs per write, the head included (P3), within {@link PARTITION_RUN_MAX_MS}. Server option `partitionRunMax`; default 1 here. */
  partitionRunMax?: number;
}
