/**
 * Time that every server on one database agrees on. A server's own wall
 * clock may be minutes off another host's; comparing leases, delays and
 * schedules written by one host with the clock of another would then rescue
 * jobs still leased elsewhere, run delayed jobs early and take partitions
 * from live owners. graphile-worker and River compare on the database's
 * clock for this reason; so does later, through an offset:
 *
 *   now() = local.now() + offset,  offset = databaseTime − (t0 + t1) / 2
 *
 * measured from round trips (`t0`, `t1`: the local clock before and after
 * the read; the database's reading is taken to fall in the middle, so the
 * error is at most half the round trip) at start and again every interval
 * (`ClockSync`), which also follows a local clock that is stepped or drifts.
 * Each measurement takes {@link SYNC_SAMPLES} round trips and keeps the
 * shortest (Cristian's algorithm): on a loaded machine one round trip can
 * take milliseconds, and its half is the error a delay or lease sees.
 * Durations (`sleep`) stay on the local clock: an offset does not change
 * how long a millisecond is.
 */
import type { Clock } from "./clock.js";

/** Round trips per measurement; the shortest one sets the offset. */
export const SYNC_SAMPLES = 3;

export class DatabaseClock implements Clock {
  private offsetMs = 0;

  constructor(
    private readonly local: Clock,
    /** The database's clock now (ms since the epoch), or null when it has none of its own. */
    private readonly readDatabaseTime: () => Promise<number | null>,
  ) {}

  now(): number {
    return this.local.now() + this.offsetMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.local.sleep(ms, signal);
  }

  /** The last measured offset of the database's clock from the local one, ms (positive: the database is ahead). */
  get offset(): number {
    return this.offsetMs;
  }

  /** Measures the offset again; false when the database has no clock of its own (the offset stays 0). */
  async sync(): Promise<boolean> {
    let best: { roundTrip: number; offset: number } | null = null;
    for (let i = 0; i < SYNC_SAMPLES; i++) {
      const t0 = this.local.now();
      const databaseTime = await this.readDatabaseTime();
      const t1 = this.local.now();
      if (databaseTime === null) return false;
      if (best === null || t1 - t0 < best.roundTrip) best = { roundTrip: t1 - t0, offset: databaseTime - (t0 + t1) / 2 };
    }
    this.offsetMs = Math.round(best!.offset);
    return true;
  }
}
