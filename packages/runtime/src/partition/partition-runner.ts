/**
 * Runs partitioned jobs: the heads of the partitions this server owns, one
 * at a time per partition, in sequence order.
 *
 * Terminology:
 * - **head**: a partition's unfinished job with the lowest sequence; only
 *   it may run. A retry keeps its place; a delayed head, or a waiting
 *   continuation, blocks the partition until it is ready.
 * - **member**: a server with topics, alive while its heartbeat row is
 *   fresh (`partitionMemberExpiryMs`, default 15 s).
 * - **owner**: the member that rendezvous hashing picks for a partition
 *   among the live members; only the owner claims that partition's heads.
 * - **lease / epoch**: a head claim holds the partition's lease, renewed
 *   every third of `leaseMs`, and carries the partition's fencing epoch,
 *   which every new claim bumps; writes of an older epoch are rejected.
 * - **lost attempt**: a head found still `running` when its partition's
 *   lease is free (its server died or stalled past the lease). The claim
 *   takes the lease without starting an attempt; the lost attempt counts as
 *   a failure through the retry decision, as the stuck-job sweep's do for
 *   regular jobs, so a head that kills its process every time ends `failed`.
 *   When the dead owner was inside a run (below), which of its jobs was
 *   running is unknown: the claim puts the head back unstarted instead, and
 *   the partition's heads up to that run's end are claimed alone (careful),
 *   so the job that kills its process is then counted against itself.
 * - **run** (P3, server option `partitionRunMax`, default 128): a head is
 *   claimed with its followers, the consecutive ready jobs behind it, read
 *   but not written. They run one after another under the head's lease and
 *   epoch, each its own attempt (stored attempt + 1) through the executor;
 *   the run stops at the first outcome that is not a success, at shutdown,
 *   when the lease is lost, when the partition is no longer owned or the
 *   next one's type is paused, or once it has run for
 *   {@link PARTITION_RUN_MAX_MS}. Their outcomes are written with the head's in
 *   one write (`partitions.headFinish` with `followers`), which claims the
 *   next run too. A follower cancelled while it runs (X3, seen by the lease
 *   renewal) ends the run before it; what ran before it is written.
 *
 * ```text
 *   membership loop: heartbeat ─► live members ─► owned partitions (rendezvous)
 *   fetcher: owned, unleased partitions ─► partitions.headClaim ─► one run per claimed head
 *   run:  claimed ─► JobExecutor (head, then each follower while they succeed)
 *           ─► partitions.headFinish (the run's outcomes) ─┬─► next run claimed in the same write ─► executor ...
 *           │            │                                  └─► lease freed (next head not ready, or no longer owned)
 *           │            ├─(lease lost: renewal found another epoch, or forceFailPartitionHead)─► signal aborts, outcome discarded
 *           │            └─(lease already expired when the handler would start)─► skipped, left to the next claim
 *           └─(lost attempt: the head was still `running` under an expired lease, its process died or stalled)
 *                 ─► the retry decision's outcome for that attempt ─► partitions.headFinish (requeued, or failed once
 *                    retries are spent, which frees the partition) ─► next attempt claimed in the same write when due
 * ```
 *
 * Each attempt is run by the {@link JobExecutor}, as the worker pool's are
 * (lease check, decode, context with `ctx.partition`, signal, timeout, one
 * retry decision); heads' leases are renewed by a {@link LeaseRenewer}
 * given the partition leases to renew. The membership loop and the
 * partitions owned are a {@link PartitionMembership}; the runs held in this
 * process, a {@link HeldRuns}.
 *
 * Concurrency: at most `workerCount` heads at once (one per partition), next
 * to the regular worker pool. A membership change moves only the partitions
 * whose winner changed; a head already running finishes under its current
 * owner, which then stops claiming that partition. Shutdown deregisters at
 * once, lets running heads finish until the deadline, then aborts them and
 * puts them back with their partitions freed (`partitions.headRelease`,
 * fenced by the epoch; attempt undone, event `job-released`), so the
 * partitions' next owners run the same heads at once; a run cut there
 * writes the jobs that ran before the one running (that one was never
 * written, so its partition goes on from it). A handler that outlives
 * `jobTimeoutMs` has its failure written at once and its partition goes on;
 * the hung handler is left behind, as in the worker pool.
 */
