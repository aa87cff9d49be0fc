/**
 * The PostgreSQL backend: every process on every host that reaches one
 * database (and uses one schema and namespace) joins one worker pool.
 * PostgreSQL is the coordinator; later adds none of its own.
 *
 * How it runs:
 * - One store per subsystem (`postgres-*-store.ts`), each running its
 *   statements through {@link PostgresRunner} on the backend's pool. Hot
 *   statements (claim, finish, insert, renew, release) are fixed SQL in
 *   `postgres-job-queries.ts`, one round trip each, run as named prepared
 *   statements; the statements that mean the same on SQLite are written
 *   once in `backend/shared/` and prepared the same way.
 * - Claims lock a batch `FOR UPDATE SKIP LOCKED`, so servers never wait on
 *   each other's rows. Every write of a claim is fenced by `(id, attempt)`.
 * - Wake-ups: statements that make work ready send one `pg_notify` on the
 *   channel `later:<schema>` (payload: sender and namespace); a dedicated
 *   LISTEN connection ({@link PostgresWakeups}) wakes this process's workers.
 *   At open a probe checks that a NOTIFY comes back; when it does not
 *   (a transaction-mode pooler) the backend polls only and says so through
 *   `onWarning`. `listen: false` skips the listener altogether.
 * - Named prepared statements, until one is found lost between statements
 *   of a connection (a transaction-mode pooler): from then on statements run
 *   unnamed, with a warning (see `postgres-runner.ts`).
 * - Connections: a killed connection fails only the statement running on it
 *   (the caller retries: the worker pool's loops all do); the pool opens a
 *   new one for the next statement; pool `error` events are handled; the
 *   listener reconnects by itself and then wakes the workers once.
 * - An application-owned `pool` is used as is and never ended.
 * - The driver, pg, is an optional peer dependency: {@link postgres} loads
 *   it (see `load-driver.ts`) and throws `DriverNotInstalledError` when the
 *   application has not installed it.
 */
import { createHash } from "node:crypto";
import type pg from "pg";
import { DatabaseUnavailableError } from "../../errors.js";
import type * as B from "../backend.js";
import { liveBackends } from "../live-backends.js";
import { loadDriver } from "../load-driver.js";
import { checkPostgresOptions, type PostgresBackendOptions } from "./postgres-backend-options.js";
import { describeConnection, isConnectionError } from "./postgres-errors.js";
import { PostgresInspectStore } from "./postgres-inspect-store.js";
import { PostgresActivityStore } from "./postgres-activity-store.js";
import { PostgresJobControlStore } from "./postgres-job-control-store.js";
import { PostgresJobQueries } from "./postgres-job-queries.js";
import { PostgresJobStore } from "./postgres-job-store.js";
import { PostgresLogStore } from "./postgres-log-store.js";
import { PostgresMaintenanceStore } from "./postgres-maintenance-store.js";
import { PostgresMigrationStore } from "./postgres-migration-store.js";
import { PostgresPartitionStore } from "./postgres-partition-store.js";
import { PostgresRecurringStore } from "./postgres-recurring-store.js";
import { PostgresRunner } from "./postgres-runner.js";
import { PostgresWakeups } from "./postgres-wakeups.js";
import { PostgresDoneListener } from "./postgres-done-listener.js";

export type { PostgresBackendOptions, PostgresBackendWarning, PostgresPool } from "./postgres-backend-options.js";
export type { PostgresClient, PostgresTransaction } from "../transaction-handle.js";

/** Connections an owned pool opens at `open()`: a claim, a finish and one more (enqueue, maintenance) in flight at once. */
const WARM_CONNECTIONS = 3;

/**
 * Creates the PostgreSQL backend. Nothing is opened until the server starts
 * (or `open()`). Loads pg first: throws `DriverNotInstalledError` (code
 * `DRIVER_NOT_INSTALLED`) when it is not installed. Bad options throw
 * `InvalidConfigError`.
 */
