import type { JobFinish } from "../backend/backend.js";
import { finishRetentionMs, type JobRetention } from "../core/job-retention.js";
import type { RetryPolicy } from "../core/retry/retry-policy.js";
import { lostAttemptError, retryDecision, type RetryDecisionConfig } from "../core/retry/retry-decision.js";
import { checkInt, PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** Settings of the {@link StuckJobRescuer}, and what the retry decision reads. */
export interface StuckJobRescuerConfig<C> extends RetryDecisionConfig<C> {
  /** The handlers' per-type settings the rescue reads besides the retry policy: their `retention` (J11). */
  handlers: Readonly<Record<string, { retry?: (app: C) => RetryPolicy; retention?: JobRetention }>>;
  /** How often it looks (one server per interval). Server option `rescueIntervalMs`, default 15000. */
  intervalMs: number;
  /** A running job is rescued once its lease has been expired this long. Server option `stuckGraceMs`, default `leaseMs`. */
  graceMs: number;
  /** Jobs read and finished per statement. Default 100. */
  batchSize?: number;
  /** How long the jobs it fails for good are kept. Server option `retentionMs`. */
  retentionMs: number;
}

/**
 * Task `rescue-stuck` (J7): regular jobs still `running` whose lease expired
 * more than `graceMs` ago lost their worker (its process crashed or
 * stalled). Each lost attempt counts: the same retry decision as a handler
 * that threw ({@link retryDecision}: an explicit policy stored with the job,
 * else this server's for its type, else this server's default) requeues it
 * or, retries spent, fails it. The writes are fenced
 * by the lease, so a worker that renewed meanwhile keeps its job. Partition
 * heads are not its business: a crashed head's lost attempt is recorded by
 * the next claim of its partition (`ClaimedPartitionJob.lostAttempt`).
 *
 * Event: `{ type: "maintenance", task: "rescue-stuck", count }` after a run
 * that rescued jobs; `onRescued` wakes the local workers.
 */
export class StuckJobRescuer<C> extends PeriodicService {
  readonly graceMs: number;
  readonly batchSize: number;

  constructor(
    host: MaintenanceHost,
    private readonly config: StuckJobRescuerConfig<C>,
    private readonly onRescued: () => void,
  ) {
    super(host, "rescue-stuck", config.intervalMs, true);
    this.graceMs = checkInt(this.task, "graceMs", config.graceMs, 0);
    this.batchSize = checkInt(this.task, "batchSize", config.batchSize ?? 100, 1);
  }

  /**
   * Retries or fails running jobs whose workers are gone. Resolves to how many. Then moves the ready jobs stored with
   * no group of group-limited types to their ungrouped group (X9, `limitsUngroupedAdopt`), which a group claim reads
   * (those are written only around a server's start that stores a group limit): woken as after a rescue.
   */
  async runOnce(): Promise<number> {
    const total = await this.rescue();
    if ((await this.host.backend.jobs.limitsUngroupedAdopt()).moved > 0) this.onRescued();
    return total;
  }

  private async rescue(): Promise<number> {
    const { backend, clock } = this.host;
    const now = clock.now();
    const leaseExpiredBefore = now - this.graceMs;
    let total = 0;
    for (;;) {
      const stuck = await backend.jobs.listStuck({ leaseExpiredBefore, limit: this.batchSize });
      if (stuck.length === 0) return total;
      const finishes: JobFinish[] = stuck.map((job) => {
        const outcome = retryDecision(this.config, job, lostAttemptError(job.attempt));
        // J11: a job failed for good keeps its type's `failedMs` when the handler's `retention` sets one.
        const retentionMs = finishRetentionMs(this.config.handlers[job.jobType]?.retention, outcome.kind);
        return retentionMs === undefined ? { id: job.id, attempt: job.attempt, outcome } : { id: job.id, attempt: job.attempt, outcome, retentionMs };
      });
      const { applied } = await backend.jobs.finishMany({ finishes, now, retentionMs: this.config.retentionMs, leaseExpiredBefore });
      total += applied.length;
      if (applied.length > 0) this.onRescued();
      if (applied.length === 0 || stuck.length < this.batchSize) return total;
    }
  }
}
