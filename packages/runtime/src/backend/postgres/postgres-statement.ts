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

/** Runs a statement with its values; resolves to the result rows (see `postgres-executors.ts`). */
export type Execute = (statement: Statement, values: unknown[]) => Promise<Row[]>;
