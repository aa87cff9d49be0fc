import { checkInt, PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** Age limit of a log topic declared without `retentionMs`: seven days (docs/semantics.md L6). */
export const DEFAULT_LOG_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Settings of the {@link LogRetentionSweeper}. */
export interface LogRetentionSweeperConfig {
  /** How often it runs (one process per interval across the namespace). `RetainedLog.open({ retention: { intervalMs } })`, default 60000. */
  intervalMs: number;
  /** Records deleted per statement, each statement its own short transaction. Default 500: appenders and readers never wait long. */
  batchSize: number;
}

/** What one sweep did. */
export interface LogRetentionSweepResult {
  /** Records deleted. */
  deleted: number;
  /** Delete statements run (each moving the oldest retained offset at most `batchSize` records on, its own transaction). */
  batches: number;
}

/**
 * Task `log-retention` (docs/semantics.md L6): deletes retained-log records past their
 * topic's retention, for every log topic of the namespace with the settings
 * stored for it (so any process that sweeps covers topics it did not open).
 *
 * A record goes when it is older than the topic's `retentionMs` (default
 * {@link DEFAULT_LOG_RETENTION_MS}, which applies with `retainRecords` too,
 * as Kafka's `retention.ms` does) or is not among the newest
 * `retainRecords` of its partition. Only a prefix of a partition is ever
 * deleted: a record younger than the limit keeps every later one (offsets
 * stay dense from the oldest retained offset on). With
 * `minRetainUntilCommitted`, a partition is never cut past the lowest
 * committed offset of the topic's consumer groups; a group known on the
 * topic (it has committed or leased some partition, or has a live member)
 * without a commit on this partition holds all of it until it commits (a
 * group that stops reading holds records for good: no API drops a group
 * yet). A topic with no groups at all is cut by age and count alone.
 *
 * One statement computes the cut of every partition; then each partition
 * is cut `batchSize` records at a time (`recordTruncate`, moving the
 * oldest retained offset first, so a read below it is
 * `OFFSET_OUT_OF_RANGE` naming the new oldest offset). SQLite deletes whole
 * record batches (one append's records of a partition, at most 1 MiB of
 * values): a batch the cut falls inside stays, unreadable, until a later
 * cut passes its last record, and is counted as deleted then. Safe with several
 * processes sweeping: the loop runs on one process per interval
 * (`maintenance.claim`), and a truncate below a partition's oldest offset
 * changes nothing, so overlapping sweeps delete each record once. A cut
 * computed before a group commits is only lower than the next one.
 *
 * Event: `{ type: "maintenance", task: "log-retention", count }` after a
 * run that deleted records; a failed run emits an `error` event and the
 * loop goes on.
 */
export class LogRetentionSweeper extends PeriodicService {
  readonly batchSize: number;

  constructor(host: MaintenanceHost, config: LogRetentionSweeperConfig) {
    super(host, "log-retention", config.intervalMs, true);
    this.batchSize = checkInt(this.task, "batchSize", config.batchSize, 1);
  }

  /** Sweeps once now. Resolves to how many records were deleted. */
  async runOnce(): Promise<number> {
    return (await this.sweep()).deleted;
  }

  /** Sweeps once now (whatever the schedule, without a claim); resolves to what it did. */
  async sweep(): Promise<LogRetentionSweepResult> {
    const { backend, clock } = this.host;
    const cuts = await backend.log.retentionCutList({ now: clock.now(), defaultRetentionMs: DEFAULT_LOG_RETENTION_MS });
    const result = { deleted: 0, batches: 0 };
    for (const cut of cuts) {
      // Offsets are dense from the oldest retained one, so each step moves it at most batchSize records on
      // (and deletes as many; on SQLite, whole record batches: those the step's cut has passed).
      for (let start = cut.startOffset; start < cut.cutOffset; ) {
        if (this.stopped) return result;
        const beforeOffset = Math.min(cut.cutOffset, start + this.batchSize);
        result.deleted += await backend.log.recordTruncate({ topic: cut.topic, partition: cut.partition, beforeOffset });
        result.batches += 1;
        start = beforeOffset;
        await new Promise<void>((r) => setImmediate(r));
      }
    }
    return result;
  }
}