import { finishRetentionMs } from "../core/job-retention.js";
import type { Backend, ClaimedPartitionJob, JobOutcome, PartitionRef } from "../backend/backend.js";
import { ServerStoppedError } from "../errors.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import { attemptEvent, errorEvent } from "../events/server-event.js";
import type { HeldClaim } from "../worker/held-claim.js";
import { JobExecutor } from "../worker/job-executor.js";
import { LeaseRenewer } from "../worker/lease-renewer.js";
import type { WorkerIds } from "../worker/worker-ids.js";
import type { PauseWatch } from "../worker/pause-watch.js";
import type { ServerMetrics, WorkerState } from "../metrics/server-metrics.js";
import { lostAttemptError, retryDecision } from "../core/retry/retry-decision.js";
import { PartitionMembership, partitionKey } from "./partition-membership.js";
import { HeldRuns, type Run } from "./held-runs.js";
import { meteredRenewals } from "./metered-renewals.js";
import { PARTITION_RUN_MAX_MS, type PartitionRunnerConfig } from "./partition-runner-config.js";

export class PartitionRunner<C> {
  private readonly membership: PartitionMembership;
  private readonly heads = new HeldRuns();
  private readonly runs = new Set<Promise<void>>();
  private readonly jobTypes: string[];
  private readonly slots: number;
  private stopping = false;
  private wakeController = new AbortController();
  private readonly stopController = new AbortController();
  private loops: Promise<void>[] = [];
  private readonly renewer: LeaseRenewer;
  private readonly executor: JobExecutor<C>;
  /** Told when a finished head released waiting continuations (they may be regular jobs). */
  onReleased: (() => void) | null = null;
  /**
   * Told of every head claimed with a new attempt, with the claim's time and
   * when it became claimable (the dashboard's dispatch wait): its `runAt`
   * for the fetcher's claims, the claim time for a head claimed by its
   * predecessor's finish (it became ready then), and the start for a run's
   * follower (likewise).
   */
  onClaimed: ((job: ClaimedPartitionJob, claimedAt: number, readyAt: number) => void) | null = null;
  /**
   * X4: the paused set (shared with the worker pool). Partitions of a paused
   * topic are not claimed, and paused job types are left out of the claims'
   * `jobTypes`, so a paused type at a partition's head holds that partition
   * (its order is kept); a head already running finishes. Null: none honoured.
   */
  pauses: PauseWatch | null = null;

  constructor(
    private readonly options: PartitionRunnerConfig<C>,
    private readonly backend: Backend,
    private readonly owner: string,
    publisher: JobPublisher<unknown>,
    /** Numbers the running chains for `worker_id` labels (shared with the worker pool). */
    private readonly ids: WorkerIds,
    /** Where claims, attempts, outcomes and renewals are recorded; null with metrics off. */
    private readonly metrics: ServerMetrics | null,
  ) {
    this.jobTypes = Object.keys(options.handlers);
    this.slots = options.workerCount;
    this.membership = new PartitionMembership(options, backend, owner, metrics, () => this.wake());
    this.renewer = new LeaseRenewer({
      clock: options.clock,
      leaseMs: options.leaseMs,
      renew: meteredRenewals(LeaseRenewer.partitionLeases(backend, owner), metrics),
      heldClaims: () => [...this.heads.claims()].filter((h) => !h.abandoned),
      onLost: (lost) => {
        for (const h of lost) this.executor.leaseLost(h);
      },
      // X3: a head's cancel freed the partition (epoch moved on): the chain ends and the next head may be claimed;
      // a follower's ends its run before it (the runner writes what ran).
      onCancelled: (cancelled) => {
        for (const [h, reason] of cancelled) this.executor.cancel(h, reason);
      },
      onError: (error) => this.report("partition lease renewal", error),
    });
    // A timed-out head's chain goes on from here (the hung handler's own chain ends when, if ever, it settles).
    this.executor = new JobExecutor(options, publisher, (claim, outcome) => this.startChain(claim, outcome), owner);
  }

  /** Heads running now, as workers for `later_workers` (each chain of heads is one, numbered while it runs). */
  workerStates(): Generator<WorkerState> {
    return this.heads.workerStates();
  }

