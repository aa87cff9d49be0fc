import { PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** How often each server compares the tables' sizes with their statistics: one cheap read of the catalog. */
export const STATISTICS_CHECK_INTERVAL_MS = 1_000;

/**
 * Task `analyze`: keeps the query planner's statistics in step with the
 * growth of later's tables (`maintenance.statisticsRefresh`), so no
 * prepared statement keeps a plan made while the jobs table was small.
 * Made only where `capabilities.plannerStatistics` (PostgreSQL). Runs on
 * every server (not shared: the check is a read, and `ANALYZE (SKIP_LOCKED)`
 * with the size test keeps two servers from analyzing one growth twice in
 * a row), every {@link STATISTICS_CHECK_INTERVAL_MS}: a table grows by half
 * its size at most between two looks while it is small, the only time a
 * plan can be made that reads it whole.
 *
 * Why not leave it to autovacuum: it may be off (as on some test and CI
 * databases), and when on it reaches a table up to a minute later, or
 * after a long vacuum of another: under a backlog that grew from nothing,
 * claims and finishes then scanned the whole table until it did.
 *
 * Events: `{ type: "maintenance", task: "analyze", count }` (tables
 * analyzed) after a run that analyzed; a `PLANNER_STATISTICS_STALE`
 * warning, once per table, for a grown table this role may not analyze.
 */
export class StatisticsRefresher extends PeriodicService {
  private readonly warned = new Set<string>();

  constructor(host: MaintenanceHost) {
    super(host, "analyze", STATISTICS_CHECK_INTERVAL_MS, false);
  }

  async runOnce(): Promise<number> {
    const { analyzed, notOwned } = await this.host.backend.maintenance.statisticsRefresh();
    for (const table of notOwned) {
      if (this.warned.has(table)) continue;
      this.warned.add(table);
      this.host.onEvent({
        type: "warning",
        code: "PLANNER_STATISTICS_STALE",
        table,
        message: `later: table ${table} has more than doubled since its planner statistics were taken, and this role does not own it, so it cannot ANALYZE it; until autovacuum does, statements planned while it was small may read it whole. Grant the table's owner role to this one, or keep autovacuum on.`,
      });
    }
    if (analyzed.length > 0) this.host.onEvent({ type: "maintenance", task: this.task, count: analyzed.length });
    return analyzed.length;
  }
}
