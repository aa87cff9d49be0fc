/**
 * The claim -> run -> commit loop of one server.
 *
 * ```text
 *   fetcher ──claim batch──► buffer ──► worker 1..N ──outcome──► CompletionBatcher ──► database
 *      ▲                                   │ (takes its next job at once)
 *      └── wake: local enqueue, another process's commit, freed capacity, poll timer, next due time
 * ```
 *
 * Claim lifecycle (per `(jobId, attempt)`):
 *
 * ```text
 *   claimed ─► buffered ─► running ─► outcome submitted ─► written (held no more)
 *      │          │  │         │
 *      │          │  │         ├─(lease lost / timeout)─► abandoned: signal aborts, result discarded
 *      │          │  │         └─(shutdown deadline)─► abandoned, and put back (releaseMany): attempt undone
 *      │          │  └─(lease already expired when a worker takes it)─► skipped: never run, renewed no
 *      │          │                                                      more, left to the stuck-job sweep
 *      │          └─(shutdown)─► released back to its earlier stage
 *      └─ every held claim's lease is renewed by the LeaseRenewer until written
 * ```
 *
 * The {@link ClaimFetcher} keeps a target of claims in flight (running
 * plus buffered), paced by {@link ClaimPacer}: what the workers finish in a
 * few claim round trips. Claimed-but-unstarted jobs hold a renewed lease
 * like running ones and are released at shutdown.
 *
 * Supervision: a worker loop that throws (a bug in later, never a handler
 * error) is replaced; a handler that outlives `jobTimeoutMs` is failed by
 * the executor's watchdog, and its worker slot gets a fresh loop while the
 * old promise is abandoned.
 *
 * Each attempt is run by the {@link JobExecutor} (lease check, decode,
 * context, signal, timeout, retry decision), as the partition runner's are;
 * this pool only claims, buffers and batches the outcomes. The per-job path
 * allocates little: the claim is its own finish record ({@link HeldClaim}).
 */
import type { Backend, ClaimedJob, JobOutcome } from "../backend/backend.js";
import { describeThrown, ServerStoppedError } from "../errors.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import { attemptEvent, errorEvent } from "../events/server-event.js";
import { ClaimFetcher } from "./claim-fetcher.js";
import { ClaimPacer } from "./claim-pacer.js";
import { CompletionBatcher } from "./completion-batcher.js";
import { finishRetentionMs } from "../core/job-retention.js";
import { HeldClaim } from "./held-claim.js";
import { JobExecutor } from "./job-executor.js";
import type { WorkerPoolConfig } from "./worker-pool-config.js";
import { LeaseRenewer } from "./lease-renewer.js";
import type { WorkerIds } from "./worker-ids.js";
import type { PauseWatch } from "./pause-watch.js";
import { handlerLimit } from "../config/handler-registration.js";
import type { ServerMetrics, WorkerState } from "../metrics/server-metrics.js";

interface WorkerSlot {
  id: number;
  stopRequested: boolean;
  current: HeldClaim | null;
  /** Resolves when the slot's loop exits. */
  exited: Promise<void>;
  /** Bumped when the loop is replaced, so an abandoned loop exits when it wakes. */
  generation: number;
}

export class WorkerPool<C> {
  private readonly held = new Map<string, HeldClaim>();
  private readonly buffer: HeldClaim[] = [];
  private readonly idle: ((claim: HeldClaim | null) => void)[] = [];
  private readonly slots: WorkerSlot[] = [];
  private stopping = false;
  private readonly fetcher: ClaimFetcher;
  private readonly batcher: CompletionBatcher<HeldClaim>;
  private readonly renewer: LeaseRenewer;
  /** X9: this server's job types with a limit in their handler options: the fetcher claims them by the limited step, and a finish of one wakes it. */
  private readonly limitedTypes: ReadonlySet<string>;
  private readonly pacer: ClaimPacer;
  private readonly executor: JobExecutor<C>;
  /**
   * Test seam (set through `@later/runtime/testing`): called in a worker loop
   * right after it took a claim; a throw there is a dying worker loop.
   */
  loopFault: (() => void) | null = null;
  /** Told when written outcomes released waiting continuations (some may be partitioned jobs). */
  onReleased: (() => void) | null = null;
  /** Told of every job claimed, with the claim's time (the dashboard's dispatch wait). */
  onClaimed: ((job: ClaimedJob, claimedAt: number) => void) | null = null;
  /** X4: the paused set, read before a claim at most once per poll interval; paused types are left out of the claim. Null: none honoured. */
  set pauses(pauses: PauseWatch | null) {
    this.fetcher.pauses = pauses;
  }

