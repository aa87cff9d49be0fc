/** The maintenance part of the seam (`backend.maintenance`): turns at periodic tasks, reclaiming disk space, and the database's clock. */

/** The maintenance statements of one backend, scoped to its namespace. */
export interface MaintenanceStore {
  /**
   * Takes this interval's turn at a maintenance task: true for exactly one
   * caller per `intervalMs` across every process, tracked in the database so
   * it survives restarts.
   */
  claim(params: MaintenanceClaimParams): Promise<boolean>;
  /** Reclaims space freed by deleted rows (only when `capabilities.supportsVacuum`; a no-op elsewhere). */
  vacuum(): Promise<void>;
  /**
   * The database server's clock now, ms since the epoch, read in one round
   * trip; null where the database has no clock of its own to agree on
   * (SQLite: every process that opens the file runs on this machine's
   * clock). Servers on several hosts measure their offset to it
   * (`DatabaseClock`), so leases, delays and schedules follow one clock.
   */
  databaseTime(): Promise<number | null>;
}

export interface MaintenanceClaimParams {
  task: string;
  now: number;
  intervalMs: number;
}