  /** Heads running now by topic, for `later_partitions_active`. */
  activeByTopic(): Map<string, number> {
    return this.heads.activeByTopic();
  }

  /** Partitions this server owns after its last heartbeat. */
  get ownedPartitions(): readonly PartitionRef[] {
    return this.membership.partitions;
  }

  /** Heads running in this process now. */
  get runningCount(): number {
    return this.heads.size;
  }

  /** Joins the members (one heartbeat, so ownership is known at once) and starts the loops. */
  async start(): Promise<void> {
    await this.membership.heartbeat();
    this.loops.push(
      this.membership.run(this.stopController.signal, (where, error) => this.report(where, error)),
      this.runFetcher(),
    );
    this.renewer.start();
    this.executor.start();
  }

  /** New work may be ready (a local enqueue, another process's commit, released continuations). */
  wake(): void {
    this.wakeController.abort(WAKE);
  }

  /** Renews every held head's lease now; a head whose epoch moved on is abandoned. */
  renewOnce(): Promise<void> {
    return this.renewer.renewOnce();
  }

  /** Deregisters at once, waits up to `deadlineMs` for running heads, then aborts the rest and puts them back (see the class doc). */
  async shutdown(deadlineMs: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.stopController.abort();
    this.wake();
    await Promise.all(this.loops);
    await this.backend.partitions.memberRemove({ member: this.owner }).catch((error) => this.report("partition deregistration", error));
    const deadline = new AbortController();
    const allDone = Promise.all([...this.runs]).then(() => deadline.abort());
    await Promise.race([allDone, this.options.clock.sleep(deadlineMs, deadline.signal)]);
    deadline.abort();
    // Handlers still running are abandoned (their signal aborts) and left behind, as in the worker pool;
    // their heads are put back. A run whose follower was running writes what ran before it (its head's
    // put-back then finds the lease freed and changes nothing). A lost attempt being recorded is not a running handler: left to its write.
    const stillRunning = [...this.heads.claims()]
      .filter((h) => !h.abandoned && !h.timedOut && !(h.job as ClaimedPartitionJob).lostAttempt)
      .map((h) => this.heads.runOf(h)?.head ?? h); // a run is put back by its head (its followers were never written)
    for (const h of this.heads.claims()) this.executor.abandon(h, new ServerStoppedError(`job ${h.id} was still running at the shutdown deadline`));
    await Promise.all([...this.runs]); // every chain ends at once now: none waits for an aborted handler
    await this.putBack(stillRunning, deadlineMs);
    await this.renewer.stop();
    await this.executor.stop();
  }

  /** Puts abandoned heads back (noted `shutdown`) and frees their partitions; a failed write leaves them to lease expiry. */
  private async putBack(heads: HeldClaim[], deadlineMs: number): Promise<void> {
    if (heads.length === 0) return;
    const reason = `still running at the shutdown deadline (${deadlineMs} ms): put back, attempt not counted`;
    try {
      const { released } = await this.backend.partitions.headRelease({
        owner: this.owner,
        claims: heads.map((h) => h.head!),
        now: this.options.clock.now(),
        reason: "shutdown",
      });
      const put = new Set(released.map((c) => c.id));
      for (const h of heads) {
        if (put.has(h.id)) this.options.onEvent({ type: "job-released", jobId: h.id, jobType: h.job.jobType, attempt: h.attempt, reason });
      }
    } catch (error) {
      this.report("partition release", error);
    }
  }

  // ---- claims -------------------------------------------------------------

