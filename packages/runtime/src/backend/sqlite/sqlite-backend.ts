/**
 * The SQLite backend: one database file, shared by every process that can
 * open it.
 *
 * How it runs: better-sqlite3 is synchronous, so every transaction of this
 * backend's own runs start to finish inside one call (`BEGIN IMMEDIATE`
 * through better-sqlite3's `transaction().immediate()`): no other code can
 * interleave statements on the connection, and the write lock is taken up
 * front, so two processes never deadlock upgrading a read lock. Statements
 * are prepared once and cached. Kysely is used where a caller-owned
 * transaction is written to (`enqueueIn`), since only Kysely knows how to
 * run on it; the hot statements are fixed SQL text, prepared once, because
 * compiling a query per call costs more than running it here. Times in the
 * stage history are cast to INTEGER: better-sqlite3 binds JS numbers as
 * REAL, which JSON would print as `1796221142587.0`. Pragmas and
 * the statement cache are in {@link SqliteConnection}; the statements in one
 * store per subsystem (`sqlite-*-store.ts`), which this class holds.
 *
 * The driver, better-sqlite3, is an optional peer dependency: {@link sqlite}
 * loads it (see `load-driver.ts`) and throws `DriverNotInstalledError` when
 * the application has not installed it.
 */
import type Database from "better-sqlite3";
import { existsSync } from "node:fs";
import { DatabaseNotFoundError, DatabaseUnavailableError, InvalidConfigError } from "../../errors.js";
import type * as B from "../backend.js";
import { liveBackends } from "../live-backends.js";
import { loadDriver } from "../load-driver.js";
import { SqliteConnection } from "./sqlite-connection.js";
import { SqliteInspectStore } from "./sqlite-inspect-store.js";
import { SqliteActivityStore } from "./sqlite-activity-store.js";
import { SqliteJobControlStore } from "./sqlite-job-control-store.js";
import { SqliteJobStore } from "./sqlite-job-store.js";
import { SqliteLogStore } from "./sqlite-log-store.js";
import { SqliteMaintenanceStore } from "./sqlite-maintenance-store.js";
import { SqliteMigrationStore } from "./sqlite-migration-store.js";
import { SqlitePartitionStore } from "./sqlite-partition-store.js";
import { SqliteRecurringStore } from "./sqlite-recurring-store.js";
import { subscribeCommits, WalWatcher } from "./wal-watcher.js";
import { nameProblem } from "../../core/stored-name.js";
import { databaseUrlScheme, sqliteFileOfUrl } from "../database-url.js";

export type { SqliteTransaction } from "../transaction-handle.js";

/**
 * What later uses of an application-owned better-sqlite3 `Database` (the
 * value of `new Database(file)`). A structural type, as Kysely's
 * `SqliteDatabase`, so an application compiles against `@later/runtime/sqlite`
 * without better-sqlite3's type package; any better-sqlite3 12 `Database`
 * fits.
 */
