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
 * the statement cache are in {@link SqliteConnection}; the job statements in
 * {@link SqliteJobStore}, partitions and recurring schedules in stores of
 * their own.
 *
 * The driver, better-sqlite3, is an optional peer dependency: {@link sqlite}
 * loads it (see `load-driver.ts`) and throws `DriverNotInstalledError` when
 * the application has not installed it.
 */
import type Database from "better-sqlite3";
import { DatabaseUnavailableError, InvalidConfigError } from "../../errors.js";
import type * as B from "../backend.js";
import { liveBackends } from "../live-backends.js";
import { loadDriver } from "../load-driver.js";
import { SqliteConnection } from "./sqlite-connection.js";
import { SqliteJobStore } from "./sqlite-job-store.js";
import { SqlitePartitionStore } from "./sqlite-partition-store.js";
import { SqliteRecurringStore } from "./sqlite-recurring-store.js";
import { StageDeltas } from "./sqlite-stage-counters.js";
import type { Row } from "../shared/job-rows.js";
import { JOB_GET, JOB_LIST } from "../shared/inspect-statements.js";
import { READY_COUNT, STUCK_JOBS } from "../shared/job-statements.js";
import { MAINTENANCE_CLAIM } from "../shared/maintenance-statements.js";
import { type RunStatement, sqliteCompiler } from "../shared/shared-statement.js";
import { insertIntoCallerTransaction } from "./sqlite-caller-insert.js";
import { applySqliteMigrations, readSqliteMigrationStatus } from "./sqlite-migrations.js";
import { subscribeCommits, WalWatcher } from "./wal-watcher.js";

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
  /** Path of the database file; created when missing. */
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

export class SqliteBackend implements B.Backend {
  readonly kind = "sqlite";
  readonly namespace: string;
  readonly capabilities: B.BackendCapabilities = { crossProcessWake: true, supportsVacuum: true, claimBatch: { perWorker: 4, max: 32 } };
  readonly migrateHint: string;

