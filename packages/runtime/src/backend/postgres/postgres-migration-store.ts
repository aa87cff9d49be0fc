/** The migrations of the PostgreSQL backend (`backend.migrations`); the migrations themselves are in `postgres-queue-migrations.ts` and `postgres-job-control-migrations.ts`, applied by `postgres-migrations.ts`. */
import type * as B from "../backend.js";
import { guarded } from "./postgres-errors.js";
import { applyMigrations, readMigrationStatus } from "./postgres-migrations.js";
import type { PostgresRunner } from "./postgres-runner.js";

export class PostgresMigrationStore implements B.MigrationStore {
  constructor(private readonly host: PostgresRunner) {}

  async status(): Promise<B.MigrationStatusResult> {
    return guarded("migration status", () => readMigrationStatus(this.host.conn(), this.host.quoted));
  }

  /** In one transaction under an advisory lock of the schema: a second process migrating at once waits, then finds the work done. */
  async up(): Promise<B.MigrationUpResult> {
    const applied = await guarded("migration", () => applyMigrations(this.host.conn(), this.host.schema, this.host.quoted));
    return { applied, current: (await this.status()).current };
  }
}