  constructor(
    private readonly options: WorkerPoolConfig<C>,
    private readonly backend: Backend,
    owner: string,
    publisher: JobPublisher<unknown>,
    /** Numbers the worker slots (shared with the partition runner, so `worker_id` labels never collide). */
    private readonly ids: WorkerIds,
    /** Where written outcomes are recorded (attempts: the executor's metrics layer); null with metrics off. */
    private readonly metrics: ServerMetrics | null,
  ) {
    const jobTypes = Object.keys(options.handlers);
    this.limitedTypes = new Set(jobTypes.filter((t) => handlerLimit(t, options.handlers[t]!) !== null));
    this.pacer = new ClaimPacer(backend.capabilities.claimBatch);
    this.fetcher = new ClaimFetcher(options, backend, owner, jobTypes, this.limitedTypes, this.pacer, {
      activeWorkers: () => this.slots.filter((s) => !s.stopRequested).length,
      inFlight: () => this.buffer.length + this.busyCount,
      accept: (job, leaseExpiresAt, claimedAt) => {
        this.onClaimed?.(job, claimedAt);
        this.accept(job, leaseExpiresAt);
      },
    });
    const reportError = (where: string) => (error: unknown) => options.onEvent(errorEvent(where, error));
    this.batcher = new CompletionBatcher<HeldClaim>(
      backend,
      options.clock,
      options.retentionMs,
      (claim, applied) => this.onFinished(claim, applied),
      (result) => {
        if (result.released > 0 || (result.freed ?? 0) > 0) {
          this.wake();
          this.onReleased?.();
        }
      },
      reportError("complete"),
      undefined,
      this.limitedTypes.size === 0 ? null : (claim) => this.limitedTypes.has(claim.job.jobType),
    );
    this.renewer = new LeaseRenewer({
      clock: options.clock,
      leaseMs: options.leaseMs,
      renew: LeaseRenewer.jobLeases(backend, owner),
      heldClaims: () => [...this.held.values()],
      onLost: (lost) => this.onLeasesLost(lost),
      onCancelled: (cancelled) => this.onCancelled(cancelled),
      onError: reportError("lease renewal"),
    });
    this.executor = new JobExecutor(options, publisher, (claim, outcome) => this.timedOut(claim, outcome), owner);
  }

  /** Live worker count. */
  get workerCount(): number {
    return this.slots.length;
  }

  /** Claimed jobs no worker has started yet. */
  get bufferedCount(): number {
    return this.buffer.length;
  }

  /** Workers currently running a handler. */
  get busyCount(): number {
    let busy = 0;
    for (const slot of this.slots) if (slot.current !== null) busy++;
    return busy;
  }

  /** The live workers, for `later_workers`. */
  *workerStates(): Generator<WorkerState> {
    for (const slot of this.slots) yield { id: slot.id, busy: slot.current !== null };
  }

  start(): void {
    for (let i = 0; i < this.options.workerCount; i++) this.addWorker();
    this.renewer.start();
    this.fetcher.start();
    this.executor.start();
  }

  /**
   * Nudges the fetcher (see {@link ClaimFetcher.wake}): `"work"` when new work may be ready, `"capacity"` when a
   * worker freed up, `"freed"` when a limited type's job finished.
   */
  wake(reason: "work" | "capacity" | "freed" = "work"): void {
    this.fetcher.wake(reason);
  }

  addWorker(): number {
    const slot: WorkerSlot = { id: this.ids.take(), stopRequested: false, current: null, exited: Promise.resolve(), generation: 0 };
    this.slots.push(slot);
    this.spawn(slot);
    this.wake();
    return this.slots.length;
  }

  /** Stops one worker after its current job; false when only one is left. */
  async removeWorker(): Promise<boolean> {
    const candidates = this.slots.filter((s) => !s.stopRequested);
    if (candidates.length <= 1) return false;
    const slot = candidates.find((s) => s.current === null) ?? candidates[candidates.length - 1]!;
    slot.stopRequested = true;
    this.resolveIdleSlot();
    await slot.exited;
    return true;
  }

