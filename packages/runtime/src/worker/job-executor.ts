/**
 * Runs one attempt of a claim, a regular job or a partition head: the one
 * place every attempt goes through (so metrics, progress and tracing have
 * one place to hook). The claimers differ (the worker pool batches claims
 * and completions; the partition runner finishes a head and claims the
 * next in one write); the attempt does not.
 *
 * ```text
 *   run(claim) ─► observers' before (the metrics) ─► lease still valid? ──no──► skipped (event "job-skipped"): null, nothing written
 *                   │ yes
 *                   ▼
 *                 decode ──throws──► fail (no retry can fix a payload)
 *                   ▼
 *                 "running" event, ctx (ctx.partition for heads), attempt hooks ─► handler(ctx, payload)
 *                   ├─ resolves ─► success (a value: its JSON stored with it, X6; not storable: a failure, retried per policy)
 *                   ├─ throws PermanentJobError ─► fail now (no retry, whatever the policy), noted `permanent`
 *                   ├─ throws ──► retryDecision: retry at the policy's delay, or fail (retries spent)
 *                   ├─ abandoned meanwhile (lease lost: event "job-lease-lost"; shutdown deadline) ─► null: signal aborted, nothing written
 *                   ├─ cancelled meanwhile (X3, found by a lease renewal) ─► null: signal aborted (JobCancelledError),
 *                   │                                                          nothing written, event "job-cancelled"
 *                   └─ past its timeout (watchdog) ─► timed out: signal aborted (JobTimeoutError), the retry
 *                                                      decision's outcome goes to `onTimedOut` at once; run() then resolves null
 *   each end above (a timeout's or a cancel's at once) ─► observers' after, last first
 * ```
 *
 * Timeouts: an attempt's timeout is the job's own (`EnqueueOptions.timeoutMs`,
 * stored with it), else its type's (the handler option `timeoutMs`; null
 * there: none), else the server's `jobTimeoutMs` (null: none). One watchdog
 * loop per executor checks the running claims that have one every quarter
 * of the shortest such timeout, at most every second, instead of a timer
 * per job (a claim with a shorter timeout than the current wait wakes it);
 * it starts with the executor when `jobTimeoutMs` is set, else at the first
 * attempt with a timeout. A timed-out handler is left behind (it cannot be
 * stopped), so its runner carries on from `onTimedOut` (the worker pool
 * gives the slot a fresh loop).
 *
 * Middleware (X10): one list, `middleware`, split once here. Its observer
 * entries (`AttemptObserver`: the server's metrics, first in the list)
 * see every claim handed over, a skipped one included, outside every
 * hook; its `attempt` hooks wrap the handler of every attempt that starts,
 * the first outermost. A hook that throws is the attempt's failure
 * (retried per policy). A timed-out attempt's `next()` rejects with the
 * `JobTimeoutError` at the timeout (its outcome is the watchdog's whatever
 * the hooks do), a cancelled one's (X3) with the `JobCancelledError` at
 * the cancel (nothing written). The value stored (X6) is the handler's own
 * ({@link AttemptRun.value}), not what the outermost hook resolved to.
 *
 * Cost per job: without attempt hooks (observers or not) nothing is
 * composed and no timer, race or promise is made for the timeout or the
 * lease; `ctx` is one small object, its signal made only when read. An
 * observer costs the {@link AttemptRun} (shared by all; `meta` parsed only
 * when read) and its two plain calls. Each hook adds one `next` closure
 * and its promise, a clock read for the handler's start and, with a
 * timeout (the default `jobTimeoutMs` gives every attempt one), one promise
 * racing the watchdog.
 *
 * Lifecycle: `start()` starts the watchdog (when `jobTimeoutMs` is set;
 * else the first attempt with a timeout does), `stop()` (idempotent) ends it
 * and resolves once it has exited.
 */
