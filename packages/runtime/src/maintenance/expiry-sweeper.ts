import { checkInt, PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** Settings of the {@link ExpirySweeper}. */
export interface ExpirySweeperConfig {
  /** How often it runs (one server per interval). Server option `sweepIntervalMs`, default 60000. */
  intervalMs: number;
  /** Rows deleted per statement. Server option `sweepBatchSize`, default 500: short statements, so writers never wait long. */
  batchSize: number;
}

/**
 * Task `sweep-expired` (J11): deletes terminal jobs whose `expiresAt`
 * (finish time + the job type's retention for its stage, set by the write
 * that made it terminal; else + `retentionMs`) has passed, `batchSize` rows per statement,
 * until a statement deletes fewer (yielding to the event loop in between).
 * Under steady load the tables stop growing.
 *
 * Event: `{ type: "maintenance", task: "sweep-expired", count }` after a run
 * that deleted rows.
 */
export class ExpirySweeper extends PeriodicService {
  readonly batchSize: number;

  constructor(host: MaintenanceHost, config: ExpirySweeperConfig) {
    super(host, "sweep-expired", config.intervalMs, true);
    this.batchSize = checkInt(this.task, "batchSize", config.batchSize, 1);
  }

  /** Deletes expired rows in batches. Resolves to how many. */
  async runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.host.backend.jobs.deleteExpired({ now: this.host.clock.now(), limit: this.batchSize });
      total += n;
      if (n < this.batchSize || this.stopped) return total;
      await new Promise<void>((r) => setImmediate(r));
    }
  }
}