export interface SqliteDatabase {
  /** The file the database was opened with. */
  readonly name: string;
  prepare(source: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction(fn: (...args: never[]) => unknown): unknown;
}

/** Options of {@link sqlite}. Give either `file` or `database`. */
export interface SqliteBackendOptions {
  /**
   * Path of the database file; created when missing only by `later migrate
   * up` or a server, publisher or log with `autoMigrate: true` (otherwise a
   * missing file is `DatabaseNotFoundError`, and nothing is created). A path, not a URL:
   * `"sqlite:later.db"` is refused (`InvalidConfigError`), since it would
   * otherwise create a file of that name; `backendFromUrl` takes URLs.
   */
  file?: string;
  /**
   * An application-owned better-sqlite3 `Database` (e.g. the one the
   * application's Kysely `SqliteDialect` uses, for `enqueueIn`). later sets
   * its pragmas (WAL, `busy_timeout`) and never closes it.
   */
  database?: SqliteDatabase;
  /** Servers on one file and namespace share work. Default `"default"`. */
  namespace?: string;
  /** How long a writer waits for another process's write lock, ms. Default 5000. */
  busyTimeoutMs?: number;
}

const OPTION_KEYS = new Set(["file", "database", "namespace", "busyTimeoutMs"]);

/**
 * Creates the SQLite backend. Nothing is opened until the server starts (or
 * `open()`). With `file`, loads better-sqlite3 first: throws
 * `DriverNotInstalledError` (code `DRIVER_NOT_INSTALLED`) when it is not
 * installed. Bad options throw `InvalidConfigError`.
 */
export function sqlite(options: SqliteBackendOptions): SqliteBackend {
  return new SqliteBackend(options);
}

/**
 * The SQLite backend: its stores, by subsystem (`jobs`, `partitions`,
 * `recurring`, `inspect`, `maintenance`, `migrations`, `log`; the internal seam of
 * `@later/runtime/internal`), and the connection they share. Its
 * `enqueueIn` takes a Kysely transaction ({@link B.SqliteTransaction}) on
 * the same file.
 */
export class SqliteBackend implements B.Backend<B.SqliteTransaction> {
  readonly kind = "sqlite";
  readonly namespace: string;
  readonly capabilities: B.BackendCapabilities = {
    crossProcessWake: true,
    supportsVacuum: true,
    plannerStatistics: false,
    // Up to 128 claimed: no-op jobs ran at 35,500 jobs/s with 32, 48,000 with 128 and 50,000 with 512 (one
    // process of 10 workers, bench/sqlite.js): a claim and an outcome batch are a write transaction each, whose
    // commit is most of their cost; better-sqlite3 is synchronous, so a larger claim delays nothing else in the
    // process. Four per worker until the pace is measured.
    claimBatch: { perWorker: 4, max: 128 },
  };
  readonly migrateHint: string;
  readonly migrations: B.MigrationStore = new SqliteMigrationStore(this);
  readonly jobs: B.JobStore<B.SqliteTransaction>;
  readonly partitions: B.PartitionStore;
  readonly recurring: B.RecurringStore;
  readonly control: B.JobControlStore;
  readonly inspect: B.InspectStore = new SqliteInspectStore(this);
  readonly activity: B.ActivityStore = new SqliteActivityStore(this);
  readonly maintenance: B.MaintenanceStore = new SqliteMaintenanceStore(this);
  readonly log: B.LogStore<B.SqliteTransaction>;

