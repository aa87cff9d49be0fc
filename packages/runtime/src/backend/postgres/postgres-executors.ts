/**
 * How a statement of the PostgreSQL backend runs: on a pool client inside
 * the backend's own transaction, or on the caller's transaction for
 * `enqueueIn` (a Kysely transaction, or the `pg` client the caller ran
 * BEGIN on). Each resolves to the result rows.
 */
import { CompiledQuery } from "kysely";
import type pg from "pg";
import { InvalidArgumentError } from "../../errors.js";
import { transactionRefusal } from "../transaction-refusal.js";
import type { PostgresTransaction } from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import type { Execute } from "./postgres-statement.js";

/** Statements on one client; named (prepared once per connection) when `prepared`. */
export function clientExecutor(client: pg.ClientBase, prepared: boolean): Execute {
  return async (s, values) => (await client.query(prepared ? { name: s.name, text: s.text, values } : { text: s.text, values })).rows as Row[];
}

/** What a `pg` client says of its connection's transaction, where the driver tells it. */
interface TransactionStatusSource {
  /** pg 8.14 and later: the status of the last ReadyForQuery, `"I"` idle, `"T"` in a transaction, `"E"` in a failed one. */
  getTransactionStatus?: () => string | null;
  /** The same, the field behind it (earlier pg 8 releases). */
  _txStatus?: string | null;
}

/**
 * `enqueueIn`: a Kysely transaction or a `pg` client; a pool or a Kysely
 * instance is refused, since its statements would not share the caller's
 * transaction. Checked at run time too (JavaScript callers, casts);
 * `method` names the call in the refusal (`enqueueIn`, `appendIn`).
 * Unnamed statements: the caller's connection is not ours to prepare on.
 *
 * A `pg` client must be inside a transaction (`BEGIN` run on it): on an idle
 * one each statement would commit by itself, so the job would be stored
 * whether or not the application's work commits. That is refused with
 * `InvalidArgumentError` before any statement is sent. How it is known:
 * the transaction status PostgreSQL sends with every ReadyForQuery message
 * (the protocol's own answer, exact whatever the clocks or the SQL run
 * before), which pg keeps as `getTransactionStatus()` (`_txStatus` before
 * 8.14). A client that keeps neither (another driver with pg's `query`) is
 * asked once, before the first statement, with `SAVEPOINT`, which
 * PostgreSQL refuses outside a transaction block (SQLSTATE 25P01), then
 * released; a timestamp comparison (`now() = statement_timestamp()`) would
 * be wrong for a transaction begun in the same millisecond.
 */
export function callerExecutor(transaction: PostgresTransaction, method = "enqueueIn"): Execute {
  const t = transaction as { executeQuery?: unknown; query?: unknown; totalCount?: unknown } | null;
  if (typeof t === "object" && t !== null && typeof t.executeQuery === "function" && (t as { isTransaction?: unknown }).isTransaction !== false) {
    const trx = t as { executeQuery(q: CompiledQuery): Promise<{ rows: unknown[] }> };
    return async (s, values) => (await trx.executeQuery(CompiledQuery.raw(s.text, values))).rows as Row[];
  }
  if (typeof t === "object" && t !== null && typeof t.query === "function" && typeof t.totalCount !== "number") {
    const client = t as pg.ClientBase;
    const status = transactionStatus(t as TransactionStatusSource);
    if (status === "I") throw notInTransaction(method);
    const execute = clientExecutor(client, false);
    if (status !== undefined) return execute;
    let checked: Promise<void> | null = null;
    return async (s, values) => {
      checked ??= checkBySavepoint(client, method);
      await checked;
      return execute(s, values);
    };
  }
  throw transactionRefusal(
    method,
    "the PostgreSQL backend takes a Kysely transaction (db.transaction().execute(trx => ...)) or the pg client you ran BEGIN on (pool.connect())",
    transaction,
  );
}

/** The client's transaction status (`"I"`, `"T"`, `"E"`), or undefined when the client does not keep it. */
function transactionStatus(client: TransactionStatusSource): string | undefined {
  if (typeof client.getTransactionStatus === "function") return client.getTransactionStatus() ?? undefined;
  return typeof client._txStatus === "string" ? client._txStatus : undefined;
}

async function checkBySavepoint(client: pg.ClientBase, method: string): Promise<void> {
  try {
    await client.query("SAVEPOINT later_in_transaction");
  } catch (error) {
    if ((error as { code?: unknown }).code === "25P01") throw notInTransaction(method);
    throw error;
  }
  await client.query("RELEASE SAVEPOINT later_in_transaction");
}

function notInTransaction(method: string): InvalidArgumentError {
  return new InvalidArgumentError(
    `${method} needs a transaction: got a pg client that is not inside one (each statement would commit by itself, whether or not your work commits): run BEGIN on it first (await client.query("BEGIN")), or pass a Kysely transaction (db.transaction().execute(trx => ...))`,
  );
}
