/**
 * What a server, a publisher and a retained log do with a backend before
 * their first statement: open it and check its schema, and pick the clock
 * they run on (the database's on PostgreSQL, by default).
 */
import type { Backend } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import { DatabaseClock } from "../core/database-clock.js";
import { SchemaVersionError } from "../errors.js";

/** Opens a backend and makes sure its schema is current (migrating when allowed). */
export async function prepareBackend(backend: Backend, autoMigrate: boolean): Promise<void> {
  await backend.open();
  const status = await backend.migrations.status();
  if (status.current === status.latest) return;
  if (status.current < status.latest && autoMigrate) {
    await backend.migrations.up();
    return;
  }
  await backend.close();
  throw new SchemaVersionError(status.current, status.latest, backend.migrateHint);
}

/**
 * The clock a server or publisher runs on: with `timeSource: "database"` on
 * a backend whose database has a clock of its own (PostgreSQL), a
 * {@link DatabaseClock} over `local`, its offset measured now; else null
 * (use `local` as it is).
 */
export async function followDatabaseClock(timeSource: "database" | "local", local: Clock, backend: Backend<unknown>): Promise<DatabaseClock | null> {
  if (timeSource === "local") return null;
  const clock = new DatabaseClock(local, () => backend.maintenance.databaseTime());
  return (await clock.sync()) ? clock : null;
}
