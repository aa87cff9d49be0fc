/**
 * How the PostgreSQL backend's stores run their statements on its pool: one
 * autocommit statement (named and prepared once per connection, unless
 * `preparedStatements: false`), or a transaction of several on one
 * connection. The backend attaches the pool at `open()` and detaches it at
 * `close()`; every store holds this runner, not the pool.
 *
 * ```text
 *   new ──attach(pool)──► open ──detach()──► closed (every statement throws DatabaseUnavailableError)
 * ```
 *
 * Named prepared statements are used until one is found lost between
 * statements of a connection (a transaction-mode pooler such as PgBouncer
 * before 1.21 hands each transaction another server connection: SQLSTATE
 * 26000, or 42P05 when another client prepared the name there first). That
 * statement, and every one after it, then runs unnamed, with one
 * `PREPARED_STATEMENTS_UNAVAILABLE` warning through `onWarning`; never a
 * raw driver error. `preparedStatements: false` starts that way.
 */
import type pg from "pg";
import { DatabaseUnavailableError } from "../../errors.js";
import type { Row } from "../shared/job-rows.js";
import { postgresCompiler, type RunStatement, type StatementCompiler } from "../shared/shared-statement.js";
import { reportWarning, type PostgresBackendOptions } from "./postgres-backend-options.js";
import { CONFLICT_TRIES, isConnectionError, isPreparedStatementLost, isRetryableConflict, retryConflicts, wrapDriverError } from "./postgres-errors.js";
import { clientExecutor } from "./postgres-executors.js";
import { type Execute, type Statement, StatementsMadeOnUse } from "./postgres-statement.js";
import type { PostgresWakeups } from "./postgres-wakeups.js";

/** `idleInTransactionTimeoutMs` when not given: far above the milliseconds between a transaction's statements. */
const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 5_000;

export class PostgresRunner {
  /** Compiles the statements written once (`backend/shared/`) for this schema, each once. */
  readonly compiler: StatementCompiler;
  private pool: pg.Pool | null = null;
  private readonly named = new StatementsMadeOnUse<string>();
  /** What opens each transaction: BEGIN with its idle bound (`idleInTransactionTimeoutMs`). */
  private readonly begin: string;
  /** Named prepared statements in use: `preparedStatements` (default true) until a pooler loses one. */
  private prepared: boolean;

  constructor(
    /** The namespace every statement is scoped to. */
    readonly namespace: string,
    /** The schema's name, as given, and quoted for SQL text. */
    readonly schema: string,
    readonly quoted: string,
    private readonly wakeups: PostgresWakeups,
    private readonly options: Pick<PostgresBackendOptions, "preparedStatements" | "onWarning" | "idleInTransactionTimeoutMs">,
  ) {
    this.compiler = postgresCompiler(schema);
    this.prepared = options.preparedStatements !== false;
    const idleMs = options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS;
    // Two statements in one simple-protocol query: one round trip, as a bare BEGIN.
    this.begin = idleMs === 0 ? "BEGIN" : `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${idleMs}`;
  }

  /** Starts running statements on `pool`. */
  attach(pool: pg.Pool): void {
    this.pool = pool;
  }

  /** Stops running statements; returns the pool it ran them on, if any. */
  detach(): pg.Pool | null {
    const pool = this.pool;
    this.pool = null;
    return pool;
  }

  get isOpen(): boolean {
    return this.pool !== null;
  }

  /** The pool; throws `DatabaseUnavailableError` when the backend is not open. */
  conn(): pg.Pool {
    if (!this.pool) throw new DatabaseUnavailableError("the PostgreSQL backend is not open (the server was shut down, or never started)");
    return this.pool;
  }

  /** The channel and payload of this backend's own `pg_notify` calls. */
  get notifyArgs(): readonly [string, string] {
    return this.wakeups.notifyArgs;
  }

  /** The done channel `waitFor` listens on (see `PostgresWakeups.doneChannel`). */
  get doneChannel(): string {
    return this.wakeups.doneChannel;
  }

