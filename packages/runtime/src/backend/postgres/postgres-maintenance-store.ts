/**
 * The maintenance statements of the PostgreSQL backend
 * (`backend.maintenance`): the turn at a task is written once for both
 * dialects (`shared/maintenance-statements.ts`); there is no vacuum of
 * later's own (`capabilities.supportsVacuum` is false: autovacuum reclaims
 * space on PostgreSQL).
 */
import type * as B from "../backend.js";
import { MAINTENANCE_CLAIM } from "../shared/maintenance-statements.js";
import { statement } from "./postgres-statement.js";
import type { PostgresRunner } from "./postgres-runner.js";

/** `clock_timestamp()`, not `now()`: the time of the read itself, not of the transaction's start. */
const DATABASE_TIME = statement("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms");

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
}