import type { Backend, JobOutcome } from "../backend/backend.js";
import { describeThrown, JobCancelledError, JobTimeoutError, LeaseLostError, PayloadDecodeError, PermanentJobError } from "../errors.js";
import { composeHooks, type Hook, type LaterMiddleware } from "../middleware/later-middleware.js";
import { splitAttemptMiddleware, type AttemptObserver } from "../middleware/attempt-observer.js";
import { AttemptRun } from "./attempt-run.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import { attemptEvent, type ServerEvent } from "../events/server-event.js";
import type { HandlerRegistration } from "../config/handler-registration.js";
import { type HeldClaim, JobRunContext, type ProgressWriter, SUCCESS } from "./held-claim.js";
import { retryDecision, type RetryDecisionConfig } from "../core/retry/retry-decision.js";
import { resultOutcome } from "./job-result.js";

/**
 * What the {@link JobExecutor} reads of the server's options: the handlers
 * and their context, what the retry decision reads, the backend its
 * progress writes go to, the default timeout, and where events go.
 */
export interface JobExecutorConfig<C> extends RetryDecisionConfig<C> {
  /** Handler per job type. Server option `handlers`. */
  handlers: Record<string, HandlerRegistration<C, unknown>>;
  /** Where `ctx.progress` writes. */
  backend: Backend;
  /** An attempt's timeout when neither its job nor its type sets one; null for none. Server option `jobTimeoutMs`. */
  jobTimeoutMs: number | null;
  onEvent: (event: ServerEvent) => void;
  /** False when nobody listens to per-job events, so they are not built. */
  eventsEnabled: boolean;
  /** The attempt middleware: the server's metrics (an observer entry) first, then server option `middleware`. */
  middleware: readonly LaterMiddleware[];
}

/** No throw was caught (`undefined` can be thrown). */
const NONE: unique symbol = Symbol("none");

export class JobExecutor<C> {
  /** Claims whose handler is running now with a timeout, for the watchdog. */
  private readonly running = new Set<HeldClaim>();
  /**
   * The attempts running on the plain path (no attempt hook) as the observers (the metrics) see them: a
   * timeout or a cancel reports their end to the observers at once, as `next()` rejecting does inside hooks.
   */
  private readonly observed = new Map<HeldClaim, AttemptRun>();
  private started = false;
  private stopped = false;
  private watchdog: Promise<void> | null = null;
  /** The watchdog's current wait: its length, and the controller that ends it early (a shorter timeout arrived, or stop). */
  private wait: { ms: number; controller: AbortController } | null = null;
  /** The attempt hooks around {@link handle}; null without any. Each `next()` resolves with the handler's value (X6). */
  private readonly wrapped: ((run: AttemptRun) => Promise<unknown>) | null;
  /** The observer entries of the middleware list, in order: told of every claim handed over. */
  private readonly observers: readonly AttemptObserver[];

  constructor(
    private readonly options: JobExecutorConfig<C>,
    private readonly publisher: JobPublisher<unknown>,
    /** Told of an attempt the watchdog failed, with the outcome to write; the handler is still running, abandoned. */
    private readonly onTimedOut: (claim: HeldClaim, outcome: JobOutcome) => void,
    /** The lease owner written on this server's claims: a handler's progress is stored only under it. */
    private readonly owner: string,
  ) {
    const { hooks, observers } = splitAttemptMiddleware(options.middleware);
    this.observers = observers;
    this.wrapped = composeHooks(hooks as Hook<AttemptRun, unknown>[], (run) => this.handle(run), "attempt");
  }

  /** `ctx.progress`: one fenced update of the job's row (see `JobStore.progressSet`). */
  private readonly writeProgress: ProgressWriter = (claim, progress) =>
    this.options.backend.jobs.progressSet({ id: claim.id, attempt: claim.attempt, owner: this.owner, progress });

  start(): void {
    this.started = true;
    if (this.options.jobTimeoutMs !== null) this.startWatchdog();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wait?.controller.abort();
    await this.watchdog;
  }

