/**
 * Runs due jobs one at a time, when asked: the claim → {@link JobExecutor}
 * → outcome write of the worker pool and the partition runner, without
 * their loops, timers or leases renewed in the background. It is what the
 * testing kit's `drain()` turns (docs/semantics.md X11): a test decides when
 * each attempt runs, so the order of attempts, retries and continuations is
 * the same on every run.
 *
 * ```text
 *   runDueOnce() ─► jobs.claimReady(limit 1) ──none──► partitions.headClaim(limit 1, every partition) ──none──► null
 *                        │ one                                 │ one
 *                        ▼                                     ▼
 *                  executor.run ─► jobs.finishMany       executor.run ─► partitions.headFinish (no claimNext)
 *                        └──────────────► the attempt: job, outcome, whether it was written
 * ```
 *
 * The attempt is the same as a worker's: lease check, decode, context,
 * signal, retry decision, the `running` and outcome events and the metrics.
 * What differs, on purpose: the executor's timeout watchdog is not started
 * (a timeout is time passing, and only the test moves the clock), the
 * lease is not renewed (nothing else claims while the clock stands still),
 * and a written outcome wakes nobody (the caller asks again).
 */
import type { Backend, ClaimedJob, ClaimedPartitionJob, JobOutcome, PartitionRef } from "../backend/backend.js";
import type { TopicConfig } from "../core/partition/topic.js";
import { attemptEvent } from "../events/server-event.js";
import type { ServerMetrics } from "../metrics/server-metrics.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import { finishRetentionMs } from "../core/job-retention.js";
import { HeldClaim } from "./held-claim.js";
import { JobExecutor, type JobExecutorConfig } from "./job-executor.js";

/** What the {@link StepRunner} reads of the server's options. */
export interface StepRunnerConfig<C> extends JobExecutorConfig<C> {
  /** The lease written on each claim. Server option `leaseMs`. */
  leaseMs: number;
  /** How long terminal jobs are kept. Server option `retentionMs`. */
  retentionMs: number;
  /** The server's topics: their partitions' heads are claimed too. */
  topics: readonly TopicConfig[];
}

/** One attempt {@link StepRunner.runDueOnce} ran. */
export interface SteppedAttempt {
  job: ClaimedJob | ClaimedPartitionJob;
  /** A partition head (`@topic` job) rather than a regular job. */
  partitioned: boolean;
  /** What the attempt led to; null when nothing may be written (its lease had expired: the clock was moved past it meanwhile). */
  outcome: JobOutcome | null;
  /** Whether the outcome was stored (false: the claim had lost its lease). */
  written: boolean;
}

/** The worker id attempts run by the step runner are recorded under. */
const STEP_WORKER_ID = 0;

export class StepRunner<C> {
  private readonly executor: JobExecutor<C>;
  private readonly partitions: PartitionRef[];

  constructor(
    private readonly options: StepRunnerConfig<C>,
    /** The job types it claims: those a test gave handlers (the others stay queued). */
    private readonly jobTypes: readonly string[],
    private readonly backend: Backend,
    private readonly owner: string,
    publisher: JobPublisher<unknown>,
    private readonly metrics: ServerMetrics | null,
  ) {
    this.partitions = options.topics.flatMap((t) => Array.from({ length: t.partitions }, (_, partition) => ({ topic: t.name, partition })));
    // Never started: no watchdog (see the module doc), so `onTimedOut` is never called.
    this.executor = new JobExecutor(options, publisher, () => {}, owner);
  }

  /**
   * Claims the due regular job with the oldest `runAt` (else the oldest due
   * partition head), runs its attempt and writes the outcome; resolves to
   * the attempt, or null when no job of a handled type is due at the
   * clock's now. Handler errors are outcomes, never rejections; a database
   * error rejects.
   */
  async runDueOnce(): Promise<SteppedAttempt | null> {
    const { clock, leaseMs, retentionMs } = this.options;
    const now = clock.now();
    const leaseExpiresAt = now + leaseMs;
    const { jobs } = await this.backend.jobs.claimReady({ owner: this.owner, limit: 1, now, leaseExpiresAt, jobTypes: this.jobTypes });
    if (jobs.length > 0) {
      const claim = new HeldClaim(jobs[0]!, leaseExpiresAt);
      const outcome = await this.executor.run(claim, STEP_WORKER_ID);
      if (outcome === null) return { job: claim.job, partitioned: false, outcome, written: false };
      claim.outcome = outcome;
      claim.retentionMs = finishRetentionMs(this.options.handlers[claim.job.jobType]?.retention, outcome.kind);
      const result = await this.backend.jobs.finishMany({ finishes: [claim], now: clock.now(), retentionMs });
      return this.written(claim.job, false, outcome, result.applied.length > 0);
    }
    if (this.partitions.length === 0) return null;
    const { claimed } = await this.backend.partitions.headClaim({
      owner: this.owner,
      partitions: this.partitions,
      limit: 1,
      now,
      leaseExpiresAt,
      jobTypes: this.jobTypes,
    });
    if (claimed.length === 0) return null;
    const head = new HeldClaim(claimed[0]!, leaseExpiresAt, true);
    const outcome = await this.executor.run(head, STEP_WORKER_ID);
    if (outcome === null) return { job: head.job, partitioned: true, outcome, written: false };
    const headRetentionMs = finishRetentionMs(this.options.handlers[head.job.jobType]?.retention, outcome.kind) ?? retentionMs;
    const result = await this.backend.partitions.headFinish({ owner: this.owner, claim: head.head!, outcome, now: clock.now(), retentionMs: headRetentionMs });
    return this.written(head.job, true, outcome, result.applied);
  }

  /** Records a written outcome as the worker pool does (metrics, the outcome event). */
  private written(job: ClaimedJob, partitioned: boolean, outcome: JobOutcome, applied: boolean): SteppedAttempt {
    if (applied) {
      this.metrics?.outcomeWritten(job, outcome, this.options.clock.now());
      if (this.options.eventsEnabled) this.options.onEvent(attemptEvent(job, outcome));
    }
    return { job, partitioned, outcome, written: applied };
  }
}
