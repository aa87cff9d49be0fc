/**
 * The page's refresh loop (D6): every 1, 2, 5 or 10 s, or paused. The next
 * poll is scheduled after the last response (never on a fixed interval), so
 * a slow dashboard is never asked again before it answered; no poll runs
 * while the tab is hidden, and one runs at once when it shows again.
 *
 * ```text
 *   idle ──(timer | refresh() | tab shown)──► polling ──(response)──► idle, next timer armed
 *   paused: no timer; refresh() still polls once
 * ```
 */

/** The intervals the page offers, ms; null is paused. */
export const POLL_INTERVALS: readonly (number | null)[] = [1_000, 2_000, 5_000, 10_000, null];

export class Poller {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private inFlight = false;
  /** A refresh() asked for while a poll was in flight: poll again when it ends. */
  private again = false;

  constructor(
    private readonly poll: () => Promise<void>,
    private intervalMs: number | null,
  ) {
    document.addEventListener("visibilitychange", () => {
      if (document.hidden) this.clearTimer();
      else void this.refresh();
    });
  }

  get interval(): number | null {
    return this.intervalMs;
  }

  /** Changes the interval (null pauses); the next poll is re-armed from now. */
  setInterval(ms: number | null): void {
    this.intervalMs = ms;
    this.clearTimer();
    if (!this.inFlight) this.arm();
  }

  /** Polls now (after a user action or a change of view), then goes on at the interval. */
  async refresh(): Promise<void> {
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.clearTimer();
    this.inFlight = true;
    try {
      do {
        this.again = false;
        await this.poll();
      } while (this.again);
    } finally {
      this.inFlight = false;
      this.arm();
    }
  }

  private arm(): void {
    this.clearTimer();
    if (this.intervalMs === null || document.hidden) return;
    this.timer = setTimeout(() => void this.refresh(), this.intervalMs);
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
