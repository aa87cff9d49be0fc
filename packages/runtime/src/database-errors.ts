/**
 * The errors of the database and its driver: a schema of another release, a
 * database that is missing, unreachable, full or locked, a driver that is not
 * installed. Exported with every other error by `errors.ts`.
 */
import { LaterError } from "./later-error.js";

/** The database schema is not the version this release expects. */
export class SchemaVersionError extends LaterError {
  readonly databaseVersion: number;
  readonly expectedVersion: number;
  constructor(databaseVersion: number, expectedVersion: number, migrateHint: string) {
    const what =
      databaseVersion < expectedVersion
        ? `is behind (version ${databaseVersion}, this release needs ${expectedVersion}): run \`${migrateHint}\`, or start with autoMigrate: true`
        : `is ahead (version ${databaseVersion}, this release knows up to ${expectedVersion}): upgrade later in this application, never downgrade a migrated database`;
    super("SCHEMA_VERSION_MISMATCH", `the later schema in this database ${what}`);
    this.databaseVersion = databaseVersion;
    this.expectedVersion = expectedVersion;
  }
}

/**
 * The database does not exist: a SQLite file that is not there, opened by a
 * server, publisher or log without `autoMigrate`, or by a CLI command that
 * only reads. Nothing was created: a mistyped path must not become a new,
 * empty database that no other process uses. The message says how to create
 * it (`later migrate up`, or `autoMigrate: true`).
 */
export class DatabaseNotFoundError extends LaterError {
  constructor(message: string) {
    super("DATABASE_NOT_FOUND", message);
  }
}

/** The database cannot be opened, read or written (bad path, permissions, connection refused). */
export class DatabaseUnavailableError extends LaterError {
  /**
   * True when the database could not be reached but may be soon: the
   * connection was refused, reset or cut, or the server is starting up or
   * shutting down (a restart, an outage). Trying again later can succeed,
   * and `BackgroundJobServer.start` does so for up to `databaseWaitMs`.
   * False when trying again the same way cannot help (a bad path or
   * password, a backend that was closed).
   */
  readonly transient: boolean;
  constructor(message: string, cause?: unknown, options: { transient?: boolean } = {}) {
    super("DATABASE_UNAVAILABLE", message, { cause });
    this.transient = options.transient ?? false;
  }
}

/**
 * The database has no room for a write: the disk is full, or SQLite's
 * `max_page_count` is reached. The write was rolled back whole; nothing of
 * it is stored. Transient once space is freed: the server's loops retry
 * their writes (an outcome is kept and written then), an enqueue is the
 * caller's to retry.
 */
export class DatabaseFullError extends LaterError {
  constructor(message: string, cause?: unknown) {
    super("DATABASE_FULL", message, { cause });
  }
}

/**
 * Another process held SQLite's write lock for longer than the backend's
 * `busyTimeoutMs`. The write was not made; retrying later is safe (the
 * server's loops do).
 */
export class DatabaseBusyError extends LaterError {
  constructor(message: string, cause?: unknown) {
    super("DATABASE_BUSY", message, { cause });
  }
}

/**
 * An optional peer dependency of `@later/runtime` is needed and the
 * application has not installed it (or it is installed but does not load):
 * a backend's database driver, thrown by its factory (`sqlite()`,
 * `postgres()`) before anything is opened, or `@opentelemetry/api`, thrown
 * by `tracing()` (`@later/runtime/otel`). The message names the package to
 * install.
 */
export class DriverNotInstalledError extends LaterError {
  /** The npm package to add: `"better-sqlite3"`, `"pg"` or `"@opentelemetry/api"`. */
  readonly driver: string;
  /**
   * @param needer What needs it, as the message's subject ("the SQLite backend").
   * @param loadError Absent when the package cannot be found; else what
   *   loading the found package threw (kept as `cause`).
   */
  constructor(driver: string, needer: string, loadError?: unknown) {
    super(
      "DRIVER_NOT_INSTALLED",
      loadError === undefined
        ? `${needer} needs the ${driver} package, which is not installed: run \`npm install ${driver}\` in the application`
        : `${needer} needs the ${driver} package, which is installed but does not load (${(loadError as Error)?.message ?? String(loadError)}): reinstall it with \`npm install ${driver}\``,
      loadError === undefined ? undefined : { cause: loadError },
    );
    this.driver = driver;
  }
}
