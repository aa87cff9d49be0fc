/**
 * What a server, a publisher and a retained log do with a backend before
 * their first statement: open it and check its schema, and pick the clock
 * they run on (the database's on PostgreSQL, by default).
 *
 * ## Who closes a backend: the last of its users
 *
 * One backend object may be given to several users at once (a server, a
 * publisher, `openLogs()`, a `RetainedLog`): each that opens it
 * ({@link acquireBackend}) counts as one user, and its own close or
 * shutdown ({@link releaseBackend}) gives its use back; the backend is
 * closed when the last user has given it back, so closing one never breaks
 * another (closing `openLogs()` once closed the backend a publisher still
 * used). The dashboard and the CLI borrow: they open it when it is not
 * open and never close it. `backend.close()` called directly closes at once,
 * whoever still uses it. A backend on an application-owned pool or database
 * (`postgres({ pool })`, `sqlite({ database })`) never ends that pool or
 * closes that database, whoever closes last.
 *
 * ```text
 *   users 0 ──acquire──► 1 (opened) ──acquire──► 2 ──release──► 1 ──release──► 0 (closed)
 * ```
 *
 * The counts are kept by backend object under a process-global symbol, as
 * `liveBackends()`, whichever copy of this module counts them.
 */
import type { Backend } from "./backend.js";
import type { Clock } from "../core/clock.js";
import { DatabaseClock } from "../core/database-clock.js";
import { SchemaVersionError } from "../errors.js";

/**
 * Opens a backend and makes sure its schema is current (migrating when
 * allowed). Without `autoMigrate`, a SQLite file that does not exist throws
 * `DatabaseNotFoundError` and is not created. A schema behind or ahead throws `SchemaVersionError`, and closes
 * the backend when no user holds it ({@link acquireBackend}).
 */
export async function prepareBackend(backend: Backend, autoMigrate: boolean): Promise<void> {
  // Without autoMigrate nothing may be created: a missing SQLite file is DatabaseNotFoundError, not a new empty database.
  await backend.open({ createMissing: autoMigrate });
  const status = await backend.migrations.status();
  if (status.current === status.latest) return;
  if (status.current < status.latest && autoMigrate) {
    await backend.migrations.up();
    return;
  }
  if (!backendUsers().has(backend)) await backend.close();
  throw new SchemaVersionError(status.current, status.latest, backend.migrateHint);
}

/**
 * Counts one more user of `backend` without opening it (a server counts
 * itself before its start waits for the database). Give it back with
 * {@link releaseBackend}.
 */
export function holdBackend(backend: Backend<unknown>): void {
  const users = backendUsers();
  users.set(backend, (users.get(backend) ?? 0) + 1);
}

/** {@link holdBackend}, then {@link prepareBackend}; when that fails, the use is given back (closing the backend if it was the only one). */
export async function acquireBackend(backend: Backend<unknown>, autoMigrate: boolean): Promise<void> {
  holdBackend(backend);
  try {
    await prepareBackend(backend as Backend, autoMigrate);
  } catch (error) {
    await releaseBackend(backend);
    throw error;
  }
}

/** Gives back one use of `backend`; the last one closes it. */
export async function releaseBackend(backend: Backend<unknown>): Promise<void> {
  const users = backendUsers();
  const left = (users.get(backend) ?? 0) - 1;
  if (left > 0) {
    users.set(backend, left);
    return;
  }
  users.delete(backend);
  await backend.close();
}

/** Users of each backend object that has any. */
function backendUsers(): WeakMap<object, number> {
  const g = globalThis as { [BACKEND_USERS]?: WeakMap<object, number> };
  return (g[BACKEND_USERS] ??= new WeakMap());
}
const BACKEND_USERS = Symbol.for("later.backendUsers");

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