  private async runFetcher(): Promise<void> {
    const { clock, pollIntervalMs, leaseMs } = this.options;
    while (!this.stopping) {
      const signal = this.wakeController.signal;
      let waitMs = pollIntervalMs;
      const free = this.slots - this.heads.size;
      if (free > 0 && this.pauses && !this.pauses.current) await this.pauses.refresh(); // not awaited when current: see ClaimFetcher
      const jobTypes = this.claimableTypes();
      const candidates =
        free > 0 && jobTypes.length > 0
          ? this.membership.partitions.filter((p) => !this.heads.holds(partitionKey(p)) && !this.pauses?.topicPaused(p.topic))
          : [];
      if (candidates.length > 0) {
        try {
          const now = clock.now();
          const leaseExpiresAt = now + leaseMs;
          const head = this.backend.partitions.headClaim({
            owner: this.owner,
            partitions: candidates,
            limit: free,
            now,
            leaseExpiresAt,
            jobTypes,
            runMax: this.options.partitionRunMax ?? 1,
          });
          // Tracked (X4): a pause made through this server resolves once this claim, made with the set read before, has settled.
          const { claimed, nextRunAt } = await (this.pauses === null ? head : this.pauses.track(head));
          this.metrics?.partitionClaim(
            new Set(candidates.map((p) => p.topic)),
            claimed.map((c) => c.topic),
          );
          for (const job of claimed) {
            if (!job.lostAttempt) this.onClaimed?.(job, now, job.runAt);
            this.startChain(this.heads.hold(job, leaseExpiresAt), null);
          }
          if (nextRunAt !== null) waitMs = Math.max(0, Math.min(waitMs, nextRunAt - clock.now()));
        } catch (error) {
          if (this.stopping) break;
          this.report("partition claim", error);
        }
      }
      if (this.stopping) break;
      if (!signal.aborted) await clock.sleep(waitMs, signal);
      if (signal.aborted) this.wakeController = new AbortController();
    }
  }

  /** Runs a chain of runs from `claim`, a head or a follower (whose outcome is already known when given: a timeout). */
  private startChain(claim: HeldClaim, outcome: JobOutcome | null): void {
    const workerId = this.ids.take();
    const run: Promise<void> = this.runChain(this.heads.runOf(claim)!, claim, outcome, workerId)
      .catch((error) => this.report("partition head", error))
      .finally(() => {
        this.ids.release(workerId);
        this.runs.delete(run);
        this.wake();
      });
    this.runs.add(run);
  }

  /**
   * Runs a run from `claim` (its head, then each follower while they
   * succeed), writes its outcomes, and goes on with the next run when the
   * same write claimed it. A lost attempt (see {@link ClaimedPartitionJob.lostAttempt})
   * is not run: its outcome is the retry decision's, as the stuck-job sweep's for regular jobs.
   */
  private async runChain(run: Run, claim: HeldClaim, known: JobOutcome | null, workerId: number): Promise<void> {
    let outcome = known;
    try {
      for (;;) {
        if (outcome === null) outcome = await this.attempt(claim, workerId);
        if (outcome === null && claim.timedOut) return; // its chain goes on from the executor's onTimedOut
        if (outcome === null || claim.abandoned) {
          // Nothing of the run is written, unless a follower was cancelled while it ran, or given up at the
          // shutdown deadline: what ran before it is (a stale epoch writes nothing anyway).
          if (claim === run.head || !(claim.cancelled || this.stopping)) break;
          outcome = null;
        } else if (claim === run.head) run.headOutcome = outcome;
        else run.ran.push({ claim, startedAt: claim.startedAt, outcome });
        const follower = outcome?.kind === "success" ? this.nextFollower(run) : null;
        if (follower !== null) {
          claim = this.holdFollower(run, follower);
          outcome = null;
          continue;
        }
        const next = await this.finish(run);
        if (!next) break;
        this.heads.release(run);
        run = this.heads.runOf(this.heads.hold(next.job, next.leaseExpiresAt))!;
        claim = run.head;
        outcome = null;
      }
    } catch (error) {
      this.heads.release(run);
      throw error;
    }
    this.heads.release(run);
  }

  /** The run's next follower to start, or null when the run ends here (none left, shutdown, lease lost, no longer owned, paused, run long enough). */
  private nextFollower(run: Run): ClaimedPartitionJob | null {
    const f = run.followers[run.ran.length];
    if (f === undefined || this.stopping || run.current.abandoned || !this.membership.owns(run.key)) return null;
    if (this.options.clock.now() - run.head.startedAt >= PARTITION_RUN_MAX_MS) return null;
    if (this.pauses?.topicPaused(f.topic) || !this.claimableTypes().includes(f.jobType)) return null;
    return f;
  }

