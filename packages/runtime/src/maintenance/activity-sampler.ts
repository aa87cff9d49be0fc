import { PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** Sampling period of the throughput buckets: one second (D7 in docs/semantics.md: per-second buckets). */
export const ACTIVITY_SAMPLE_INTERVAL_MS = 1000;

/** A last sample older than this places nothing: the transitions since cannot be put in a second (see `ActivityStore.enteredSample`). */
export const ACTIVITY_STALE_AFTER_MS = 60_000;

/**
 * Task `activity-sample` (docs/semantics.md D1 `throughput`, D7): once a second turns
 * the stage counters' cumulative `entered` counts into the bucket of the
 * second just ended, so the dashboard reads throughput from per-second rows
 * instead of the jobs' stage histories. The transitions themselves pay only
 * the `entered` column of the counter rows they already update.
 *
 * Every server samples, without a maintenance turn: the marks of the last
 * sample, moved under a lock (see `ActivityStore.enteredSample`), make a
 * second sampler in the same second place nothing twice, and a sample that
 * finds nothing moved reads two small sets of rows and writes nothing. A
 * turn would cost a write a second per namespace, and on SQLite every
 * commit wakes every server on the file. No `maintenance` event (a busy
 * namespace would emit one every second).
 */
export class ActivitySampler extends PeriodicService {
  constructor(host: MaintenanceHost, intervalMs = ACTIVITY_SAMPLE_INTERVAL_MS) {
    super(host, "activity-sample", intervalMs, false);
  }

  /** Samples now; resolves to the transitions placed in a bucket. */
  runOnce(): Promise<number> {
    return this.host.backend.activity.enteredSample({ now: this.host.clock.now(), staleAfterMs: ACTIVITY_STALE_AFTER_MS });
  }
}