  /**
   * Runs one attempt of `claim`. Resolves to the outcome to write, or null
   * when nothing may be written: the lease had expired before the start,
   * the claim was abandoned meanwhile, or it timed out (its outcome went to
   * `onTimedOut`). `workerId`: the worker running it, for metrics. Never rejects.
   */
  async run(claim: HeldClaim, workerId: number): Promise<JobOutcome | null> {
    claim.workerId = workerId;
    if (this.wrapped === null) return this.plain(claim);
    const run = new AttemptRun(claim, this.options.clock.now());
    for (const observer of this.observers) observer.before(run);
    await this.attempt(run); // never rejects
    this.ended(run);
    return run.result;
  }

  /**
   * {@link run} without attempt hooks: nothing composed, and no race promise for the timeout or a cancel
   * (the handler is awaited; the watchdog and `cancel` act beside it). The observers, when there are any
   * (the metrics), get their {@link AttemptRun} and their two calls here, the end reported at once by a
   * timeout or a cancel ({@link observed}).
   */
  private async plain(claim: HeldClaim): Promise<JobOutcome | null> {
    const { options } = this;
    const job = claim.job;
    const now = options.clock.now();
    const observers = this.observers;
    const run = observers.length === 0 ? null : new AttemptRun(claim, now);
    if (run !== null) for (const observer of observers) observer.before(run);
    if (now >= claim.leaseExpiresAt) {
      if (run !== null) run.skipped = true;
      return this.endPlain(run, this.skip(claim, now));
    }
    const handler = options.handlers[job.jobType]!;
    let payload: unknown;
    try {
      payload = handler.decode === undefined ? JSON.parse(job.payload) : handler.decode(job.payload);
    } catch (cause) {
      return this.endPlain(run, { kind: "fail", error: new PayloadDecodeError(job.jobType, describeThrown(cause), cause).message });
    }
    if (run !== null) this.observed.set(claim, run);
    if (options.eventsEnabled) options.onEvent(attemptEvent(job, "running"));
    claim.startedAt = now;
    this.watch(claim, handler.timeoutMs);
    let outcome = SUCCESS;
    try {
      const value = await handler.handle(new JobRunContext(options.context, this.publisher, claim, this.writeProgress), payload);
      if (value !== undefined && !claim.timedOut) outcome = resultOutcome(options, job, value); // X6: stored with the success
    } catch (thrown) {
      if (!claim.timedOut) outcome = this.failure(job, thrown);
    }
    this.running.delete(claim);
    if (run !== null) this.observed.delete(claim);
    return this.endPlain(run, claim.timedOut || claim.abandoned ? null : outcome);
  }

  /** The plain path's end, `result`: the observers see it (when there are any), unless a timeout or a cancel reported it first. */
  private endPlain(run: AttemptRun | null, result: JobOutcome | null): JobOutcome | null {
    if (run !== null && !run.ended) {
      run.result = result;
      this.ended(run);
    }
    return result;
  }

  /** A timeout or a cancel of an attempt on the plain path: the observers see its end now. */
  private endObserved(claim: HeldClaim): void {
    const run = this.observed.get(claim);
    if (run === undefined) return;
    this.observed.delete(claim);
    this.ended(run);
  }

  /** Tells the observers, last first, that `run` is over (once). */
  private ended(run: AttemptRun): void {
    if (run.ended) return;
    run.ended = true;
    const observers = this.observers;
    for (let i = observers.length - 1; i >= 0; i--) observers[i]!.after(run);
  }

  /**
   * The claim's job was cancelled (X3; a lease renewal found its row
   * `cancelled`): gives it up as {@link abandon} does, its signal aborted with
   * a `JobCancelledError` carrying the cancel's `reason`, and reports event
   * `job-cancelled`. Nothing of the attempt is written: the row is no longer
   * `running`, so a finish would be fenced out anyway. Inside middleware (or
   * with a timeout) the attempt's `next()` rejects with the same error at
   * once, so every hook sees `JOB_CANCELLED` whatever the handler does, and
   * the metrics label the attempt `cancelled`. A claim already given
   * up or timed out is left as it is.
   */
  cancel(claim: HeldClaim, reason: string | null): void {
    if (claim.abandoned || claim.timedOut) return;
    const error = new JobCancelledError(claim.id, reason ?? undefined);
    claim.cancelled = true;
    this.abandon(claim, error);
    claim.rejectNext?.(error);
    this.endObserved(claim);
    this.options.onEvent({ type: "job-cancelled", jobId: claim.id, jobType: claim.job.jobType, attempt: claim.attempt, reason: error.message });
  }