  /** Makes a follower the run's running claim (see {@link HeldRuns.holdFollower}), told as a head claimed. */
  private holdFollower(run: Run, job: ClaimedPartitionJob): HeldClaim {
    const now = this.options.clock.now();
    const claim = this.heads.holdFollower(run, job, now);
    this.onClaimed?.(job, now, now); // it became runnable as the one before it ended, as a head its predecessor's finish claims
    this.metrics?.partitionClaim([], [job.topic]); // it runs as its partition's head: counted as a head claimed
    return claim;
  }

  /** The head's outcome: the lost attempt's retry decision, or the executor's run (null once the claim is aborted, without waiting for its handler). */
  private attempt(held: HeldClaim, workerId: number): Promise<JobOutcome | null> | JobOutcome {
    const job = held.job as ClaimedPartitionJob;
    held.workerId = workerId;
    if (job.lostAttempt) {
      this.options.onEvent({ type: "maintenance", task: "rescue-head", count: 1 });
      return retryDecision(this.options, job, lostAttemptError(job.attempt));
    }
    return new Promise((resolve) => {
      held.onAbort = () => resolve(null);
      void this.executor.run(held, workerId).then(resolve);
    });
  }

  /** The type's retention for an outcome's stage (J11); a job with `successMs: 0` expires at once (deleted by the next sweep). */
  private retentionOf(held: HeldClaim, outcome: JobOutcome): number {
    return finishRetentionMs(this.options.handlers[held.job.jobType]?.retention, outcome.kind) ?? this.options.retentionMs;
  }

  /** Stores the run's outcomes (retrying a failed write until shutdown); the next run when it was claimed in the same write. */
  private async finish(run: Run): Promise<{ job: ClaimedPartitionJob; leaseExpiresAt: number } | null> {
    const { clock, leaseMs } = this.options;
    const held = run.head;
    const claim = held.head!;
    const outcome = run.headOutcome!;
    const retentionMs = this.retentionOf(held, outcome);
    const followers = run.ran.map((r) => ({
      id: r.claim.id,
      attempt: r.claim.attempt,
      startedAt: r.startedAt,
      outcome: r.outcome,
      retentionMs: this.retentionOf(r.claim, r.outcome),
    }));
    for (;;) {
      const now = clock.now();
      const leaseExpiresAt = now + leaseMs;
      const jobTypes = this.claimableTypes();
      const claimNext =
        !this.stopping && this.membership.owns(partitionKey(claim)) && jobTypes.length > 0 && !this.pauses?.topicPaused(claim.topic)
          ? { leaseExpiresAt, jobTypes, runMax: this.options.partitionRunMax ?? 1 }
          : undefined;
      try {
        const result = await this.backend.partitions.headFinish({ owner: this.owner, claim, outcome, now, retentionMs, followers, claimNext });
        const written = run.ran.slice(0, result.applied ? (result.followersApplied ?? 0) : 0);
        if (this.metrics !== null) {
          if (result.applied) this.metrics.outcomeWritten(held.job, outcome, now);
          for (const r of written) this.metrics.outcomeWritten(r.claim.job, r.outcome, now);
          if (claimNext) this.metrics.partitionClaim([claim.topic], result.next ? [claim.topic] : []);
        }
        if (result.applied && this.options.eventsEnabled) {
          if (!(held.job as ClaimedPartitionJob).lostAttempt) this.options.onEvent(attemptEvent(held.job, outcome));
          for (const r of written) this.options.onEvent(attemptEvent(r.claim.job, r.outcome));
        }
        if (result.released > 0) this.onReleased?.();
        if (result.next) this.onClaimed?.(result.next, now, now);
        return result.next ? { job: result.next, leaseExpiresAt } : null;
      } catch (error) {
        this.report("partition complete", error);
        // nothing written: the lease expires and the head is claimed again
        if (this.stopping || held.abandoned || (run.current.abandoned && !run.current.cancelled)) return null;
        await clock.sleep(50, this.stopController.signal);
      }
    }
  }

  /** The handled job types not paused (X4). */
  private claimableTypes(): readonly string[] {
    return this.pauses?.claimableTypes(this.jobTypes) ?? this.jobTypes;
  }

  private report(where: string, error: unknown): void {
    this.options.onEvent(errorEvent(where, error));
  }
}

/** The abort reason of a wake-up (not an error; nobody reads it). */
const WAKE = Symbol("wake");
