/**
 * The maintenance statements of the SQLite backend (`backend.maintenance`):
 * the turn at a task is written once for both dialects
 * (`shared/maintenance-statements.ts`), run in its own `BEGIN IMMEDIATE`;
 * `VACUUM` is SQLite's own.
 */
import type * as B from "../backend.js";
import { MAINTENANCE_CLAIM } from "../shared/maintenance-statements.js";
import { type RunStatement, sqliteCompiler } from "../shared/shared-statement.js";
import type { SqliteHost } from "./sqlite-connection.js";

export class SqliteMaintenanceStore implements B.MaintenanceStore {
  constructor(private readonly host: SqliteHost) {}

  async claim(params: B.MaintenanceClaimParams): Promise<boolean> {
    return MAINTENANCE_CLAIM.run(sqliteCompiler, this.write, { ...params, namespace: this.host.namespace });
  }

  /** Rewrites the file without the pages freed by deleted rows; holds the write lock meanwhile. */
  async vacuum(): Promise<void> {
    this.host.conn().exec("VACUUM");
  }

  /** None: SQLite has no server, and every process on the file shares this machine's clock. */
  async databaseTime(): Promise<null> {
    return null;
  }

  /** Nothing to refresh: SQLite plans without weighing a table's size (`capabilities.plannerStatistics` is false). */
  async statisticsRefresh(): Promise<B.StatisticsRefresh> {
    return { analyzed: [], notOwned: [] };
  }

  private readonly write: RunStatement = (s) => this.host.conn().write(s);
}
