import type { Backend, JobFinish, JobFinishManyResult } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";

/**
 * Stores attempt outcomes in batches: a worker hands its outcome over and
 * takes its next job at once, while the batcher writes every outcome that
 * piled up during the previous write in one transaction. Under load that is
 * one commit for many jobs; when idle, one outcome is written on the next
 * turn of the event loop, so latency stays low.
 *
 * Lifecycle: `submit` any time; `drain()` resolves once everything submitted
 * so far is written. A failed write is retried after `retryDelayMs` until it
 * succeeds or the batcher is `stop()`ped.
 */
export class CompletionBatcher {
  private pending: { finish: JobFinish; done: (applied: boolean) => void }[] = [];
  private flushing: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly backend: Backend,
    private readonly clock: Clock,
    private readonly retentionMs: number,
    private readonly onWritten: (result: JobFinishManyResult) => void,
    private readonly onError: (error: unknown) => void,
    private readonly retryDelayMs = 50,
  ) {}

  /** Resolves to true when the outcome was stored, false when the claim had lost its lease (or the batcher stopped). */
  submit(finish: JobFinish): Promise<boolean> {
    return new Promise((done) => {
      if (this.stopped) return done(false);
      this.pending.push({ finish, done });
      this.flushing ??= this.flushLoop();
    });
  }

  /** Resolves once every outcome submitted so far is written. */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /** Drops what is unwritten (its claims recover through their leases). */
  stop(): void {
    this.stopped = true;
    for (const p of this.pending) p.done(false);
    this.pending = [];
  }

  private async flushLoop(): Promise<void> {
    await new Promise<void>((r) => setImmediate(r));
    while (this.pending.length > 0 && !this.stopped) {
      const batch = this.pending;
      this.pending = [];
      try {
        const result = await this.backend.jobFinishMany({
          finishes: batch.map((p) => p.finish),
          now: this.clock.now(),
          retentionMs: this.retentionMs,
        });
        if (result.applied.length === batch.length) {
          for (const p of batch) p.done(true); // the usual case: every claim of the batch was written
        } else {
          const applied = new Set(result.applied.map((c) => `${c.id}/${c.attempt}`));
          for (const p of batch) p.done(applied.has(`${p.finish.id}/${p.finish.attempt}`));
        }
        this.onWritten(result);
      } catch (error) {
        this.onError(error);
        this.pending = batch.concat(this.pending);
        await new Promise<void>((r) => setTimeout(r, this.retryDelayMs));
      }
    }
    this.flushing = null;
  }
}
