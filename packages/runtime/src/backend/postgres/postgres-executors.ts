/**
 * How a statement of the PostgreSQL backend runs: on a pool client inside
 * the backend's own transaction, or on the caller's transaction for
 * `enqueueIn` (a Kysely transaction, or the `pg` client the caller ran
 * BEGIN on). Each resolves to the result rows.
 */
import { CompiledQuery } from "kysely";
import type pg from "pg";
import { transactionRefusal } from "../transaction-refusal.js";
import type { PostgresTransaction } from "../backend.js";
import type { Statement } from "./postgres-job-queries.js";
import type { Row } from "../shared/job-rows.js";

export type Execute = (statement: Statement, values: unknown[]) => Promise<Row[]>;

/** Statements on one client; named (prepared once per connection) when `prepared`. */
export function clientExecutor(client: pg.ClientBase, prepared: boolean): Execute {
  return async (s, values) => (await client.query(prepared ? { name: s.name, text: s.text, values } : { text: s.text, values })).rows as Row[];
}

/**
 * `enqueueIn`: a Kysely transaction or a `pg` client; a pool or a Kysely
 * instance is refused, since its statements would not share the caller's
 * transaction. Checked at run time too (JavaScript callers, casts);
 * `method` names the call in the refusal (`enqueueIn`, `appendIn`).
 * Unnamed statements: the caller's connection is not ours to prepare on.
 */
export function callerExecutor(transaction: PostgresTransaction, method = "enqueueIn"): Execute {
  const t = transaction as { executeQuery?: unknown; query?: unknown; totalCount?: unknown } | null;
  if (typeof t === "object" && t !== null && typeof t.executeQuery === "function" && (t as { isTransaction?: unknown }).isTransaction !== false) {
    const trx = t as { executeQuery(q: CompiledQuery): Promise<{ rows: unknown[] }> };
    return async (s, values) => (await trx.executeQuery(CompiledQuery.raw(s.text, values))).rows as Row[];
  }
  if (typeof t === "object" && t !== null && typeof t.query === "function" && typeof t.totalCount !== "number") {
    return clientExecutor(t as pg.ClientBase, false);
  }
  throw transactionRefusal(
    method,
    "the PostgreSQL backend takes a Kysely transaction (db.transaction().execute(trx => ...)) or the pg client you ran BEGIN on (pool.connect())",
    transaction,
  );
}