export function postgres(options: PostgresBackendOptions): PostgresBackend {
  return new PostgresBackend(options);
}

/**
 * The PostgreSQL backend: its stores, by subsystem (`jobs`, `partitions`,
 * `recurring`, `inspect`, `maintenance`, `migrations`; the internal seam of
 * `@later/runtime/internal`), the pool they share and the LISTEN
 * connection. Its `enqueueIn` takes a Kysely transaction or a `pg` client
 * inside `BEGIN` ({@link B.PostgresTransaction}).
 */
export class PostgresBackend implements B.Backend<B.PostgresTransaction> {
  readonly kind = "postgres";
  readonly namespace: string;
  /** The schema holding the tables. */
  readonly schema: string;
  readonly migrateHint: string;
  /** NOTIFY channel of this schema. */
  readonly channel: string;
  readonly migrations: B.MigrationStore;
  readonly jobs: B.JobStore<B.PostgresTransaction>;
  readonly partitions: B.PartitionStore;
  readonly recurring: B.RecurringStore;
  readonly control: B.JobControlStore;
  readonly inspect: B.InspectStore;
  readonly activity: B.ActivityStore;
  readonly maintenance: B.MaintenanceStore;
  readonly log: B.LogStore<B.PostgresTransaction>;

  private opening: Promise<void> | null = null;
  private readonly wakeups: PostgresWakeups;
  /** The done channel's listener (X6), opened by the first `waitFor`. */
  private readonly done: PostgresDoneListener;
  /** Runs every store's statements on the pool (attached while open). */
  private readonly runner: PostgresRunner;
  /** The driver, loaded at construction. */
  private readonly pg: typeof pg;
  /** The application's pool (`options.pool`), if any. */
  private readonly appPool: pg.Pool | undefined;
  private readonly onPoolError = (): void => {
    // An idle connection died (server restart, pg_terminate_backend): the
    // pool has dropped it and opens a new one on demand. Nothing to do.
  };
  /**
   * Every connection of the pool gets an `error` listener of its own: while
   * a connection is checked out by Kysely (which adds none) the pool's is
   * off, and a connection killed then would raise an unhandled `error`
   * event and end the process. The failed statement reports the loss.
   */
  private readonly onPoolConnect = (client: pg.PoolClient): void => {
    client.on("error", () => undefined);
  };

  constructor(private readonly options: PostgresBackendOptions) {
    ({ schema: this.schema, namespace: this.namespace } = checkPostgresOptions(options));
    this.pg = loadDriver("pg", "PostgreSQL");
    this.appPool = options.pool as pg.Pool | undefined;
    // Channel names are identifiers (63 bytes at most): a long schema name is replaced by its hash.
    this.channel = this.schema.length <= 57 ? `later:${this.schema}` : `later:${createHash("sha1").update(this.schema).digest("hex").slice(0, 16)}`;
    this.wakeups = new PostgresWakeups(options, this.channel, this.namespace);
    this.done = new PostgresDoneListener(() => this.wakeups.doneChannel, options);
    const quoted = this.pg.escapeIdentifier(this.schema);
    const runner = new PostgresRunner(this.namespace, this.schema, quoted, this.wakeups, options);
    this.runner = runner;
    // The partition and recurring stores write jobs with the job store's statements, inside their own transactions.
    const jobs = new PostgresJobStore(runner, new PostgresJobQueries(quoted));
    this.jobs = jobs;
    this.partitions = new PostgresPartitionStore(runner, jobs, quoted);
    this.recurring = new PostgresRecurringStore(runner, jobs, quoted);
    this.control = new PostgresJobControlStore(runner, quoted);
    this.inspect = new PostgresInspectStore(runner);
    this.activity = new PostgresActivityStore(runner);
    this.maintenance = new PostgresMaintenanceStore(runner);
    this.log = new PostgresLogStore(runner, quoted);
    this.migrations = new PostgresMigrationStore(runner);
    const where = describeConnection(options.connectionString, this.appPool);
    this.migrateHint = `later migrate up --database ${where}${this.schema === "later" ? "" : ` --schema ${this.schema}`}`;
  }

