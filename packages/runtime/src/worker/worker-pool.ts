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
 *      │          │           │
 *      │          │           └─(lease lost / timeout / shutdown deadline)─► abandoned: signal aborts,
 *      │          │                                                          result discarded
 *      │          └─(shutdown)─► released back to its earlier stage
 *      └─ every held claim's lease is renewed by the LeaseRenewer until written
 * ```
 *
 * The fetcher keeps a target of claims in flight (running plus buffered):
 * `2 × workers`, raised towards 32 (at most `4 × workers`) because larger
 * batches amortise each write transaction. It claims again once half of
 * the target is free, so a free worker starts its next job without a round
 * trip and each claim is a batch. Claimed-but-unstarted jobs hold a renewed
 * lease like running ones and are released at shutdown.
 *
 * Supervision: a worker loop that throws (a bug in later, never a handler
 * error) is replaced; a handler that outlives `jobTimeoutMs` fails its
 * attempt and its worker slot gets a fresh loop while the old promise is
 * abandoned.
 */
import type { Backend, ClaimKey, ClaimedJob, JobOutcome } from "../backend/backend.js";
import { describeThrown, JobTimeoutError, LeaseLostError, PayloadDecodeError, ServerStoppedError } from "../errors.js";
import type { JobPublisher } from "../server/publisher.js";
import type { ResolvedServerOptions } from "../server/server-options.js";
import { CompletionBatcher } from "./completion-batcher.js";
import { failureOutcome } from "./failure-outcome.js";
import { LeaseRenewer } from "./lease-renewer.js";

/** The abort reason of a wake-up (not an error; nobody reads it). */
const WAKE = Symbol("wake");

interface HeldClaim {
  job: ClaimedJob;
  /** Created on first use of `ctx.signal` (most handlers never read it; creating one per job is measurable). */
  controller: AbortController | null;
  /** Why the claim was abandoned, for a signal created afterwards. */
  abortReason: Error | null;
  /** When the handler started (clock ms), for the timeout watchdog. */
  startedAt: number;
  /** Lease lost or abandoned at shutdown: its outcome is not written. */
  abandoned: boolean;
  timedOut?: boolean;
  /** Set while running: fails the attempt when the watchdog finds it past `jobTimeoutMs`. */
  onTimeout?: () => void;
}

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
  private nextWorkerId = 1;
  private stopping = false;
  private fetchLoop: Promise<void> | null = null;
  private wakeController = new AbortController();
  /** False after a claim came back short, until a "work" wake or the poll timer. */
  private moreMayBeReady = true;
  private readonly batcher: CompletionBatcher;
  private readonly renewer: LeaseRenewer;
  private readonly jobTypes: string[];
  private readonly stopSignal = new AbortController();
  /**
   * Test seam (set through `@later/runtime/testing`): called in a worker loop
   * right after it took a claim; a throw there is a dying worker loop.
   */
  loopFault: (() => void) | null = null;
  /** Told when written outcomes released waiting continuations (some may be partitioned jobs). */
  onReleased: (() => void) | null = null;
  private watchdog: Promise<void> | null = null;

  constructor(
    private readonly options: ResolvedServerOptions<C>,
    private readonly backend: Backend,
    private readonly owner: string,
    private readonly publisher: JobPublisher,
  ) {
    this.jobTypes = Object.keys(options.handlers);
    const reportError = (where: string) => (error: unknown) =>
      options.onEvent({ type: "error", where, error: describeThrown(error) });
    this.batcher = new CompletionBatcher(backend, options.clock, options.retentionMs, (result) => {
      if (result.released > 0) {
        this.wake();
        this.onReleased?.();
      }
    }, reportError("complete"));
    this.renewer = new LeaseRenewer(backend, options.clock, owner, options.leaseMs,
      () => [...this.held.values()].map((h) => ({ id: h.job.id, attempt: h.job.attempt })),
      (lost) => this.onLeasesLost(lost), reportError("lease renewal"));
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
    return this.slots.filter((s) => s.current !== null).length;
  }

  start(): void {
    for (let i = 0; i < this.options.workerCount; i++) this.addWorker();
    this.renewer.start();
    this.fetchLoop ??= this.runFetcher();
    if (this.options.jobTimeoutMs !== null) this.watchdog ??= this.runWatchdog(this.options.jobTimeoutMs);
  }

  /**
   * Nudges the fetcher. `"work"`: new work may be ready (an enqueue, another
   * process's commit, a retry, released continuations). `"capacity"`: a
   * worker freed up; the fetcher claims then only if its last claim came
   * back full or new work was signalled since, so a drained queue costs no
   * empty claim transactions.
   */
  wake(reason: "work" | "capacity" = "work"): void {
    if (reason === "work") this.moreMayBeReady = true;
    this.wakeController.abort(WAKE); // a reason of ours: abort() without one builds a DOMException, measurable per job
  }

  private claimTarget(workers: number): number {
    const { perWorker, max } = this.backend.capabilities.claimBatch;
    return Math.max(workers * 2, Math.min(max, workers * perWorker));
  }

  addWorker(): number {
    const slot: WorkerSlot = { id: this.nextWorkerId++, stopRequested: false, current: null, exited: Promise.resolve(), generation: 0 };
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
   * rest (left to lease recovery).
   */
  async shutdown(deadlineMs: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.stopSignal.abort();
    this.wake();
    await this.fetchLoop;
    const unstarted = this.buffer.splice(0);
    for (const h of unstarted) this.held.delete(h.job.id);
    for (const resolve of this.idle.splice(0)) resolve(null);
    if (unstarted.length > 0) {
      await this.backend.jobReleaseMany({ claims: unstarted.map((h) => ({ id: h.job.id, attempt: h.job.attempt })), now: this.options.clock.now() })
        .catch((error) => this.options.onEvent({ type: "error", where: "release", error: describeThrown(error) }));
    }
    const deadline = new AbortController();
    const allExited = Promise.all(this.slots.map((s) => s.exited)).then(() => deadline.abort());
    await Promise.race([allExited, this.options.clock.sleep(deadlineMs, deadline.signal)]);
    for (const slot of this.slots) {
      const h = slot.current;
      if (h && !h.abandoned) this.abandon(h, new ServerStoppedError(`job ${h.job.id} was still running at the shutdown deadline`));
    }
    deadline.abort();
    await this.batcher.drain();
    this.batcher.stop();
    await this.renewer.stop();
    await this.watchdog;
    this.slots.length = 0;
  }

  // ---- fetcher ------------------------------------------------------------

  private async runFetcher(): Promise<void> {
    const { clock, pollIntervalMs, leaseMs } = this.options;
    while (!this.stopping) {
      const signal = this.wakeController.signal;
      let waitMs = pollIntervalMs;
      const workers = this.slots.filter((s) => !s.stopRequested).length;
      const inFlight = this.buffer.length + this.busyCount;
      const target = this.claimTarget(workers);
      if (inFlight <= target / 2 && workers > 0 && this.moreMayBeReady) {
        const limit = target - inFlight;
        try {
          const now = clock.now();
          this.moreMayBeReady = false;
          const claimed = await this.backend.jobClaimReady({ owner: this.owner, limit, now, leaseExpiresAt: now + leaseMs, jobTypes: this.jobTypes });
          for (const job of claimed) this.accept(job);
          if (claimed.length === limit) {
            this.moreMayBeReady = true;
            // Let completions, timers and I/O run before the next claim: with a
            // synchronous driver the whole loop would otherwise stay in microtasks.
            await new Promise<void>((r) => setImmediate(r));
            continue;
          }
          const next = await this.backend.jobNextRunAt({ jobTypes: this.jobTypes });
          // 0 when already due (the clock moved while the queries ran): claim again on the next timer turn.
          if (next !== null) waitMs = Math.max(0, Math.min(pollIntervalMs, next - clock.now()));
        } catch (error) {
          if (this.stopping) break;
          this.moreMayBeReady = true;
          this.options.onEvent({ type: "error", where: "claim", error: describeThrown(error) });
        }
      }
      if (this.stopping) break;
      if (!signal.aborted) await clock.sleep(waitMs, signal);
      if (signal.aborted) this.wakeController = new AbortController();
      else this.moreMayBeReady = true; // the poll timer (or the next due time) fired
    }
  }

  private accept(job: ClaimedJob): void {
    const claim: HeldClaim = { job, controller: null, abortReason: null, startedAt: 0, abandoned: false };
    this.held.set(job.id, claim);
    const waiter = this.idle.shift();
    if (waiter) waiter(claim);
    else this.buffer.push(claim);
  }

  private onLeasesLost(lost: ClaimKey[]): void {
    for (const key of lost) {
      const h = this.held.get(key.id);
      if (!h || h.job.attempt !== key.attempt) continue;
      const i = this.buffer.indexOf(h);
      if (i >= 0) this.buffer.splice(i, 1);
      this.abandon(h, new LeaseLostError(key.id));
    }
  }

  private abandon(h: HeldClaim, reason: Error): void {
    h.abandoned = true;
    h.abortReason = reason;
    this.held.delete(h.job.id);
    h.controller?.abort(reason);
  }

  private signalOf(h: HeldClaim): AbortSignal {
    if (!h.controller) {
      h.controller = new AbortController();
      if (h.abortReason) h.controller.abort(h.abortReason);
    }
    return h.controller.signal;
  }

  /**
   * One loop for every handler's timeout, instead of a timer per job:
   * checks the running claims every `min(jobTimeoutMs / 4, 1 s)`.
   */
  private async runWatchdog(timeoutMs: number): Promise<void> {
    const { clock } = this.options;
    while (!this.stopping) {
      await clock.sleep(Math.max(1, Math.min(Math.floor(timeoutMs / 4), 1_000)), this.stopSignal.signal);
      const now = clock.now();
      for (const slot of this.slots) {
        const h = slot.current;
        if (h && !h.abandoned && !h.timedOut && now - h.startedAt >= timeoutMs) {
          h.timedOut = true;
          h.onTimeout?.();
        }
      }
    }
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
      const replaced = await this.execute(slot, claim);
      if (replaced) return; // a fresh loop took over this slot
      slot.current = null;
      if (inFlightBefore - 1 <= this.claimTarget(this.slots.length) / 2) this.wake("capacity");
    }
    if (slot.stopRequested) {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      this.options.onEvent({ type: "worker", action: "removed", workers: this.slots.length });
    }
  }

  private resolveIdleSlot(): void {
    // Wake idle loops so a stop-requested one can exit; the others wait again.
    for (const resolve of this.idle.splice(0)) resolve(null);
  }

  /** Runs one claim to its outcome. True when the slot was handed to a fresh loop (timeout). */
  private async execute(slot: WorkerSlot, claim: HeldClaim): Promise<boolean> {
    const { job } = claim;
    const handler = this.options.handlers[job.jobType]!;
    const emit = (stage: "running" | "success" | "requeued" | "failed", error?: string) =>
      this.options.eventsEnabled && this.options.onEvent({ type: "job", jobId: job.id, jobType: job.jobType, stage, attempt: job.attempt, ...(error === undefined ? {} : { error }) });
    let payload: unknown;
    try {
      payload = (handler.decode ?? JSON.parse)(job.payload);
    } catch (cause) {
      const error = new PayloadDecodeError(job.jobType, describeThrown(cause), cause).message;
      this.finish(claim, { kind: "fail", error }, () => emit("failed", error));
      return false;
    }
    emit("running");
    const pool = this;
    const ctx = {
      app: this.options.context, jobId: job.id, jobType: job.jobType, attempt: job.attempt, publisher: this.publisher,
      get signal() { return pool.signalOf(claim); },
    };
    const timeoutMs = this.options.jobTimeoutMs;
    claim.startedAt = this.options.clock.now();
    const run = Promise.resolve().then(() => handler.handle(ctx, payload));
    const raced: Promise<unknown> = timeoutMs === null ? run : Promise.race([
      run,
      new Promise<never>((_, reject) => {
        claim.onTimeout = () => reject(new JobTimeoutError(job.id, timeoutMs));
      }),
    ]);
    let outcome: JobOutcome;
    try {
      await raced;
      outcome = { kind: "success" };
    } catch (thrown) {
      outcome = failureOutcome(this.options, handler, job, describeThrown(thrown));
    }
    claim.onTimeout = undefined;
    const timedOut = claim.timedOut === true;
    if (timedOut) {
      claim.abortReason = new JobTimeoutError(job.id, timeoutMs!);
      claim.controller?.abort(claim.abortReason);
      run.catch(() => undefined);
    }
    if (!claim.abandoned) {
      const stage = outcome.kind === "success" ? "success" : outcome.kind === "retry" ? "requeued" : "failed";
      this.finish(claim, outcome, () => emit(stage, outcome.kind === "success" ? undefined : outcome.error));
    }
    if (timedOut && !this.stopping) {
      slot.current = null;
      this.options.onEvent({ type: "worker", action: "replaced", workers: this.slots.length, reason: "job timeout" });
      this.spawn(slot);
      return true;
    }
    return false;
  }

  private finish(claim: HeldClaim, outcome: JobOutcome, onApplied: () => void): void {
    void this.batcher.submit({ id: claim.job.id, attempt: claim.job.attempt, outcome }).then((applied) => {
      if (this.held.get(claim.job.id) === claim) this.held.delete(claim.job.id);
      if (applied) onApplied();
      if (outcome.kind === "retry") this.wake();
    });
  }
}
