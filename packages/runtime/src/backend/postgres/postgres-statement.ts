/**
 * A statement of the PostgreSQL backend as fixed SQL text with a name
 * derived from it, and how one is run (`Execute`): what the hot statements
 * (`postgres-job-queries.ts`), the stage counters and the executors share.
 */
import { createHash } from "node:crypto";
import type { Row } from "../shared/job-rows.js";

/** A statement with a name derived from its text (names are per connection; the text differs per schema). */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

export function statement(text: string): Statement {
  return { name: `later_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`, text };
}

/**
 * Statements made on first use, one per key: for text that depends on a value
 * written into it (a batch size, a run's room: bound, PostgreSQL would not keep a
 * generic plan) or that arrives at run time; the name is hashed once per key.
 */
export class StatementsMadeOnUse<K> {
  private readonly made = new Map<K, Statement>();

  /** The statement of `key`, its text from `text(key)` the first time. */
  of(key: K, text: (key: K) => string): Statement {
    let s = this.made.get(key);
    if (s === undefined) this.made.set(key, (s = statement(text(key))));
    return s;
  }
}

/** Runs a statement with its values; resolves to the result rows (see `postgres-executors.ts`). */
export type Execute = (statement: Statement, values: unknown[]) => Promise<Row[]>;

/** {@link Execute} with rows as arrays of column values, in the statement's column order (no object per row). */
export type ExecuteArrays = (statement: Statement, values: unknown[]) => Promise<unknown[][]>;
