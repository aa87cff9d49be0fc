import type { Clock } from "../core/clock.js";

/**
 * A clock that moves only when told. `sleep` resolves once `advance` has
 * moved the time past its deadline (at once for `ms <= 0`, or when its signal aborts), so leases,
 * retries and intervals are tested without waiting for wall time.
 */
export class ManualClock implements Clock {
  private current: number;
  private sleepers: { until: number; resolve: () => void }[] = [];

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted || ms <= 0) return resolve();
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== entry);
        resolve();
      };
      // Woken by time: drop the abort listener too, or long-lived signals collect one per sleep.
      const entry = {
        until: this.current + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      this.sleepers.push(entry);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Moves time forward and wakes every sleeper whose deadline has passed. */
  advance(ms: number): void {
    this.current += ms;
    const due = this.sleepers.filter((s) => s.until <= this.current);
    this.sleepers = this.sleepers.filter((s) => s.until > this.current);
    for (const s of due) s.resolve();
  }
}
