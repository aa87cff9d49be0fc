import { PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** Sampling period of the throughput buckets: one second (DESIGN D7's per-second buckets). */
export const ACTIVITY_SAMPLE_INTERVAL_MS = 1000;

/** A last sample older than this places nothing: the transitions since cannot be put in a second (see `ActivityStore.enteredSample`). */
export const ACTIVITY_STALE_AFTER_MS = 60_000;

/**
 * Task `activity-sample` (DESIGN D1 `throughput`, D7): once a second, on one
 * server of the namespace (a maintenance turn), turns the stage counters'
 * cumulative `entered` counts into the bucket of the second just ended, so
 * the dashboard reads throughput from per-second rows instead of the jobs'
 * stage histories. The transitions themselves pay only the `entered`
 * column of the counter rows they already update.
 *
 * Event: `{ type: "maintenance", task: "activity-sample", count }` after a
 * sample that placed transitions.
 */
export class ActivitySampler extends PeriodicService {
  constructor(host: MaintenanceHost, intervalMs = ACTIVITY_SAMPLE_INTERVAL_MS) {
    super(host, "activity-sample", intervalMs, true);
  }

  /** Samples now; resolves to the transitions placed in a bucket. */
  runOnce(): Promise<number> {
    return this.host.backend.activity.enteredSample({ now: this.host.clock.now(), staleAfterMs: ACTIVITY_STALE_AFTER_MS });
  }
}