  /**
   * The attempt inside the observers: lease check, decode, then the attempt
   * hooks around the handler; sets `run.result`. Never rejects.
   */
  private async attempt(run: AttemptRun): Promise<void> {
    const { options } = this;
    const claim = run.claim;
    const job = claim.job;
    if (run.handedAt >= claim.leaseExpiresAt) {
      run.skipped = true;
      run.result = this.skip(claim, run.handedAt);
      return;
    }
    const handler = options.handlers[job.jobType]!;
    try {
      run.payload = handler.decode === undefined ? JSON.parse(job.payload) : handler.decode(job.payload);
    } catch (cause) {
      run.decodeError = new PayloadDecodeError(job.jobType, describeThrown(cause), cause);
    }
    let thrown: unknown = NONE;
    try {
      await this.wrapped!(run); // set: run() takes the plain path without hooks
    } catch (error) {
      thrown = error;
    }
    this.running.delete(claim);
    claim.rejectNext = null;
    if (claim.timedOut || claim.abandoned) run.result = null;
    else if (thrown === NONE)
      run.result = run.value === undefined ? SUCCESS : resultOutcome(options, job, run.value); // X6: stored with the success
    else if (run.decodeError !== null && thrown === run.decodeError) run.result = { kind: "fail", error: run.decodeError.message };
    else run.result = this.failure(job, thrown);
  }

  /**
   * The innermost `next()`: starts the handler (rejects with the decode error instead when the payload did not decode);
   * resolves with the handler's value, kept in `run.value` (X6).
   */
  private handle(run: AttemptRun): Promise<unknown> {
    if (run.decodeError !== null) return Promise.reject(run.decodeError);
    const { options } = this;
    const claim = run.claim;
    const handler = options.handlers[claim.job.jobType]!;
    if (options.eventsEnabled) options.onEvent(attemptEvent(claim.job, "running"));
    claim.startedAt = options.clock.now();
    this.watch(claim, handler.timeoutMs);
    let ran: Promise<unknown>;
    try {
      ran = Promise.resolve<unknown>(handler.handle(new JobRunContext(options.context, this.publisher, claim, this.writeProgress), run.payload));
    } catch (thrown) {
      return Promise.reject(thrown);
    }
    const kept = (value: unknown): unknown => {
      if (!claim.timedOut && !claim.cancelled) run.value = value;
      return value;
    };
    // Seen by hooks: the watchdog rejects at the timeout, a cancel (X3) at once (the handler is left behind;
    // its own end is then ignored).
    return new Promise<unknown>((resolve, reject) => {
      claim.rejectNext = reject;
      ran.then((value) => resolve(kept(value)), reject);
    });
  }

  /** A claim whose lease expired before its handler could start: not run; another server may hold it already. */
  private skip(claim: HeldClaim, now: number): null {
    const job = claim.job;
    // Its lease ended while it waited (a stalled process, a clock jump): another server may hold it
    // already. Not run; lease recovery takes it (the stuck-job sweep, or the head's next claim).
    claim.abandoned = true;
    this.options.onEvent({
      type: "job-skipped",
      jobId: job.id,
      jobType: job.jobType,
      attempt: job.attempt,
      reason: `the lease of attempt ${job.attempt} expired ${now - claim.leaseExpiresAt} ms before its handler could start`,
    });
    return null;
  }

  /** The outcome of a throw: fail now for a `PermanentJobError`, else the retry decision. */
  private failure(job: HeldClaim["job"], thrown: unknown): JobOutcome {
    const error = describeThrown(thrown);
    return isPermanentFailure(thrown) ? { kind: "fail", error, permanent: true } : retryDecision(this.options, job, error);
  }

