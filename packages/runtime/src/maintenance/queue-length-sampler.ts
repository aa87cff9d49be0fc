import { checkInt, PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** How long backlog samples are kept: seven days (docs/semantics.md D5). */
export const QUEUE_LENGTH_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** How long per-second activity buckets are kept: one hour (the dashboard shows the last minutes). */
export const ACTIVITY_RETENTION_MS = 60 * 60 * 1000;

/** Server rows whose heartbeat expired longer ago than this are deleted (a crashed process leaves its row; expired rows are never listed anyway). */
export const SERVER_ROW_RETENTION_MS = 60 * 60 * 1000;

/** Settings of the {@link QueueLengthSampler}. */
export interface QueueLengthSamplerConfig {
  /** How often it samples (one server per namespace per interval). Default 60000: per-minute samples. */
  intervalMs: number;
  /** Time span of rows each delete statement of the sweep covers, from the oldest row. Default 60000: a minute of buckets per statement. */
  sweepSpanMs: number;
}

/**
 * Task `queue-length` (docs/semantics.md D5): once a minute, on one server of the
 * namespace, stores the backlog read from the stage counters (never the
 * jobs): `ready` = jobs in `enqueued` or `requeued`, `partitionBacklog` =
 * unfinished jobs over every topic partition. Samples are rows, so they
 * survive restarts; one per minute at most (the minute's first sample wins).
 *
 * The same run sweeps the dashboard's rows: activity buckets older than
 * {@link ACTIVITY_RETENTION_MS}, samples older than
 * {@link QUEUE_LENGTH_RETENTION_MS}, server rows expired
 * {@link SERVER_ROW_RETENTION_MS} ago, in short statements.
 *
 * Event: `{ type: "maintenance", task: "queue-length", count }` with the
 * rows written and deleted.
 */
export class QueueLengthSampler extends PeriodicService {
  readonly sweepSpanMs: number;

  constructor(host: MaintenanceHost, config: QueueLengthSamplerConfig = { intervalMs: 60_000, sweepSpanMs: 60_000 }) {
    super(host, "queue-length", config.intervalMs, true);
    this.sweepSpanMs = checkInt(this.task, "sweepSpanMs", config.sweepSpanMs, 1);
  }

  /** Samples and sweeps now; resolves to the rows written and deleted. */
  async runOnce(): Promise<number> {
    const { backend, clock } = this.host;
    const now = clock.now();
    const { counts } = await backend.inspect.stageCounts();
    const { topics } = await backend.inspect.topicDepth();
    const ready = counts.enqueued + counts.requeued;
    const partitionBacklog = topics.reduce((sum, t) => sum + t.unfinished, 0);
    await backend.activity.queueLengthAdd({ at: Math.floor(now / 60_000) * 60_000, ready, partitionBacklog });
    const deleted = await backend.activity.activitySweep({
      activityBefore: now - ACTIVITY_RETENTION_MS,
      queueLengthBefore: now - QUEUE_LENGTH_RETENTION_MS,
      serversBefore: now - SERVER_ROW_RETENTION_MS,
      spanMs: this.sweepSpanMs,
    });
    return 1 + deleted;
  }
}
