/**
 * The {@link WorkerPool}'s fetcher: one loop that claims batches of ready
 * jobs and hands each to the pool, then sleeps until a wake-up, the next
 * due time it learned, or the poll interval.
 *
 * ```text
 *   ┌─► in flight <= target/2, workers, more may be ready? ──yes──► paused set read ─► claimReady ─► accept each
 *   │        │ no                                                         │ full batch: claim again (after setImmediate)
 *   │        ▼                                                            ▼ short: sleep until its next due time (at most a poll from the claim's start)
 *   └── sleep(poll interval | next due time) ◄── cut short by wake("work") / wake("capacity") / wake("freed")
 * ```
 *
 * The target of claims in flight (running plus buffered) is the
 * {@link ClaimPacer}'s: what the workers finish in a few claim round trips.
 * It claims again once half of the target is free, so a free worker starts
 * its next job without a round trip and each claim is a batch. After a
 * claim came back short it claims again only on a `"work"` wake-up or the
 * poll timer, so a drained queue costs no empty claim transactions.
 *
 * X9: when some of the pool's types have a limit, each claim names them
 * apart (`limitedTypes`), for the backend's limited step; a claim held back
 * by a rate window returns when it opens as its next due time. Without a
 * limit the claim is the plain one.
 */
import type { Backend, ClaimedJob } from "../backend/backend.js";
import { errorEvent } from "../events/server-event.js";
import type { ClaimPacer } from "./claim-pacer.js";
import type { PauseWatch } from "./pause-watch.js";
import type { WorkerPoolConfig } from "./worker-pool-config.js";

/** The abort reason of a wake-up (not an error; nobody reads it). */
const WAKE = Symbol("wake");

/** What the fetcher asks of its pool. */
export interface ClaimFetcherHost {
  /** Workers not asked to stop: none, no claim. */
  activeWorkers(): number;
  /** Claims running plus buffered. */
  inFlight(): number;
  /** A job just claimed (at `claimedAt`, its lease until `leaseExpiresAt`): to a waiting worker or the buffer. */
  accept(job: ClaimedJob, leaseExpiresAt: number, claimedAt: number): void;
}

export class ClaimFetcher {
  private stopping = false;
  private loop: Promise<void> | null = null;
  private wakeController = new AbortController();
  /** False after a claim came back short, until a "work" wake or the poll timer. */
  private moreMayBeReady = true;
  /** The last claimable list split into plain and limited types (rebuilt only when the list changes: a pause or resume). */
  private split: { of: readonly string[]; plain: readonly string[]; limited: readonly string[] } | null = null;
  /** X4: the paused set, read before a claim at most once per poll interval; paused types are left out of the claim. Null: none honoured. */
  pauses: PauseWatch | null = null;

  constructor(
    private readonly options: Pick<WorkerPoolConfig<unknown>, "clock" | "pollIntervalMs" | "leaseMs" | "onEvent">,
    private readonly backend: Backend,
    private readonly owner: string,
    /** The job types the pool has handlers for. */
    private readonly jobTypes: string[],
    /** X9: those of them with a limit (concurrency or rate): claimed by the claim's limited step. Empty: the plain claim only. */
    private readonly limitedTypes: ReadonlySet<string>,
    private readonly pacer: ClaimPacer,
    private readonly host: ClaimFetcherHost,
  ) {}

  /** Starts the loop (once). */
  start(): void {
    this.loop ??= this.run();
  }

  /**
   * Nudges the loop. `"work"`: new work may be ready (an enqueue, another
   * process's commit, a retry, released continuations). `"capacity"`: a
   * worker freed up; the loop claims then only if its last claim came back
   * full or new work was signalled since. `"freed"` (X9): a limited type's
   * job finished, so a claim that came back short for its limit may take
   * more now; a wake-up only after such a claim. When the loop already
   * means to claim, it is either claiming (an earlier wake-up already cut
   * its next sleep short) or waiting for its buffer to drain (a
   * `"capacity"` wake-up follows): cutting its sleep short for every
   * finished job would only start a new sleep per job.
   */
  wake(reason: "work" | "capacity" | "freed" = "work"): void {
    if (reason === "work") this.moreMayBeReady = true;
    else if (reason === "freed") {
      if (this.moreMayBeReady) return;
      this.moreMayBeReady = true;
    } else if (!this.moreMayBeReady) return; // the loop would not claim anyway: no wake-up (and no new signal) per finished job
    this.wakeController.abort(WAKE); // a reason of ours: abort() without one builds a DOMException, measurable per job
  }

