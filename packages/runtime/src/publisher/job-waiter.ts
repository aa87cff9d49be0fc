/**
 * `waitFor(jobId, { timeoutMs })` (docs/semantics.md X6): resolves once the
 * job is in a terminal stage, with `{ stage, result?, error? }`.
 *
 * It wakes on the commit that ends the job, never by polling fast:
 *
 * ```text
 *   waitFor ─► subscribe (Backend.doneSubscribe: LISTEN / WAL watcher in place)
 *           ─► register the waiter ─► first read (PostgreSQL: marks the row awaited)
 *                 ├─ no row ─────────► JOB_NOT_FOUND
 *                 ├─ terminal ───────► resolve at once
 *                 └─ unfinished ─► wait: a done wake-up, or the slow safety poll,
 *                                  re-reads every pending row in one statement
 *                                  ├─ terminal ─► resolve      ├─ gone ─► JOB_NOT_FOUND
 *                                  └─ timeoutMs passed ─► WAIT_TIMEOUT
 * ```
 *
 * No lost wake-up: the subscription is in place before the first read, so a
 * job that ends after that read is reported; one that ended before it is
 * seen by it. (PostgreSQL: a terminal write notifies only for a row marked
 * awaited; the mark is that first read's UPDATE, which, if it waited for a
 * finishing row's lock, returns the row finished.)
 *
 * Many waiters of one process share one subscription and one re-read per
 * wake-up (all pending ids in one indexed read, chunked by
 * {@link READ_CHUNK}). The subscription is dropped when the last wait ends,
 * so once nobody waits a commit costs nothing (SQLite: no re-read scheduled
 * per transaction; PostgreSQL keeps its LISTEN connection, which hears only
 * awaited jobs). The safety poll (`safetyPollMs`, default
 * {@link DEFAULT_SAFETY_POLL_MS}, at least 1 s) is for what the wake-ups
 * miss: PostgreSQL with `listen: false`, a LISTEN connection down, or
 * behind a transaction-mode pooler; SQLite on a file system without change
 * events (no inotify: network and some container file systems), or a
 * commit made visible after the watcher's last re-check. A read that fails
 * (database down) is tried again at the next wake-up or poll; `timeoutMs`
 * bounds the wait in every case.
 *
 * A job deleted meanwhile (`delete`, or the expiry sweep after it finished
 * before any read saw it) is JOB_NOT_FOUND. A success deleted by its own
 * write (J11, `successMs: 0`) resolves `{ stage: "success" }` (no result)
 * when the done wake-up names it (see `Backend.doneSubscribe`: a PostgreSQL
 * job this process awaited, a SQLite job finished by this process), else it
 * is JOB_NOT_FOUND. Timers run on the injected clock.
 */
import type { Backend, JobOutcomeRow } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import type { JobId } from "../core/job-id.js";
import { TERMINAL_STAGES, type TerminalStage } from "../core/job-stage.js";
import { describeValue, InvalidArgumentError, JobNotFoundError, ServerStoppedError, WaitTimeoutError } from "../errors.js";

/** Options of `waitFor`. */
export interface WaitForOptions {
  /** Longest wait in ms, an integer from 1 to 2^31 − 1: past it, `waitFor` rejects with `WaitTimeoutError` (`WAIT_TIMEOUT`). Required. */
  timeoutMs: number;
  /**
   * How often the job is read again should no wake-up come (see the module
   * doc for when one can be missed), ms, an integer of at least 1000.
   * Default 2000.
   */
  safetyPollMs?: number | undefined;
}

/** How a job ended, as `waitFor` resolves. `R`: the job's result type (the schema's `Results`; `unknown` without). */
export interface JobWaitResult<R = unknown> {
  /** The terminal stage the job is in. */
  stage: TerminalStage;
  /** The handler's resolved value (a `success` that returned one), decoded from its JSON; absent otherwise. */
  result?: R;
  /** The last attempt's error, for a job that did not succeed; absent for a `success`. */
  error?: string;
}

