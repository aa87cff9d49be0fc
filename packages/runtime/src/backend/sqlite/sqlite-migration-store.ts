/** The migrations of the SQLite backend (`backend.migrations`); the migrations themselves are in `sqlite-queue-migrations.ts` and `sqlite-job-control-migrations.ts`, applied by `sqlite-migrations.ts`. */
import type * as B from "../backend.js";
import type { SqliteHost } from "./sqlite-connection.js";
import { applySqliteMigrations, readSqliteMigrationStatus } from "./sqlite-migrations.js";

export class SqliteMigrationStore implements B.MigrationStore {
  constructor(private readonly host: SqliteHost) {}

  async status(): Promise<B.MigrationStatusResult> {
    return readSqliteMigrationStatus(this.host.conn());
  }

  /** In one `BEGIN IMMEDIATE`: a second process migrating at once waits, then finds the work done. */
  async up(): Promise<B.MigrationUpResult> {
    const applied = applySqliteMigrations(this.host.conn());
    return { applied, current: (await this.status()).current };
  }
}
