/**
 * Time for every lease, delay, retry and maintenance interval in later.
 *
 * The runtime never calls `Date.now()` or `setTimeout` directly: it asks a
 * `Clock`, so tests can drive leases, retries and schedules with a manual
 * clock (see `@later/runtime/testing`) instead of waiting on wall time.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Resolves once `ms` have passed on this clock, or at once when `signal`
   * aborts (it resolves, never rejects, so loops can re-check their state).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** A wall-clock sleep; with `keepAlive: false` its timer does not hold the process open. */
function wallSleep(ms: number, signal: AbortSignal | undefined, keepAlive: boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    if (!keepAlive) timer.unref();
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The wall clock: `Date.now()` and `setTimeout`. The default everywhere. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => wallSleep(ms, signal, true),
};

/**
 * The wall clock for background refreshes that must not keep a process
 * alive on their own: a publisher's clock sync, in a script that enqueues
 * and exits without closing it.
 */
export const unrefClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => wallSleep(ms, signal, false),
};

/** A source of uniform numbers in [0, 1), used for retry jitter. Default `Math.random`. */
export type RandomSource = () => number;