/** The safety poll's default period. */
export const DEFAULT_SAFETY_POLL_MS = 2_000;
/** Ids per re-read statement. */
const READ_CHUNK = 500;
const MAX_TIMER_MS = 2_147_483_647;

interface Waiter {
  id: JobId;
  resolve(result: JobWaitResult): void;
  reject(error: Error): void;
  /** Ends the waiter's timers. */
  controller: AbortController;
  /** Settled: resolved or rejected once. */
  done: boolean;
}

export class JobWaiter {
  private readonly pending = new Map<JobId, Set<Waiter>>();
  private subscription: Promise<() => void> | null = null;
  /** Waits using the subscription (pending, or subscribing): it is dropped when none is left, so commits cost nothing once nobody waits. */
  private users = 0;
  private reading: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly backend: Backend<unknown>,
    private readonly clock: Clock,
  ) {}

  /** See the module doc. Bad input rejects with `INVALID_ARGUMENT` before anything is read. */
  async waitFor(jobId: JobId, options: WaitForOptions): Promise<JobWaitResult> {
    const { timeoutMs, safetyPollMs } = checkWaitOptions(jobId, options);
    if (this.stopped) throw new ServerStoppedError("waitFor");
    this.users++;
    try {
      await this.subscribe();
      if (this.stopped) throw new ServerStoppedError("waitFor"); // stopped while subscribing
    } catch (error) {
      this.release();
      throw error;
    }
    return new Promise<JobWaitResult>((resolve, reject) => {
      const controller = new AbortController();
      const waiter: Waiter = {
        id: jobId,
        controller,
        done: false,
        resolve: (r) => {
          if (this.remove(waiter)) resolve(r);
        },
        reject: (e) => {
          if (this.remove(waiter)) reject(e);
        },
      };
      let set = this.pending.get(jobId);
      if (!set) this.pending.set(jobId, (set = new Set()));
      set.add(waiter);
      void this.clock.sleep(timeoutMs, controller.signal).then(() => {
        if (!controller.signal.aborted) waiter.reject(new WaitTimeoutError(jobId, timeoutMs));
      });
      void this.safetyPoll(controller.signal, safetyPollMs);
      this.backend.jobs.readOutcomes({ ids: [jobId], markAwaited: true }).then(
        (rows) => this.settle([jobId], rows),
        () => undefined, // the database is unreachable: the safety poll reads again
      );
    });
  }

  /** Rejects every pending wait with `SERVER_STOPPED` and drops the subscription. */
  stop(): void {
    this.stopped = true;
    for (const set of [...this.pending.values()]) for (const w of [...set]) w.reject(new ServerStoppedError("waitFor"));
    this.unsubscribe();
  }

  /** One wait stopped using the subscription; the last drops it. */
  private release(): void {
    if (--this.users === 0) this.unsubscribe();
  }

  private unsubscribe(): void {
    const subscription = this.subscription;
    this.subscription = null;
    void subscription?.then(
      (unsubscribe) => unsubscribe(),
      () => undefined,
    );
  }

  private subscribe(): Promise<() => void> {
    if (!this.subscription) {
      const subscription = this.backend.doneSubscribe((discarded) => {
        if (discarded) this.settleDiscarded(discarded);
        this.wake();
      });
      this.subscription = subscription;
      subscription.catch(() => {
        if (this.subscription === subscription) this.subscription = null; // the next waitFor tries again
      });
    }
    return this.subscription;
  }

  private async safetyPoll(signal: AbortSignal, ms: number): Promise<void> {
    for (;;) {
      await this.clock.sleep(ms, signal);
      if (signal.aborted) return;
      this.wake();
    }
  }

  /** Re-reads every pending row (once more after the current read when one runs). */
  private wake(): void {
    if (this.pending.size === 0) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = this.readAll().finally(() => {
      this.reading = null;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  private async readAll(): Promise<void> {
    const ids = [...this.pending.keys()];
    for (let i = 0; i < ids.length; i += READ_CHUNK) {
      const chunk = ids.slice(i, i + READ_CHUNK);
      try {
        this.settle(chunk, await this.backend.jobs.readOutcomes({ ids: chunk }));
      } catch {
        return; // unreachable now: the next wake-up or safety poll reads again
      }
    }
  }

  /**
   * J11: resolves the waiters of successes the committed write deleted (`successMs: 0`) with a bare
   * `{ stage: "success" }`: the result went with the row.
   */
  private settleDiscarded(ids: readonly JobId[]): void {
    for (const id of ids) {
      const set = this.pending.get(id);
      if (set) for (const w of [...set]) w.resolve({ stage: "success" });
    }
  }

  /** Resolves the waiters of `ids` whose row is terminal, rejects those whose row is gone. */
  private settle(ids: readonly JobId[], rows: readonly JobOutcomeRow[]): void {
    const found = new Map(rows.map((r) => [r.id, r]));
    for (const id of ids) {
      const set = this.pending.get(id);
      if (!set) continue;
      const row = found.get(id);
      if (!row) {
        for (const w of [...set]) w.reject(new JobNotFoundError(id));
      } else if (TERMINAL_STAGES.includes(row.stage)) {
        const result = waitResult(row);
        for (const w of [...set]) w.resolve(result);
      }
    }
  }

  /** Settles `waiter` once: false when it already was. */
  private remove(waiter: Waiter): boolean {
    if (waiter.done) return false;
    waiter.done = true;
    waiter.controller.abort();
    const set = this.pending.get(waiter.id);
    set?.delete(waiter);
    if (set?.size === 0) this.pending.delete(waiter.id);
    this.release();
    return true;
  }
}

function waitResult(row: JobOutcomeRow): JobWaitResult {
  const out: JobWaitResult = { stage: row.stage as TerminalStage };
  if (row.result !== null) out.result = JSON.parse(row.result);
  if (row.stage !== "success" && row.error !== null) out.error = row.error;
  return out;
}

/** `waitFor`'s arguments, checked: a non-empty id, an integer `timeoutMs` from 1 to 2^31 − 1, a `safetyPollMs` of at least 1000. */
function checkWaitOptions(jobId: unknown, options: unknown): { timeoutMs: number; safetyPollMs: number } {
  if (typeof jobId !== "string" || jobId === "")
    throw new InvalidArgumentError(`waitFor: jobId must be a job id (a non-empty string), got ${describeValue(jobId)}`);
  if (options === null || typeof options !== "object")
    throw new InvalidArgumentError("waitFor: options must be an object with timeoutMs, e.g. waitFor(id, { timeoutMs: 30_000 })");
  for (const key of Object.keys(options)) {
    if (key !== "timeoutMs" && key !== "safetyPollMs")
      throw new InvalidArgumentError(`waitFor: unknown option "${key}"; the options are timeoutMs, safetyPollMs`);
  }
  const { timeoutMs, safetyPollMs = DEFAULT_SAFETY_POLL_MS } = options as WaitForOptions;
  if (typeof timeoutMs !== "number" || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMER_MS) {
    throw new InvalidArgumentError(`waitFor: timeoutMs must be an integer from 1 to ${MAX_TIMER_MS} (ms), got ${describeValue(timeoutMs)}`);
  }
  if (typeof safetyPollMs !== "number" || !Number.isInteger(safetyPollMs) || safetyPollMs < 1_000 || safetyPollMs > MAX_TIMER_MS) {
    throw new InvalidArgumentError(`waitFor: safetyPollMs must be an integer from 1000 to ${MAX_TIMER_MS} (ms), got ${describeValue(safetyPollMs)}`);
  }
  return { timeoutMs, safetyPollMs };
}
