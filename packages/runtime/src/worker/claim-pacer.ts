/**
 * How many jobs a server keeps claimed (running plus buffered): enough that
 * a free worker never waits for the next claim, and no more, so that slow
 * jobs are not hoarded by one server while others are idle.
 *
 * The fetcher claims again once half of the target is free, so the other
 * half must last one claim round trip: the target is the live workers plus
 * three times the jobs this server finishes in one claim round trip (both
 * smoothed), kept between two per worker and the backend's `max`. Until the
 * first measurement it is `perWorker` per worker, the backend's guess.
 *
 * A no-op job stream on PostgreSQL (about 50 jobs per ms, claims of a few
 * ms) runs at the backend's maximum; ten workers on 100 ms jobs keep about
 * two per worker, where a fixed batch would park hundreds of jobs on one
 * server for seconds.
 *
 * Time comes from the injected clock: under a manual clock that does not
 * move the target stays at the initial guess.
 */
export class ClaimPacer {
  private finished = 0;
  private sampledAt: number | null = null;
  /** Jobs finished per ms, smoothed; null until measured. */
  private ratePerMs: number | null = null;
  /** Claim round trip in ms, smoothed. */
  private claimMs = 0;

  constructor(private readonly batch: { readonly perWorker: number; readonly max: number }) {}

  /** A worker finished a job (whatever its outcome). */
  jobFinished(): void {
    this.finished++;
  }

  /** A claim round trip took `ms`. */
  claimTook(ms: number): void {
    this.claimMs = this.claimMs === 0 ? ms : 0.8 * this.claimMs + 0.2 * ms;
  }

  /** Takes a rate sample when at least 2 ms have passed since the last one; called before each claim. */
  sample(now: number): void {
    if (this.sampledAt === null) {
      this.sampledAt = now;
      return;
    }
    const elapsed = now - this.sampledAt;
    if (elapsed < 2) return;
    const rate = this.finished / elapsed;
    this.ratePerMs = this.ratePerMs === null ? rate : 0.7 * this.ratePerMs + 0.3 * rate;
    this.finished = 0;
    this.sampledAt = now;
  }

  /** Claims to keep in flight with `workers` live workers. */
  target(workers: number): number {
    const { perWorker, max } = this.batch;
    const wanted = this.ratePerMs === null ? workers * perWorker : workers + Math.ceil(3 * this.ratePerMs * this.claimMs);
    return Math.max(workers * 2, Math.min(max, wanted));
  }
}
