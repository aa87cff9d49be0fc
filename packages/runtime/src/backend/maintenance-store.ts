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
  /**
   * Keeps the query planner's statistics in step with the growth of later's
   * tables (only when `capabilities.plannerStatistics`; elsewhere resolves
   * to nothing refreshed): each table now more than twice the size its
   * statistics were taken at (and at least 16 pages) is analyzed.
   *
   * Why: PostgreSQL keeps a prepared statement's generic plan until the
   * statistics of a table it reads change. A plan made while a table was
   * small (a server started on an empty queue) reads it sequentially, which
   * costs nothing then and a scan of every row once the backlog has grown;
   * with autovacuum off, slow or busy elsewhere, such plans stayed for
   * minutes (a claim of 10 jobs among 100,000 taking tens of ms).
   * `ANALYZE` sends every session the invalidation that makes them plan
   * again, at the table's present size.
   *
   * A grown table this role may not analyze (it does not own it) is listed
   * in `notOwned` and left alone.
   */
  statisticsRefresh(): Promise<StatisticsRefresh>;
}

/** What {@link MaintenanceStore.statisticsRefresh} did. */
export interface StatisticsRefresh {
  /** The tables analyzed (a table another session was analyzing at that moment is skipped, and found again next time). */
  analyzed: string[];
  /** The grown tables this role may not analyze. */
  notOwned: string[];
}

export interface MaintenanceClaimParams {
  task: string;
  now: number;
  intervalMs: number;
}
