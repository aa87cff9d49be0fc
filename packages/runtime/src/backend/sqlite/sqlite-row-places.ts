/**
 * Where a new job row lies in SQLite's `later_jobs`: its rowid, chosen by
 * the job's priority (X1), so that the jobs of one priority lie together.
 *
 * Why: SQLite keeps a table's rows in rowid order, and a commit writes every
 * page its statements touched to the WAL (and a checkpoint writes them again
 * to the file). A claim takes one priority's ready jobs and a finish writes
 * the same rows. With rowids in insertion order, jobs enqueued with mixed
 * priorities lie a few of one priority to a page among the others, so each
 * claim and each finish touched about one page per job: measured (20,000
 * jobs, priorities -100..100, `bench/job-control.js`), 65 pages per commit
 * against 21 without priorities and 0.53 of the rate without them. Placed
 * by priority, the same run writes the same 21 pages per commit as one
 * without priorities.
 *
 * The scheme: priority `p` (-32768..32767) owns the rowids from
 * `(p + 32768) << 47` for 2^47 rows (the last priority's range ends at
 * 2^63 - 1, SQLite's largest rowid); a new row takes the place after the
 * last row of its priority's range, found by one descent of the table's
 * b-tree in the insert's write transaction, so concurrent inserts of
 * several processes, serialised by the write lock, never pick the same
 * place. Within a priority the rows lie in insertion order, which is the
 * ready index's `run_at` order for jobs due when enqueued; a job's place
 * never moves (a retry or a replace keeps it). Nothing reads a job's rowid:
 * it is placement only, and every statement finds a job by `id` or by an
 * index. Rows written before this scheme keep their rowids (1, 2, ...: the
 * range of priority -32768) and nothing relies on them.
 */

import { type RawBuilder, sql } from "kysely";
import type { Row } from "../shared/job-rows.js";
import type { BoundStatement } from "../shared/shared-statement.js";

/**
 * SQL: a row's rowid from its priority and place, bound in that order. `|` and `<<` take integers (a
 * JavaScript number is bound as a double, and a double sum of 2^62 and a place would round).
 */
export const ROWID_AT_PLACE = "((? + 32768) << 47) | ?";

/**
 * The rowid of one new row of `priority` as a Kysely expression: the place after the last in its range,
 * read by the insert itself. For an insert into a caller's transaction (`enqueueIn`), whose first
 * statement of ours must be a write: a read first would start it as a reader, and its upgrade to a
 * writer fails at once (SQLITE_BUSY) when another connection committed since.
 */
export function nextRowid(priority: number): RawBuilder<number> {
  const start = sql`((${priority} + 32768) << 47)`;
  return sql<number>`coalesce((SELECT rowid + 1 FROM later_jobs WHERE rowid BETWEEN ${start} AND ${start} + 140737488355327 ORDER BY rowid DESC LIMIT 1), ${start})`;
}

/** Reads the last place taken in `priority`'s range; no row: the range is empty. */
function lastPlace(priority: number): BoundStatement {
  return {
    text: "SELECT rowid - ((? + 32768) << 47) AS k FROM later_jobs WHERE rowid BETWEEN ((? + 32768) << 47) AND ((? + 32768) << 47) + 140737488355327 ORDER BY rowid DESC LIMIT 1",
    values: [priority, priority, priority],
  };
}

/**
 * The places of one write transaction's new rows: the last place of each
 * priority is read once, at its first row, and counted on from there.
 * Build one per transaction: a place read in another would be stale.
 */
export class RowPlaces {
  private readonly last = new Map<number, number>();

  /** The place of the next new row of `priority` (one after the last in its range, 0 in an empty one), reading with `read` on its first row. */
  next(priority: number, read: (s: BoundStatement) => Row | undefined): number {
    return this.take(priority, this.last.has(priority) ? undefined : read(lastPlace(priority)));
  }

  private take(priority: number, read: Row | undefined): number {
    const k = this.last.get(priority) ?? (read?.k === undefined || read.k === null ? -1 : Number(read.k));
    this.last.set(priority, k + 1);
    return k + 1;
  }
}