  /** Claims no more; resolves once the loop has ended (a claim under way finishes first). Idempotent. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { clock, pollIntervalMs, leaseMs } = this.options;
    // A turn whose wake-up signal was already spent (a wake-up before its claim, which that claim
    // answered) carries its claim's wait into the next turn, so a due time it learned (0: due now)
    // is kept rather than replaced by a whole poll interval.
    let carriedWaitMs: number | null = null;
    while (!this.stopping) {
      const signal = this.wakeController.signal;
      let waitMs: number = carriedWaitMs ?? pollIntervalMs;
      carriedWaitMs = null;
      const workers = this.host.activeWorkers();
      const inFlight = this.host.inFlight();
      this.pacer.sample(clock.now());
      const target = this.pacer.target(workers);
      if (inFlight <= target / 2 && workers > 0 && this.moreMayBeReady) {
        const limit = target - inFlight;
        // Cleared before any await of this turn: a wake-up that arrives while the paused set is read
        // or the claim runs sets it again, so the next turn claims instead of sleeping a poll interval
        // (the claim's due time is dropped when such a wake-up cut the turn short).
        this.moreMayBeReady = false;
        // Not awaited when the set is current: the claim then leaves in this turn, as the server's first one does
        // (its start read the set), ahead of the statements the other services send as they start, and takes one
        // of the connections the backend opened rather than waiting for a new one.
        if (this.pauses && !this.pauses.current) await this.pauses.refresh();
        const jobTypes = this.pauses?.claimableTypes(this.jobTypes) ?? this.jobTypes;
        try {
          const now = clock.now();
          const leaseExpiresAt = now + leaseMs;
          // Every type paused: no claim; the poll timer or a wake-up (a resume wakes every server) tries again.
          // Tracked (X4): a pause made through this server resolves once this claim, made with the set read before, has settled.
          const claimed =
            jobTypes.length === 0
              ? { jobs: [] }
              : await this.tracked(
                  this.limitedTypes.size === 0
                    ? this.backend.jobs.claimReady({ owner: this.owner, limit, now, leaseExpiresAt, jobTypes })
                    : this.backend.jobs.claimReady({ owner: this.owner, limit, now, leaseExpiresAt, ...this.splitTypes(jobTypes) }),
                );
          if (jobTypes.length > 0) this.pacer.claimTook(clock.now() - now);
          for (const job of claimed.jobs) this.host.accept(job, leaseExpiresAt, now);
          if (claimed.nextRunAt === undefined && claimed.jobs.length > 0) {
            this.moreMayBeReady = true;
            // Let completions, timers and I/O run before the next claim: with a
            // synchronous driver the whole loop would otherwise stay in microtasks.
            await new Promise<void>((r) => setImmediate(r));
            continue;
          }
          // The poll interval counts from the claim's snapshot, not from its return: a job committed just
          // after the snapshot (a delayed enqueue wakes no loop) is seen within one interval of it, even when
          // the claim was slow or the clock moved while it ran (then 0: claim again on the next timer turn).
          waitMs = Math.max(0, pollIntervalMs - (clock.now() - now));
          const next = claimed.nextRunAt ?? null;
          if (next !== null) waitMs = Math.max(0, Math.min(waitMs, next - clock.now()));
        } catch (error) {
          if (this.stopping) break;
          this.moreMayBeReady = true;
          this.options.onEvent(errorEvent("claim", error));
        }
      }
      if (this.stopping) break;
      if (!signal.aborted) await clock.sleep(waitMs, signal);
      if (signal.aborted) {
        this.wakeController = new AbortController();
        if (!this.moreMayBeReady) carriedWaitMs = waitMs;
      } else this.moreMayBeReady = true; // the poll timer (or the next due time) fired
    }
  }

  /** X9: `jobTypes` as the claim's plain `jobTypes` and its `limitedTypes`. */
  private splitTypes(jobTypes: readonly string[]): { jobTypes: readonly string[]; limitedTypes: readonly string[] } {
    if (this.split?.of !== jobTypes) {
      const limited = jobTypes.filter((t) => this.limitedTypes.has(t));
      this.split = { of: jobTypes, plain: jobTypes.filter((t) => !this.limitedTypes.has(t)), limited };
    }
    return { jobTypes: this.split.plain, limitedTypes: this.split.limited };
  }

  /** `claim`, tracked by the paused set's watch when there is one (see PauseWatch.track). */
  private tracked<T>(claim: Promise<T>): Promise<T> {
    return this.pauses === null ? claim : this.pauses.track(claim);
  }
}
