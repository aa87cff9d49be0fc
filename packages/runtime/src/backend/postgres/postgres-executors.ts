/**
 * How a statement of the PostgreSQL backend runs: on a pool client inside
 * the backend's own transaction, or on the caller's transaction for
 * `enqueueIn` (a Kysely transaction, or the `pg` client the caller ran
 * BEGIN on). Each resolves to the result rows.
 */
import { CompiledQuery } from "kysely";
import type pg from "pg";
import { InvalidArgumentError } from "../../errors.js";
import type { TransactionHandle } from "../backend.js";
import { statement, type Statement } from "./postgres-job-queries.js";
import type { Row } from "../shared/job-rows.js";
import type { RunStatement } from "../shared/shared-statement.js";

export type Execute = (statement: Statement, values: unknown[]) => Promise<Row[]>;

/** Statements on one client; named (prepared once per connection) when `prepared`. */
export function clientExecutor(client: pg.ClientBase, prepared: boolean): Execute {
  return async (s, values) => (await client.query(prepared ? { name: s.name, text: s.text, values } : { text: s.text, values })).rows as Row[];
}

/**
 * `enqueueIn`: anything with `executeQuery` (a Kysely transaction) or a `pg`
 * client; a pool is refused, since its statements would not share the
 * caller's transaction. Unnamed statements: the caller's connection is not ours to prepare on.
 */
export function callerExecutor(transaction: TransactionHandle): Execute {
  const t = transaction as { executeQuery?: unknown; query?: unknown; totalCount?: unknown } | null;
  if (typeof t === "object" && t !== null && typeof t.executeQuery === "function") {
    const trx = t as { executeQuery(q: CompiledQuery): Promise<{ rows: unknown[] }> };
    return async (s, values) => (await trx.executeQuery(CompiledQuery.raw(s.text, values))).rows as Row[];
  }
  if (typeof t === "object" && t !== null && typeof t.query === "function" && typeof t.totalCount !== "number") {
    return clientExecutor(t as pg.ClientBase, false);
  }
  throw new InvalidArgumentError(
    "enqueueIn: the PostgreSQL backend takes a Kysely transaction (db.transaction().execute(trx => ...)) or the pg client you ran BEGIN on (pool.connect()), not a pool",
  );
}

/**
 * Runs the shared statements (`backend/shared/*-statements.ts`) with
 * `execute`, each as a named prepared statement named after its text (kept
 * here, so a statement's name is hashed once per backend).
 */
export function sharedRunner(execute: Execute): RunStatement {
  const named = new Map<string, Statement>();
  return (s) => {
    let prepared = named.get(s.text);
    if (!prepared) named.set(s.text, (prepared = statement(s.text)));
    return execute(prepared, s.values);
  };
}
