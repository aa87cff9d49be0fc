/**
 * The maintenance statements of the PostgreSQL backend
 * (`backend.maintenance`): the turn at a task is written once for both
 * dialects (`shared/maintenance-statements.ts`); there is no vacuum of
 * later's own (`capabilities.supportsVacuum` is false: autovacuum reclaims
 * space on PostgreSQL), but there is an `ANALYZE` of a table that outgrew
 * its statistics (`statisticsRefresh`), whatever autovacuum does.
 */
import type * as B from "../backend.js";
import { MAINTENANCE_CLAIM } from "../shared/maintenance-statements.js";
import { statement } from "./postgres-statement.js";
import type { PostgresRunner } from "./postgres-runner.js";

/** `clock_timestamp()`, not `now()`: the time of the read itself, not of the transaction's start. */
const DATABASE_TIME = statement("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms");

/**
 * later's tables in schema `$1` now more than twice the pages their
 * statistics were taken at (`relpages`, set by the last `ANALYZE` or
 * `VACUUM`; 0 before either), and at least 16 pages: below that a
 * sequential scan costs no more than an index descent. `pg_relation_size`
 * reads the file's length, not its rows; `pg_has_role(relowner, 'USAGE')`
 * says whether this role may analyze the table (a superuser may any).
 */
const GROWN_TABLES = statement(`SELECT c.relname AS name, pg_has_role(c.relowner, 'USAGE') AS owned
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname LIKE 'later\\_%'
  AND pg_relation_size(c.oid) > 2 * greatest(c.relpages, 8)::bigint * current_setting('block_size')::bigint`);

export class PostgresMaintenanceStore implements B.MaintenanceStore {
  constructor(private readonly host: PostgresRunner) {}

  async claim(params: B.MaintenanceClaimParams): Promise<boolean> {
    return MAINTENANCE_CLAIM.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  /** Nothing to do: autovacuum reclaims space on PostgreSQL. */
  async vacuum(): Promise<void> {}

  async databaseTime(): Promise<number> {
    const [row] = await this.host.execute(DATABASE_TIME, []);
    return Math.round(Number(row!.ms));
  }

  /**
   * One read of the tables' sizes; then, per grown table, `ANALYZE
   * (SKIP_LOCKED)`: a table another session (autovacuum, another server)
   * is analyzing is skipped rather than waited for. `ANALYZE` samples at
   * most 300 × `default_statistics_target` rows, so it costs about the same
   * on a table of any size, and it runs at most once per doubling.
   */
  async statisticsRefresh(): Promise<B.StatisticsRefresh> {
    const rows = await this.host.execute(GROWN_TABLES, [this.host.schema]);
    const refresh: B.StatisticsRefresh = { analyzed: [], notOwned: [] };
    for (const row of rows) {
      const name = String(row.name);
      if (row.owned !== true) {
        refresh.notOwned.push(name);
        continue;
      }
      await this.host.utility(`ANALYZE (SKIP_LOCKED) ${this.host.quoted}."${name.replaceAll('"', '""')}"`);
      refresh.analyzed.push(name);
    }
    return refresh;
  }
}
