import type { Backend, JobFinish, JobFinishManyResult } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";

/**
 * Stores attempt outcomes in batches: a worker hands its outcome over and
 * takes its next job at once, while the batcher writes every outcome that
 * piled up during the previous write in one transaction. Under load that is
 * one commit for many jobs; when idle, one outcome is written on the next
 * turn of the event loop, so latency stays low.
 *
 * Lifecycle: `submit` any time; `onFinished(finish, applied)` is called once
 * per submitted finish, after its write (applied: false when the claim had
 * lost its lease, or the batcher was stopped first). `drain()` resolves once
 * everything submitted so far is written. A failed write (the database
 * down, full or locked) is reported to `onError` and retried, first after
 * `retryDelayMs`, then twice as long each time up to {@link MAX_RETRY_DELAY_MS},
 * until it succeeds or the batcher is `stop()`ped, or, once
 * `drain(giveUpAt)` was called, until a write fails at or after `giveUpAt`:
 * the batcher then stops, dropping what is unwritten. Meanwhile the
 * outcomes wait in memory (a claim whose lease runs out before its outcome
 * is written is recovered by the stuck-job rescue, as after a crash, and
 * its late write is then rejected by the fencing).
 */
/** The longest wait between two tries of a failing write: an outage of minutes reports about one error a second. */
const MAX_RETRY_DELAY_MS = 1_000;

export class CompletionBatcher<F extends JobFinish> {
  private pending: F[] = [];
  private flushing: Promise<void> | null = null;
  private stopped = false;
  /** Clock ms from which a failed write is not retried (set by `drain`). */
  private giveUpAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly backend: Backend,
    private readonly clock: Clock,
    private readonly retentionMs: number,
    private readonly onFinished: (finish: F, applied: boolean) => void,
    private readonly onWritten: (result: JobFinishManyResult) => void,
    private readonly onError: (error: unknown) => void,
    private readonly retryDelayMs = 50,
    /** X9: whether a written finish should wake the namespace's other servers (it frees a limited type's slot). Default: never. */
    private readonly wakesOthers: ((finish: F) => boolean) | null = null,
  ) {}

  /** Queues one outcome for the next write. */
  submit(finish: F): void {
    if (this.stopped) {
      this.onFinished(finish, false);
      return;
    }
    this.pending.push(finish);
    this.flushing ??= this.flushLoop();
  }

  /**
   * Resolves once every outcome submitted so far is written, or, with
   * `giveUpAt` (clock ms), once a write failed at or after it: the batcher is
   * then stopped and the unwritten outcomes dropped (their claims recover
   * through their leases). Without it, this waits as long as the database
   * stays unreachable; a shutdown passes its deadline, so that it ends
   * during an outage too.
   */
  async drain(giveUpAt = Number.POSITIVE_INFINITY): Promise<void> {
    this.giveUpAt = giveUpAt;
    while (this.flushing) await this.flushing;
  }

  /** Drops what is unwritten (its claims recover through their leases). */
  stop(): void {
    this.stopped = true;
    const dropped = this.pending;
    this.pending = [];
    for (const f of dropped) this.onFinished(f, false);
  }

  private async flushLoop(): Promise<void> {
    await new Promise<void>((r) => setImmediate(r));
    let delay = this.retryDelayMs;
    while (this.pending.length > 0 && !this.stopped) {
      const batch = this.pending;
      this.pending = [];
      let result: JobFinishManyResult;
      try {
        const wakesOthers = this.wakesOthers;
        result = await this.backend.jobs.finishMany(
          wakesOthers !== null && batch.some(wakesOthers)
            ? { finishes: batch, now: this.clock.now(), retentionMs: this.retentionMs, wakeOthers: true }
            : { finishes: batch, now: this.clock.now(), retentionMs: this.retentionMs },
        );
      } catch (error) {
        this.onError(error);
        this.pending = batch.concat(this.pending);
        const now = this.clock.now();
        if (now >= this.giveUpAt) {
          this.stop();
          break;
        }
        // Never past the give-up time: a shutdown's deadline holds whatever the backoff has reached.
        await new Promise<void>((r) => setTimeout(r, Math.min(delay, this.giveUpAt - now)));
        delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
        continue;
      }
      delay = this.retryDelayMs;
      if (result.applied.length === batch.length) {
        for (const f of batch) this.onFinished(f, true); // the usual case: every claim of the batch was written
      } else {
        const applied = new Set(result.applied.map((c) => `${c.id}/${c.attempt}`));
        for (const f of batch) this.onFinished(f, applied.has(`${f.id}/${f.attempt}`));
      }
      this.onWritten(result);
    }
    this.flushing = null;
  }
}