  /**
   * Graceful stop: claims no more, releases buffered claims, waits up to
   * `deadlineMs` for running handlers to finish and commit, then aborts the
   * rest (their signal fires) and puts their jobs back in one write
   * (`jobs.releaseMany`: ready now, the attempt undone, the history entry
   * noted `shutdown`, docs/semantics.md J9), each with a `job-released`
   * event. Buffered claims go back with the same note. A put-back that
   * fails (the database away) leaves them to lease recovery, the backstop
   * for a crash.
   */
  async shutdown(deadlineMs: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const deadlineAt = this.options.clock.now() + deadlineMs;
    await this.fetcher.stop();
    const unstarted = this.buffer.splice(0);
    for (const h of unstarted) this.held.delete(h.job.id);
    for (const resolve of this.idle.splice(0)) resolve(null);
    if (unstarted.length > 0) {
      await this.backend.jobs
        .releaseMany({ claims: unstarted.map((h) => ({ id: h.job.id, attempt: h.job.attempt })), now: this.options.clock.now(), reason: "shutdown" })
        .catch((error) => this.options.onEvent(errorEvent("release", error)));
    }
    const deadline = new AbortController();
    const allExited = Promise.all(this.slots.map((s) => s.exited)).then(() => deadline.abort());
    await Promise.race([allExited, this.options.clock.sleep(deadlineMs, deadline.signal)]);
    const stillRunning: HeldClaim[] = [];
    for (const slot of this.slots) {
      const h = slot.current;
      if (!h || h.abandoned || h.timedOut) continue;
      this.abandon(h, new ServerStoppedError(`job ${h.job.id} was still running at the shutdown deadline`));
      stillRunning.push(h);
    }
    deadline.abort();
    await this.putBack(stillRunning, deadlineMs);
    // Outcomes are written as long as writes succeed; one that fails past the deadline (the database
    // unreachable: an outage) is dropped, to lease recovery, so that shutdown keeps its deadline.
    await this.batcher.drain(deadlineAt);
    this.batcher.stop();
    await this.renewer.stop();
    await this.executor.stop();
    this.slots.length = 0;
  }

  /** Puts abandoned running claims back (their late outcomes are never submitted: the executor returns null for them). */
  private async putBack(claims: HeldClaim[], deadlineMs: number): Promise<void> {
    if (claims.length === 0) return;
    const reason = `still running at the shutdown deadline (${deadlineMs} ms): put back, attempt not counted`;
    try {
      const { released } = await this.backend.jobs.releaseMany({
        claims: claims.map((h) => ({ id: h.id, attempt: h.attempt })),
        now: this.options.clock.now(),
        reason: "shutdown",
      });
      const put = new Set(released.map((k) => k.id));
      for (const h of claims) {
        if (put.has(h.id)) this.options.onEvent({ type: "job-released", jobId: h.id, jobType: h.job.jobType, attempt: h.attempt, reason });
      }
    } catch (error) {
      this.options.onEvent(errorEvent("release", error));
    }
  }

  private accept(job: ClaimedJob, leaseExpiresAt: number): void {
    const claim = new HeldClaim(job, leaseExpiresAt);
    this.held.set(job.id, claim);
    const waiter = this.idle.shift();
    if (waiter) waiter(claim);
    else this.buffer.push(claim);
  }

  private onLeasesLost(lost: HeldClaim[]): void {
    for (const h of lost) {
      if (this.held.get(h.id) !== h) continue;
      const i = this.buffer.indexOf(h);
      if (i >= 0) this.buffer.splice(i, 1);
      this.held.delete(h.id);
      this.executor.leaseLost(h);
    }
  }

  /** Claims whose job was cancelled (X3): given up through the executor, nothing written. */
  private onCancelled(cancelled: ReadonlyMap<HeldClaim, string | null>): void {
    for (const [h, reason] of cancelled) {
      if (this.held.get(h.id) !== h) continue;
      const i = this.buffer.indexOf(h);
      if (i >= 0) this.buffer.splice(i, 1);
      this.held.delete(h.id);
      this.executor.cancel(h, reason);
    }
  }