  private connection: SqliteConnection | null = null;
  private watcher: WalWatcher | null = null;
  /** The driver, loaded at construction when the backend opens a file itself. */
  private readonly driver: typeof Database | null;
  constructor(private readonly options: SqliteBackendOptions) {
    if (options === null || typeof options !== "object") throw new InvalidConfigError("sqlite(options): options must be an object");
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) throw new InvalidConfigError(`sqlite(): unknown option "${key}"`);
    }
    if ((options.file === undefined) === (options.database === undefined)) {
      throw new InvalidConfigError("sqlite(): give exactly one of `file` or `database`");
    }
    if (options.file !== undefined && (typeof options.file !== "string" || options.file === "")) {
      throw new InvalidConfigError("sqlite(): `file` must be a non-empty path");
    }
    const scheme = options.file === undefined ? null : databaseUrlScheme(options.file);
    if (scheme === "sqlite") {
      throw new InvalidConfigError(
        `sqlite(): \`file\` is a path, not a URL: use backendFromUrl(${JSON.stringify(options.file)}) (from "@later/runtime"), or sqlite({ file: ${JSON.stringify(sqliteFileOfUrl(options.file!))} })`,
      );
    }
    if (scheme === "postgres" || scheme === "postgresql") {
      throw new InvalidConfigError(
        'sqlite(): `file` is a PostgreSQL URL: use postgres({ connectionString }) from "@later/runtime/postgres", or backendFromUrl(url) from "@later/runtime"',
      );
    }
    const database = options.database as Partial<SqliteDatabase> | undefined;
    if (
      database !== undefined &&
      (typeof database !== "object" || database === null || typeof database.prepare !== "function" || typeof database.pragma !== "function")
    ) {
      throw new InvalidConfigError("sqlite(): `database` must be a better-sqlite3 Database (new Database(file))");
    }
    this.namespace = options.namespace ?? "default";
    const bad = nameProblem(this.namespace);
    if (bad !== null) throw new InvalidConfigError(`sqlite(): \`namespace\` ${bad}`);
    const busy = options.busyTimeoutMs ?? 5_000;
    if (!Number.isInteger(busy) || busy < 0 || busy > 2_147_483_647)
      throw new InvalidConfigError("sqlite(): `busyTimeoutMs` must be an integer from 0 to 2147483647");
    this.migrateHint = `later migrate up --database sqlite:${options.file ?? options.database?.name ?? "PATH"}`;
    this.driver = options.file === undefined ? null : loadDriver("better-sqlite3", "SQLite");
    // The partition and recurring stores write jobs with the job store's statements, inside their own transactions.
    const jobs = new SqliteJobStore(this);
    this.jobs = jobs;
    this.partitions = new SqlitePartitionStore(jobs);
    this.recurring = new SqliteRecurringStore(jobs);
    this.log = new SqliteLogStore(this);
    this.control = new SqliteJobControlStore(jobs);
  }

  private notFound(file: string): DatabaseNotFoundError {
    return new DatabaseNotFoundError(
      `SQLite database ${file} does not exist (nothing was created): create it with \`${this.migrateHint}\`, or pass autoMigrate: true; check the path (relative paths start at the working directory)`,
    );
  }

  /** The database file path. */
  get file(): string {
    return this.options.file ?? this.options.database!.name;
  }

  /**
   * Opens the file (created when missing, unless `createMissing: false`:
   * then a file that does not exist is `DatabaseNotFoundError`, and none is
   * created), or adopts the application's `database`.
   */
  async open(options: B.BackendOpenOptions = {}): Promise<void> {
    if (this.connection) return;
    const { file, database } = this.options;
    const mustExist = options.createMissing === false && file !== undefined && !isMemoryOrUri(file);
    if (mustExist && !existsSync(file)) throw this.notFound(file);
    try {
      this.connection = SqliteConnection.open(
        database ? { database: database as Database.Database } : { file: file!, driver: this.driver!, mustExist },
        this.options.busyTimeoutMs ?? 5_000,
      );
    } catch (error) {
      // Removed between the check and the open: better-sqlite3's fileMustExist refused it.
      if (mustExist && !existsSync(file)) throw this.notFound(file);
      throw error;
    }
    liveBackends().set(this, `sqlite ${this.file} (namespace ${this.namespace})`);
  }

  async close(): Promise<void> {
    this.watcher?.stop();
    this.watcher = null;
    this.connection?.close();
    this.connection = null;
    liveBackends().delete(this);
  }

  /** Other processes' commits, from the WAL file filtered by `PRAGMA data_version` (see {@link subscribeCommits}). */
  wakeSubscribe(listener: () => void): () => void {
    this.watcher ??= new WalWatcher(this.file);
    return subscribeCommits(this.watcher, () => this.connection?.dataVersion() ?? null, listener);
  }

  /**
   * Every commit: other processes' and connections' through the WAL watcher
   * ({@link subscribeCommits}), this connection's own when its transaction
   * commits (`SqliteConnection.commitSubscribe`; `data_version` does not move
   * for those). Resolves at once: both are in place when it returns.
   */
  async doneSubscribe(listener: (discarded?: readonly string[]) => void): Promise<() => void> {
    this.watcher ??= new WalWatcher(this.file);
    const others = subscribeCommits(
      this.watcher,
      () => this.connection?.dataVersion() ?? null,
      () => listener(),
    );
    const own = this.conn().commitSubscribe(listener);
    return () => {
      others();
      own();
    };
  }

  /** @internal The open connection (for the stores beside this class); throws when closed. */
  conn(): SqliteConnection {
    if (!this.connection) throw new DatabaseUnavailableError("the SQLite backend is not open (the server was shut down, or never started)");
    return this.connection;
  }
}

/** `:memory:`, an empty name (a temporary database) or a `file:` URI: no plain file to look for. */
function isMemoryOrUri(file: string): boolean {
  return file === ":memory:" || file === "" || file.startsWith("file:");
}
