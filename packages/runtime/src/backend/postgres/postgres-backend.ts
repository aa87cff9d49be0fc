/**
 * The PostgreSQL backend: every process on every host that reaches one
 * database (and uses one schema and namespace) joins one worker pool.
 * PostgreSQL is the coordinator; later adds none of its own.
 *
 * How it runs:
 * - Hot statements (claim, finish, insert, renew, release) are fixed SQL in
 *   `postgres-job-queries.ts`, one round trip each, run by
 *   {@link PostgresJobStore} as named prepared statements; partitions and
 *   recurring schedules have stores of their own; the rest is Kysely
 *   (`PostgresDialect`) on the same pool.
 * - Claims lock a batch `FOR UPDATE SKIP LOCKED`, so servers never wait on
 *   each other's rows. Every write of a claim is fenced by `(id, attempt)`.
 * - Wake-ups: statements that make work ready send one `pg_notify` on the
 *   channel `later:<schema>` (payload: sender and namespace); a dedicated
 *   LISTEN connection ({@link PostgresWakeups}) wakes this process's workers.
 *   At open a probe checks that a NOTIFY comes back; when it does not
 *   (a transaction-mode pooler) the backend polls only and says so through
 *   `onWarning`. `listen: false` skips the listener altogether.
 * - Named prepared statements, until one is found lost between statements
 *   of a connection (a transaction-mode pooler): that statement, and every
 *   one after it, runs unnamed, with a warning through `onWarning`
 *   (`preparedStatements: false` starts that way).
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
import { Kysely, PostgresDialect } from "kysely";
import type pg from "pg";
import { DatabaseUnavailableError } from "../../errors.js";
import { loadDriver } from "../load-driver.js";
import { checkPostgresOptions, reportWarning, type PostgresBackendOptions } from "./postgres-backend-options.js";
import type * as B from "../backend.js";
import { liveBackends } from "../live-backends.js";
import type { LaterDatabase } from "../schema.js";
import { callerExecutor, clientExecutor, type Execute } from "./postgres-executors.js";
import { PostgresJobQueries, type Statement } from "./postgres-job-queries.js";
import { PostgresJobStore } from "./postgres-job-store.js";
import { applyMigrations, readMigrationStatus } from "./postgres-migrations.js";
import { describeConnection, guarded, isConnectionError, isPreparedStatementLost, retryConflicts, wrapDriverError } from "./postgres-errors.js";
import { PostgresKyselyQueries } from "./postgres-kysely-queries.js";
import { PostgresPartitionStore } from "./postgres-partition-store.js";
import { PostgresRecurringStore } from "./postgres-recurring-store.js";
import { PostgresStageCounters } from "./postgres-stage-counters.js";
import { PostgresWakeups } from "./postgres-wakeups.js";
import type { Row } from "../shared/job-rows.js";

export type { PostgresBackendOptions, PostgresBackendWarning, PostgresPool } from "./postgres-backend-options.js";

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

export class PostgresBackend implements B.Backend {
  readonly kind = "postgres";
  readonly namespace: string;
  /** The schema holding the tables. */
  readonly schema: string;
  readonly migrateHint: string;
  /** NOTIFY channel of this schema. */
  readonly channel: string;

  private pool: pg.Pool | null = null;
  private db: PostgresKyselyQueries | null = null;
  private opening: Promise<void> | null = null;
  private readonly wakeups: PostgresWakeups;
  private readonly jobs: PostgresJobStore;
  private readonly partitions: PostgresPartitionStore;
  private readonly recurring: PostgresRecurringStore;
  private readonly counters: PostgresStageCounters;
  private readonly quoted: string;
  /** Named prepared statements in use: `preparedStatements` (default true) until a pooler loses one. */
  private named: boolean;
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
    this.named = options.preparedStatements !== false;
    this.quoted = this.pg.escapeIdentifier(this.schema);
    this.jobs = new PostgresJobStore(this, new PostgresJobQueries(this.quoted));
    this.partitions = new PostgresPartitionStore(this, this.jobs, this.quoted);
    this.recurring = new PostgresRecurringStore(this, this.jobs, this.quoted);
    this.counters = new PostgresStageCounters(this.quoted, this.execute, this.namespace);
    // Channel names are identifiers (63 bytes at most): a long schema name is replaced by its hash.
    this.channel = this.schema.length <= 57 ? `later:${this.schema}` : `later:${createHash("sha1").update(this.schema).digest("hex").slice(0, 16)}`;
    this.wakeups = new PostgresWakeups(options, this.channel, this.namespace);
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
      claimBatch: { perWorker: 25, max: 500 },
    };
  }

  async open(): Promise<void> {
    if (this.opening) return this.opening;
    if (this.pool) return;
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
    this.pool = pool;
    liveBackends().set(this, `postgres schema ${this.schema} (namespace ${this.namespace})`);
    // Kysely on the same pool, for the statements off the hot path. Never destroyed: that would end the pool.
    this.db = new PostgresKyselyQueries(new Kysely<LaterDatabase>({ dialect: new PostgresDialect({ pool }) }).withSchema(this.schema), this.namespace);
    await wakeups;
  }

  async close(): Promise<void> {
    await this.opening?.catch(() => undefined);
    const pool = this.pool;
    this.pool = null;
    this.db = null;
    liveBackends().delete(this);
    await this.wakeups.stop();
    if (!pool) return;
    if (this.options.pool === undefined) await pool.end();
    else {
      pool.off("error", this.onPoolError);
      pool.off("connect", this.onPoolConnect);
    }
  }

  // ---- migrations -------------------------------------------------------

  async migrationStatus(): Promise<B.MigrationStatusResult> {
    return guarded("migration status", () => readMigrationStatus(this.conn(), this.quoted));
  }

  async migrationUp(): Promise<B.MigrationUpResult> {
    const applied = await guarded("migration", () => applyMigrations(this.conn(), this.schema, this.quoted));
    return { applied, current: (await this.migrationStatus()).current };
  }

  // ---- jobs -------------------------------------------------------------

  /**
   * One `INSERT … SELECT FROM json_to_recordset($1)` for the whole batch, in
   * autocommit when no job has a parent; with parents, a transaction that
   * first share-locks them, so a parent cannot finish between reading its
   * stage and inserting its continuation (run again, up to three times, when
   * PostgreSQL rolls it back for a deadlock with claims on the same
   * partitions or parents). With `transaction`, the same
   * statements run on the caller's Kysely transaction or `pg` client.
   */
  async jobInsertMany(params: B.JobInsertManyParams): Promise<B.JobInsertManyResult> {
    if (params.jobs.length === 0) return { stages: [] };
    if (params.transaction !== undefined) return this.jobs.insert(callerExecutor(params.transaction), params, true);
    if (!params.jobs.some((j) => j.parentId || j.topic !== undefined)) return this.jobs.insert(this.execute, params);
    // Run again after a deadlock: the transaction holds partition rows while its insert also updates the stage counters.
    return this.inTransaction("enqueue", (execute) => this.jobs.insert(execute, params));
  }

  async jobClaimReady(params: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    if (params.limit <= 0 || params.jobTypes.length === 0) return { jobs: [] };
    return this.jobs.claim(params);
  }

  async jobFinishMany(params: B.JobFinishManyParams): Promise<B.JobFinishManyResult> {
    if (params.finishes.length === 0) return { applied: [], released: 0 };
    return this.jobs.finishMany(params);
  }

  async jobReleaseMany(params: B.JobReleaseManyParams): Promise<void> {
    if (params.claims.length > 0) await this.jobs.releaseMany(params);
  }

  async leaseRenew(params: B.LeaseRenewParams): Promise<B.LeaseRenewResult> {
    if (params.claims.length === 0) return { renewed: [] };
    return this.jobs.renew(params);
  }

  async jobListStuck(params: B.JobListStuckParams): Promise<B.StuckJob[]> {
    return guarded("stuck-job list", () => this.kysely().jobListStuck(params));
  }

  async jobCountReady(params: B.JobCountReadyParams): Promise<number> {
    if (params.jobTypes.length === 0) return 0;
    return guarded("ready count", () => this.kysely().jobCountReady(params));
  }

  async jobDeleteExpired(params: B.JobDeleteExpiredParams): Promise<number> {
    return guarded("expiry sweep", () => this.jobs.deleteExpired(params));
  }

  async jobGet(params: B.JobGetParams): Promise<B.JobRecord | null> {
    return guarded("job read", () => this.kysely().jobGet(params));
  }

  async jobList(params: B.JobListParams): Promise<B.JobRecord[]> {
    return guarded("job list", () => this.kysely().jobList(params));
  }

  /** Sums the shards of the namespace's stage counters (see `postgres-stage-counters.ts`). */
  async jobCountByStage(): Promise<B.JobCountByStageResult> {
    return guarded("stage counts", () => this.counters.stageCounts());
  }

  async namespaceCounts(): Promise<B.NamespaceCount[]> {
    return guarded("namespace counts", () => this.counters.namespaceCounts());
  }

  async maintenanceClaim(params: B.MaintenanceClaimParams): Promise<boolean> {
    return guarded("maintenance claim", () => this.kysely().maintenanceClaim(params));
  }

  /** Not supported (`capabilities.supportsVacuum` is false): autovacuum reclaims space on PostgreSQL. */
  async databaseVacuum(): Promise<void> {}

  /** Notifications from other backends on this schema and namespace, coalesced per socket read; also once after the listener reconnects. */
  wakeSubscribe(listener: () => void): () => void {
    return this.wakeups.subscribe(listener);
  }

  // ---- topics and partitions (SQL in postgres-partition-store.ts) --------

  async topicRegister(params: B.TopicRegisterParams): Promise<void> {
    return this.partitions.topicRegister(params);
  }

  async partitionHeadClaim(params: B.PartitionHeadClaimParams): Promise<B.PartitionHeadClaimResult> {
    return this.partitions.headClaim(params);
  }

  async partitionHeadFinish(params: B.PartitionHeadFinishParams): Promise<B.PartitionHeadFinishResult> {
    return this.partitions.headFinish(params);
  }

  async partitionLeaseRenew(params: B.PartitionLeaseRenewParams): Promise<B.PartitionLeaseRenewResult> {
    return retryConflicts(() => this.partitions.leaseRenew(params));
  }

  async partitionMemberHeartbeat(params: B.PartitionMemberHeartbeatParams): Promise<B.PartitionMemberHeartbeatResult> {
    return retryConflicts(() => this.partitions.memberHeartbeat(params));
  }

  async partitionMemberRemove(params: B.PartitionMemberRemoveParams): Promise<void> {
    return this.partitions.memberRemove(params);
  }

  async partitionHeadForceFail(params: B.PartitionHeadForceFailParams): Promise<string | null> {
    return this.partitions.headForceFail(params);
  }

  async partitionHistoryTruncate(params: B.PartitionHistoryTruncateParams): Promise<number> {
    return this.partitions.historyTruncate(params);
  }

  async partitionDepth(): Promise<B.PartitionDepthResult> {
    return guarded("partition depth", () => this.counters.partitionDepth());
  }

  async topicDepth(): Promise<B.TopicDepthResult> {
    return guarded("topic depth", () => this.counters.topicDepth());
  }

  // ---- recurring schedules (SQL in postgres-recurring-store.ts) ----------

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

  /** @internal The channel and payload of this backend's own `pg_notify` calls. */
  get notifyArgs(): readonly [string, string] {
    return this.wakeups.notifyArgs;
  }

  /** @internal BEGIN … COMMIT with the backend's statements on one connection, run again after a deadlock or serialization conflict. */
  inTransaction<R>(what: string, body: (execute: Execute) => Promise<R>): Promise<R> {
    return retryConflicts(async () => {
      const named = this.named;
      try {
        return await this.transaction(what, (client) => body(clientExecutor(client, named)));
      } catch (error) {
        // Rolled back before anything of it applied: run it again, unnamed.
        if (!named || !isPreparedStatementLost(error)) throw error;
        this.namedStatementsLost(error);
        return this.transaction(what, (client) => body(clientExecutor(client, false)));
      }
    });
  }

  /** Runs every statement unnamed from now on, and says so once. */
  private namedStatementsLost(error: unknown): void {
    if (!this.named) return;
    this.named = false;
    reportWarning(this.options, {
      code: "PREPARED_STATEMENTS_UNAVAILABLE",
      message: `later: a named prepared statement was lost between statements of one connection (${(error as Error).message}: a transaction-mode pooler such as PgBouncer?); statements run unnamed from now on. Pass preparedStatements: false and listen: false to start that way and silence this.`,
    });
  }

  /**
   * @internal One statement on a pool connection (autocommit). When the pool
   * handed out a connection the server had already killed (its error event
   * not yet seen: the driver refuses, or reads the kill's FATAL as the
   * statement's reply), the statement is run once more, up to twice, on
   * another connection. That is safe for every autocommit statement here: a
   * statement cut off mid-run was rolled back, and the only case that could
   * apply twice (killed between its commit and its reply) is at-least-once
   * by design: a claim is recovered by its lease, a finish is fenced by its
   * claim, an enqueue may then store a duplicate, as the caller's own retry
   * would. Any other failure is reported.
   */
  readonly execute: Execute = async (s, values) => (await this.autocommit(s, values, false)).rows as Row[];

  /** @internal {@link execute} with rows as arrays of column values (no object per row): for the claim, the hottest read. */
  readonly executeArrays = async (s: Statement, values: unknown[]): Promise<unknown[][]> => (await this.autocommit(s, values, true)).rows as unknown[][];

  private async autocommit(s: Statement, values: unknown[], arrays: boolean): Promise<pg.QueryResult> {
    for (let attempt = 1; ; attempt++) {
      const named = this.named;
      const query: pg.QueryConfig & { rowMode?: "array" } = named ? { name: s.name, text: s.text, values } : { text: s.text, values };
      if (arrays) query.rowMode = "array";
      try {
        return await this.conn().query(query);
      } catch (error) {
        if (named && isPreparedStatementLost(error)) {
          this.namedStatementsLost(error);
          continue;
        }
        if (attempt < 3 && (isConnectionError(error) || /is not queryable/.test((error as Error)?.message ?? ""))) continue;
        throw wrapDriverError(error, "query");
      }
    }
  }

  /**
   * BEGIN … COMMIT on one pool client. The client gets an `error` listener
   * while checked out (pg-pool removes its own), so a connection killed
   * between statements fails this transaction instead of the process.
   */
  private async transaction<R>(what: string, body: (client: pg.PoolClient) => Promise<R>): Promise<R> {
    let client: pg.PoolClient;
    try {
      client = await this.conn().connect();
    } catch (error) {
      throw wrapDriverError(error, what);
    }
    let broken: Error | undefined;
    const onError = (error: Error) => (broken = error);
    client.on("error", onError);
    try {
      await client.query("BEGIN");
      const result = await body(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      if (!isConnectionError(error)) await client.query("ROLLBACK").catch((e: Error) => (broken = e));
      else broken ??= error as Error;
      throw wrapDriverError(error, what);
    } finally {
      client.off("error", onError);
      client.release(broken);
    }
  }

  private conn(): pg.Pool {
    if (!this.pool) throw new DatabaseUnavailableError("the PostgreSQL backend is not open (the server was shut down, or never started)");
    return this.pool;
  }

  private kysely(): PostgresKyselyQueries {
    this.conn();
    return this.db!;
  }
}