  /** Renews every held claim's lease now (a cancel was notified, X3: a cancelled claim is aborted at once). */
  renewOnce(): Promise<void> {
    return this.renewer.renewOnce();
  }

  private abandon(h: HeldClaim, reason: Error): void {
    this.held.delete(h.id);
    this.executor.abandon(h, reason);
  }

  /** The executor's watchdog failed `claim` (past `jobTimeoutMs`): writes the failure now and gives its slot a fresh loop (the hung handler is left behind). */
  private timedOut(claim: HeldClaim, outcome: JobOutcome): void {
    this.submit(claim, outcome);
    const slot = this.slots.find((s) => s.current === claim);
    if (!slot) return;
    slot.current = null;
    if (this.stopping) return;
    this.options.onEvent({ type: "worker", action: "replaced", workers: this.slots.length, reason: "job timeout" });
    this.spawn(slot);
  }

  // ---- workers ------------------------------------------------------------

  private spawn(slot: WorkerSlot): void {
    const generation = ++slot.generation;
    slot.exited = this.runWorker(slot, generation).catch((error) => {
      // A bug in the loop itself: replace it, keep the slot.
      if (slot.generation !== generation || this.stopping) return;
      this.options.onEvent({ type: "worker", action: "replaced", workers: this.slots.length, reason: describeThrown(error) });
      // Its claim stops being renewed, so the stuck-job sweep retries it.
      if (slot.current) this.abandon(slot.current, new Error(`worker loop failed: ${describeThrown(error)}`));
      slot.current = null;
      this.spawn(slot);
      return slot.exited;
    });
  }

  private async runWorker(slot: WorkerSlot, generation: number): Promise<void> {
    while (!this.stopping && !slot.stopRequested && slot.generation === generation) {
      const claim = this.buffer.shift() ?? (await new Promise<HeldClaim | null>((r) => this.idle.push(r)));
      if (!claim) continue;
      if (claim.abandoned) continue;
      if (this.stopping || slot.generation !== generation) {
        this.buffer.unshift(claim);
        break;
      }
      slot.current = claim;
      this.loopFault?.();
      const inFlightBefore = this.buffer.length + this.busyCount;
      await this.run(claim, slot.id);
      if (claim.timedOut) return; // the watchdog failed it and gave this slot a fresh loop
      slot.current = null;
      this.pacer.jobFinished();
      if (inFlightBefore - 1 <= this.pacer.target(this.slots.length) / 2) this.wake("capacity");
    }
    if (slot.stopRequested) {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      this.ids.release(slot.id);
      this.options.onEvent({ type: "worker", action: "removed", workers: this.slots.length });
    }
  }

  private resolveIdleSlot(): void {
    // Wake idle loops so a stop-requested one can exit; the others wait again.
    for (const resolve of this.idle.splice(0)) resolve(null);
  }

  /** Runs one claim's attempt and submits its outcome (none when it was skipped, abandoned or timed out meanwhile). */
  private async run(claim: HeldClaim, workerId: number): Promise<void> {
    const outcome = await this.executor.run(claim, workerId);
    if (outcome !== null) this.submit(claim, outcome);
    else if (claim.abandoned && !claim.timedOut && this.held.get(claim.id) === claim) this.held.delete(claim.id); // skipped: renewed no more
  }

  private submit(claim: HeldClaim, outcome: JobOutcome): void {
    claim.outcome = outcome;
    claim.retentionMs = finishRetentionMs(this.options.handlers[claim.job.jobType]?.retention, outcome.kind);
    this.batcher.submit(claim);
  }

  /** The batcher wrote (or dropped) a claim's outcome. */
  private onFinished(claim: HeldClaim, applied: boolean): void {
    if (this.held.get(claim.id) === claim) this.held.delete(claim.id);
    if (applied) this.metrics?.outcomeWritten(claim.job, claim.outcome, this.options.clock.now());
    if (applied && this.options.eventsEnabled) this.options.onEvent(attemptEvent(claim.job, claim.outcome));
    // A retry may be due now. X9: a limited type's slot is free again; its waiting jobs may start now.
    if (claim.outcome.kind === "retry") this.wake();
    else if (applied && this.limitedTypes.has(claim.job.jobType)) this.wake("freed");
  }
}
