import type { DatabaseClock } from "../core/database-clock.js";
import { PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** Settings of the {@link ClockSync}. */
export interface ClockSyncConfig {
  /** How often each server measures its offset again. Server option `clockSyncIntervalMs`, default 30 s. */
  intervalMs: number;
}

/**
 * Task `clock-sync`: measures this server's offset to the database's clock
 * again ({@link DatabaseClock.sync}), on every server (not a shared turn:
 * each host has its own clock). Made only when the server follows the
 * database's clock (`timeSource: "database"` on PostgreSQL). A failed read
 * keeps the last offset and reports an `error` event.
 */
export class ClockSync extends PeriodicService {
  constructor(
    host: MaintenanceHost,
    config: ClockSyncConfig,
    private readonly clock: DatabaseClock,
  ) {
    super(host, "clock-sync", config.intervalMs, false);
  }

  async runOnce(): Promise<number> {
    await this.clock.sync();
    return 0;
  }
}