  private connection: SqliteConnection | null = null;
  private readonly jobs = new SqliteJobStore(this);
  private readonly partitions = new SqlitePartitionStore(this.jobs);
  private readonly recurring = new SqliteRecurringStore(this.jobs);
  private readonly counters = this.jobs.counters;
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
    const database = options.database as Partial<SqliteDatabase> | undefined;
    if (
      database !== undefined &&
      (typeof database !== "object" || database === null || typeof database.prepare !== "function" || typeof database.pragma !== "function")
    ) {
      throw new InvalidConfigError("sqlite(): `database` must be a better-sqlite3 Database (new Database(file))");
    }
    this.namespace = options.namespace ?? "default";
    if (typeof this.namespace !== "string" || this.namespace === "") throw new InvalidConfigError("sqlite(): `namespace` must be a non-empty string");
    const busy = options.busyTimeoutMs ?? 5_000;
    if (!Number.isInteger(busy) || busy < 0) throw new InvalidConfigError("sqlite(): `busyTimeoutMs` must be an integer >= 0");
    this.migrateHint = `later migrate up --database sqlite:${options.file ?? options.database?.name ?? "PATH"}`;
    this.driver = options.file === undefined ? null : loadDriver("better-sqlite3", "SQLite");
  }

  /** The database file path. */
  get file(): string {
    return this.options.file ?? this.options.database!.name;
  }

  async open(): Promise<void> {
    if (this.connection) return;
    const { file, database } = this.options;
    this.connection = SqliteConnection.open(
      database ? { database: database as Database.Database } : { file: file!, driver: this.driver! },
      this.options.busyTimeoutMs ?? 5_000,
    );
    liveBackends().set(this, `sqlite ${this.file} (namespace ${this.namespace})`);
  }

  async close(): Promise<void> {
    this.watcher?.stop();
    this.watcher = null;
    this.connection?.close();
    this.connection = null;
    liveBackends().delete(this);
  }

  // ---- migrations -------------------------------------------------------

  async migrationStatus(): Promise<B.MigrationStatusResult> {
    return readSqliteMigrationStatus(this.conn());
  }

  async migrationUp(): Promise<B.MigrationUpResult> {
    const applied = applySqliteMigrations(this.conn());
    return { applied, current: (await this.migrationStatus()).current };
  }

  // ---- jobs -------------------------------------------------------------

  async jobInsertMany(params: B.JobInsertManyParams): Promise<B.JobInsertManyResult> {
    if (params.transaction !== undefined) return insertIntoCallerTransaction(params.transaction, this.namespace, params);
    return this.immediate(() => ({ stages: this.jobs.insertRows(params.jobs, params.now) }));
  }

  async jobClaimReady(params: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    if (params.limit <= 0 || params.jobTypes.length === 0) return { jobs: [] };
    return this.jobs.claim(params);
  }

  async jobFinishMany(params: B.JobFinishManyParams): Promise<B.JobFinishManyResult> {
    return this.immediate(() => this.jobs.finishRows(params));
  }

  async jobReleaseMany(params: B.JobReleaseManyParams): Promise<void> {
    this.jobs.release(params);
  }

  async leaseRenew(params: B.LeaseRenewParams): Promise<B.LeaseRenewResult> {
    if (params.claims.length === 0) return { renewed: [] };
    return this.jobs.renew(params);
  }

  async jobListStuck(params: B.JobListStuckParams): Promise<B.StuckJob[]> {
    return STUCK_JOBS.run(sqliteCompiler, this.read, { ...params, namespace: this.namespace });
  }

  async jobCountReady(params: B.JobCountReadyParams): Promise<number> {
    if (params.jobTypes.length === 0) return 0;
    return READY_COUNT.run(sqliteCompiler, this.read, { ...params, namespace: this.namespace });
  }

  async jobDeleteExpired(params: B.JobDeleteExpiredParams): Promise<number> {
    return this.immediate(() => {
      const rows = this.all(
        `DELETE FROM later_jobs WHERE id IN (SELECT id FROM later_jobs WHERE namespace = ? AND expires_at IS NOT NULL AND expires_at < ? LIMIT ?)
         RETURNING stage, topic, partition_no`,
        this.namespace,
        params.now,
        params.limit,
      );
      const deltas = new StageDeltas();
      for (const r of rows) deltas.move(r.stage, null, r.topic, r.partition_no);
      this.counters.write(deltas);
      return rows.length;
    });
  }

  async jobGet(params: B.JobGetParams): Promise<B.JobRecord | null> {
    return JOB_GET.run(sqliteCompiler, this.read, { ...params, namespace: this.namespace });
  }

  async jobList(params: B.JobListParams): Promise<B.JobRecord[]> {
    return JOB_LIST.run(sqliteCompiler, this.read, { ...params, namespace: this.namespace });
  }

  /** Reads the namespace's stage counters (see `sqlite-stage-counters.ts`). */
  async jobCountByStage(): Promise<B.JobCountByStageResult> {
    return this.counters.stageCounts();
  }

  async namespaceCounts(): Promise<B.NamespaceCount[]> {
    return this.counters.namespaceCounts();
  }

  async maintenanceClaim(params: B.MaintenanceClaimParams): Promise<boolean> {
    return MAINTENANCE_CLAIM.run(sqliteCompiler, this.write, { ...params, namespace: this.namespace });
  }

  async databaseVacuum(): Promise<void> {
    this.conn().db.exec("VACUUM");
  }

  /** Other processes' commits, from the WAL file filtered by `PRAGMA data_version` (see {@link subscribeCommits}). */
  wakeSubscribe(listener: () => void): () => void {
    this.watcher ??= new WalWatcher(this.file);
    return subscribeCommits(this.watcher, () => this.connection?.dataVersion() ?? null, listener);
  }

  // ---- topics and partitions (SQL in sqlite-partition-store.ts) ----------

  async topicRegister(params: B.TopicRegisterParams): Promise<void> {
    this.partitions.topicRegister(params);
  }

  async partitionHeadClaim(params: B.PartitionHeadClaimParams): Promise<B.PartitionHeadClaimResult> {
    return this.partitions.headClaim(params);
  }

  async partitionHeadFinish(params: B.PartitionHeadFinishParams): Promise<B.PartitionHeadFinishResult> {
    return this.partitions.headFinish(params);
  }

  async partitionLeaseRenew(params: B.PartitionLeaseRenewParams): Promise<B.PartitionLeaseRenewResult> {
    return this.partitions.leaseRenew(params);
  }

  async partitionMemberHeartbeat(params: B.PartitionMemberHeartbeatParams): Promise<B.PartitionMemberHeartbeatResult> {
    return this.partitions.memberHeartbeat(params);
  }

  async partitionMemberRemove(params: B.PartitionMemberRemoveParams): Promise<void> {
    this.partitions.memberRemove(params);
  }

  async partitionHeadForceFail(params: B.PartitionHeadForceFailParams): Promise<string | null> {
    return this.partitions.headForceFail(params);
  }

  async partitionHistoryTruncate(params: B.PartitionHistoryTruncateParams): Promise<number> {
    return this.partitions.historyTruncate(params);
  }

  async partitionDepth(): Promise<B.PartitionDepthResult> {
    return this.counters.partitionDepth();
  }

  async topicDepth(): Promise<B.TopicDepthResult> {
    return this.counters.topicDepth();
  }

  // ---- recurring schedules (SQL in sqlite-recurring-store.ts) ------------

  async recurringUpsert(params: B.RecurringUpsertParams): Promise<B.RecurringUpsertResult> {
    return this.recurring.upsert(params);
  }

  async recurringDueList(params: B.RecurringDueListParams): Promise<B.RecurringSchedule[]> {
    return this.recurring.dueList(params);
  }

  async recurringAdvance(params: B.RecurringAdvanceParams): Promise<B.RecurringAdvanceResult> {
    return this.recurring.advance(params);
  }

  async recurringList(): Promise<B.RecurringSchedule[]> {
    return this.recurring.list();
  }

  async recurringDelete(params: B.RecurringDeleteParams): Promise<boolean> {
    return this.recurring.delete(params);
  }

  // ---- statement plumbing -------------------------------------------------

  private immediate<R>(body: () => R): R {
    return this.conn().immediate(body);
  }

  /** @internal The open connection (for the stores beside this class); throws when closed. */
  conn(): SqliteConnection {
    if (!this.connection) throw new DatabaseUnavailableError("the SQLite backend is not open (the server was shut down, or never started)");
    return this.connection;
  }

  /** Runs a shared statement (`shared/*-statements.ts`) that reads. */
  private readonly read: RunStatement = (s) => this.conn().all(s.text, ...s.values);

  /** Runs a shared statement that writes, in its own `immediate` transaction. */
  private readonly write: RunStatement = (s) => this.immediate(() => this.conn().all(s.text, ...s.values));

  private all(text: string, ...args: unknown[]): Row[] {
    return this.conn().all(text, ...args);
  }
}
