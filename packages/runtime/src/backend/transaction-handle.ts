/**
 * What `enqueueIn` accepts: a transaction the application owns, which the
 * jobs are written into, so they exist only if it commits. Each backend
 * takes its own kind ({@link Backend} carries it as `Trx`, and the
 * publisher, the server and the generated module infer it from the backend
 * they are given), so a wrong handle is a compile error where the backend's
 * type is known, and an `InvalidArgumentError` at run time otherwise.
 *
 * Structural types naming no driver: the drivers are optional peer
 * dependencies, so no published declaration may name their types. Kysely
 * is a required peer, so its `Transaction` may be named.
 */
import type { Transaction } from "kysely";

/**
 * The SQLite backend's: a Kysely transaction (`db.transaction().execute(trx
 * => ...)`, or a controlled transaction) on the same database file.
 */
// biome-ignore lint/suspicious/noExplicitAny: a transaction of any application schema is accepted; the jobs go to later's own tables.
export type SqliteTransaction = Transaction<any>;

/**
 * A `pg` client the caller ran `BEGIN` on (`await pool.connect()`; any pg 8
 * `PoolClient` or `Client` fits). Never a pool: its statements would each
 * run on a connection of their own, outside the caller's transaction, so a
 * pool (which has `totalCount`) does not fit.
 */
export interface PostgresClient {
  query(text: string, values?: unknown[]): Promise<unknown>;
  readonly totalCount?: never;
}

/** The PostgreSQL backend's: a Kysely transaction, or a {@link PostgresClient} inside `BEGIN`. */
// biome-ignore lint/suspicious/noExplicitAny: as for SqliteTransaction.
export type PostgresTransaction = Transaction<any> | PostgresClient;

/**
 * A transaction some backend accepts: what `enqueueIn` takes where the
 * backend's own kind is not known (a generated type written without its
 * `Trx` argument, `JobsContext<App>`). Checked against the backend at run
 * time.
 */
export type TransactionHandle = SqliteTransaction | PostgresTransaction;