  /**
   * One statement on a pool connection (autocommit). When the pool handed
   * out a connection the server had already killed (its error event not yet
   * seen: the driver refuses, or reads the kill's FATAL as the statement's
   * reply), the statement is run again, up to twice, on another
   * connection. That is safe for every autocommit statement here: a
   * statement cut off mid-run was rolled back, and the only case that could
   * apply twice (killed between its commit and its reply) is harmless for
   * each of them: a claim is recovered by its lease, a finish is fenced by
   * its claim (and a batch of finishes that then writes nothing finds the
   * rows it had written, `PostgresJobStore.writtenBefore`), and an enqueue
   * finds its ids (made before the first try) already stored and skips them
   * (`ON CONFLICT (id) DO NOTHING`, see `PostgresJobStore.insertMany`), so a
   * job is never stored or counted twice. A statement PostgreSQL rolled back
   * for a deadlock or a serialization conflict is run again too (nothing of
   * it applied; up to `CONFLICT_TRIES` tries in all, counted apart from the
   * connection's): a single statement can be one side of a deadlock, since a
   * transaction of another session that shares its counter shard may hold a
   * counter row it needs while waiting for one it holds (see
   * `PostgresStageCounters`). Any other failure is reported, a lost
   * connection as `DatabaseUnavailableError`.
   */
  readonly execute: Execute = async (s, values) => (await this.autocommit(s, values, false)).result.rows as Row[];

  /**
   * {@link execute}, saying also whether the statement was run again after its connection was lost
   * (`rerun`): its first try may then have committed, and what it wrote is not in `rows`.
   */
  async executeTellingRerun(s: Statement, values: unknown[]): Promise<{ rows: Row[]; rerun: boolean }> {
    const { result, rerun } = await this.autocommit(s, values, false);
    return { rows: result.rows as Row[], rerun };
  }

  /** {@link execute} with rows as arrays of column values (no object per row): for the claim, the hottest read. */
  readonly executeArrays = async (s: Statement, values: unknown[]): Promise<unknown[][]> => (await this.autocommit(s, values, true)).result.rows as unknown[][];

  /** Runs a statement written once (`backend/shared/`) with {@link execute}, named after its text (the name hashed once). */
  readonly shared: RunStatement = (s) => {
    return this.execute(
      this.named.of(s.text, (text) => text),
      s.values,
    );
  };

  /** A statement without parameters run once as written (unnamed, never prepared: `ANALYZE` and the like). */
  async utility(text: string): Promise<void> {
    try {
      await this.conn().query(text);
    } catch (error) {
      throw wrapDriverError(error, "query");
    }
  }

  /** BEGIN … COMMIT with the backend's statements on one connection, run again after a deadlock or serialization conflict. */
  inTransaction<R>(what: string, body: (execute: Execute) => Promise<R>): Promise<R> {
    return retryConflicts(async () => {
      const named = this.prepared;
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
    if (!this.prepared) return;
    this.prepared = false;
    reportWarning(this.options, {
      code: "PREPARED_STATEMENTS_UNAVAILABLE",
      message: `later: a named prepared statement was lost between statements of one connection (${(error as Error).message}: a transaction-mode pooler such as PgBouncer?); statements run unnamed from now on. Pass preparedStatements: false and listen: false to start that way and silence this.`,
    });
  }

  /** `rerun`: a try before the one that answered lost its connection (and may have committed). */
  private async autocommit(s: Statement, values: unknown[], arrays: boolean): Promise<{ result: pg.QueryResult; rerun: boolean }> {
    let rerun = false;
    // Counted apart: conflicts (up to CONFLICT_TRIES tries in all) do not use up the tries after a lost connection (three in all).
    let conflicts = 0;
    let lost = 0;
    for (;;) {
      const named = this.prepared;
      const query: pg.QueryConfig & { rowMode?: "array" } = named ? { name: s.name, text: s.text, values } : { text: s.text, values };
      if (arrays) query.rowMode = "array";
      try {
        return { result: await this.conn().query(query), rerun };
      } catch (error) {
        if (named && isPreparedStatementLost(error)) {
          this.namedStatementsLost(error);
          continue;
        }
        if (isRetryableConflict(error) && ++conflicts < CONFLICT_TRIES) continue;
        if ((isConnectionError(error) || /is not queryable/.test((error as Error)?.message ?? "")) && ++lost < 3) {
          rerun = true;
          continue;
        }
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
      await client.query(this.begin);
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
}