  /** Gives a claim up (lease lost, shutdown deadline): its signal aborts with `reason` and its outcome is not written. */
  abandon(claim: HeldClaim, reason: Error): void {
    claim.abandoned = true;
    claim.abort(reason);
  }

  /**
   * A lease renewal found `claim` no longer held by this server (the stuck-job sweep or another server
   * took its job, or `forceFailPartitionHead` failed it): gives it up as {@link abandon} does, its signal
   * aborted with a `LeaseLostError`, and reports event `job-lease-lost` (a warning for the logger: the
   * attempt's outcome is discarded). No event for a claim already given up, timed out or cancelled.
   */
  leaseLost(claim: HeldClaim): void {
    const error = new LeaseLostError(claim.id);
    const report = !claim.abandoned && !claim.timedOut && !claim.cancelled;
    this.abandon(claim, error);
    if (report) this.options.onEvent({ type: "job-lease-lost", jobId: claim.id, jobType: claim.job.jobType, attempt: claim.attempt, reason: error.message });
  }

  /** Gives a starting attempt its timeout (the job's, else its type's, else the server's) and hands it to the watchdog; none: not watched. */
  private watch(claim: HeldClaim, typeTimeoutMs: number | null | undefined): void {
    const own = claim.job.timeoutMs ?? null;
    if (own !== null) [claim.timeoutMs, claim.timeoutSetting] = [own, "the job's timeoutMs"];
    else if (typeTimeoutMs !== undefined) [claim.timeoutMs, claim.timeoutSetting] = [typeTimeoutMs, `the timeoutMs of "${claim.job.jobType}" handlers`];
    else [claim.timeoutMs, claim.timeoutSetting] = [this.options.jobTimeoutMs, "jobTimeoutMs"];
    if (claim.timeoutMs === null) return;
    this.running.add(claim);
    if (this.watchdog === null) this.startWatchdog();
    else if (this.wait !== null && checkEvery(claim.timeoutMs) < this.wait.ms) this.wait.controller.abort();
  }

  private startWatchdog(): void {
    if (this.started && !this.stopped) this.watchdog ??= this.runWatchdog();
  }

  private async runWatchdog(): Promise<void> {
    const { clock } = this.options;
    while (!this.stopped) {
      let ms = checkEvery(this.options.jobTimeoutMs ?? MAX_CHECK_MS);
      for (const claim of this.running) ms = Math.min(ms, checkEvery(claim.timeoutMs!));
      this.wait = { ms, controller: new AbortController() };
      await clock.sleep(ms, this.wait.controller.signal);
      this.wait = null;
      const now = clock.now();
      for (const claim of this.running) {
        if (claim.abandoned) this.running.delete(claim); // given up: its handler may never settle
        const timeoutMs = claim.timeoutMs!;
        if (claim.abandoned || now - claim.startedAt < timeoutMs) continue;
        this.running.delete(claim);
        claim.timedOut = true;
        const error = new JobTimeoutError(claim.id, timeoutMs, claim.timeoutSetting);
        claim.abort(error);
        claim.rejectNext?.(error);
        this.endObserved(claim);
        // The stored error leads with the code, so `later jobs show` and the dashboard say it was a timeout.
        this.onTimedOut(claim, retryDecision(this.options, claim.job, `${error.code}: ${error.message}`));
      }
    }
  }
}

/** The watchdog's longest wait: a timeout is noticed at most this late. */
const MAX_CHECK_MS = 1_000;

/** How often a timeout of `timeoutMs` is checked: a quarter of it, between 1 ms and {@link MAX_CHECK_MS}. */
function checkEvery(timeoutMs: number): number {
  return Math.max(1, Math.min(Math.floor(timeoutMs / 4), MAX_CHECK_MS));
}

/** A handler's `PermanentJobError`, also one from another copy of this package (matched by its code). */
function isPermanentFailure(thrown: unknown): boolean {
  return thrown instanceof PermanentJobError || (thrown instanceof Error && (thrown as { code?: unknown }).code === "PERMANENT_FAILURE");
}