  /**
   * `crossProcessWake` is true while LISTEN/NOTIFY is in use: `listen` is
   * on and the probe at open succeeded. Never `supportsVacuum` (autovacuum
   * does that job on PostgreSQL). Claims start at 25 jobs per worker and
   * are paced from there (`ClaimPacer`) up to 500 in flight: each claim is a
   * transaction with a commit, whose cost batches share.
   */
  get capabilities(): B.BackendCapabilities {
    return {
      crossProcessWake: this.wakeups.active,
      supportsVacuum: false,
      plannerStatistics: true,
      claimBatch: { perWorker: 25, max: 500 },
    };
  }

  /** Opens the pool and the LISTEN connection. `createMissing` does not apply: a PostgreSQL database is never created. */
  async open(_options?: B.BackendOpenOptions): Promise<void> {
    if (this.opening) return this.opening;
    if (this.runner.isOpen) return;
    this.opening = this.connect().finally(() => (this.opening = null));
    return this.opening;
  }

  private async connect(): Promise<void> {
    const owned = this.appPool === undefined;
    const pool =
      this.appPool ??
      new this.pg.Pool({
        connectionString: this.options.connectionString,
        max: this.options.maxConnections ?? 10,
        application_name: this.options.applicationName ?? "later",
        connectionTimeoutMillis: 10_000,
      });
    pool.on("error", this.onPoolError);
    pool.on("connect", this.onPoolConnect);
    // Connections open side by side, not one after another: the LISTEN
    // connection, and (an owned pool) the ones the first claim, finish and
    // enqueue will use, so the first jobs do not wait for a connection each.
    const warm = owned ? Math.min(WARM_CONNECTIONS, pool.options.max ?? 10) : 1;
    const reachable = Promise.all(Array.from({ length: warm }, () => pool.query("SELECT 1")));
    const wakeups = this.wakeups.start(pool, reachable);
    try {
      await reachable;
    } catch (cause) {
      await wakeups.catch(() => undefined);
      pool.off("error", this.onPoolError);
      pool.off("connect", this.onPoolConnect);
      if (owned) await pool.end().catch(() => undefined);
      throw new DatabaseUnavailableError(
        `cannot connect to PostgreSQL at ${describeConnection(this.options.connectionString, this.appPool)}: ${(cause as Error).message}; check that the server runs and accepts this user`,
        cause,
        // Refused, reset, or the server starting up or shutting down: start() waits for it (databaseWaitMs).
        { transient: isConnectionError(cause) },
      );
    }
    this.runner.attach(pool);
    liveBackends().set(this, `postgres schema ${this.schema} (namespace ${this.namespace})`);
    await wakeups;
  }

  async close(): Promise<void> {
    await this.opening?.catch(() => undefined);
    const pool = this.runner.detach();
    liveBackends().delete(this);
    await this.wakeups.stop();
    await this.done.stop();
    if (!pool) return;
    if (this.options.pool === undefined) await pool.end();
    else {
      pool.off("error", this.onPoolError);
      pool.off("connect", this.onPoolConnect);
    }
  }

  /** Notifications from other backends on this schema and namespace, coalesced per socket read; also once after the listener reconnects. */
  wakeSubscribe(listener: () => void): () => void {
    return this.wakeups.subscribe(listener);
  }

  /** Cancel notifications (X3): a running job of this namespace was cancelled, by any process. */
  cancelSubscribe(listener: () => void): () => void {
    return this.wakeups.subscribeCancel(listener);
  }

  /** Notifications on the done channel (an awaited job became terminal), and once after its listener reconnects; see {@link PostgresDoneListener}. */
  doneSubscribe(listener: (discarded?: readonly string[]) => void): Promise<() => void> {
    return this.done.subscribe(this.runner.conn(), listener);
  }
}
