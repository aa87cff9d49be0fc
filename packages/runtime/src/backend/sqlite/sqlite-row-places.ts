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
 * The scheme: each priority `p` (-32768..32767) owns a range of 2^47
 * rowids, range number `(p + 65536) & 65535` (0 for priority 0, 1..32767
 * for the positive ones, then -32768..-1 as 32768..65535; the last range
 * ends at 2^63 - 1, SQLite's largest rowid). Which range lies where does
 * not matter, only that each is apart; priority 0, the default, has the
 * first, so its rowids are as small as they always were (a rowid is stored
 * in every index entry, as a varint: 2^62 takes 9 bytes, and made the
 * inserts of default jobs 5% slower). A new row takes the place after the
 * last row of its range, read in the insert's write transaction, so the
 * inserts of several processes, serialised by the write lock, never pick
 * the same place. Within a priority the rows lie in insertion order, which
 * is the ready index's `run_at` order for jobs due when enqueued; a job's
 * place never moves (a retry or a replace keeps it). Nothing outside a
 * statement reads a job's rowid: it is placement only, and every statement
 * finds a job by `id` or by an index (the group walk steps from one row to
 * the next by rowid inside its statement, sqlite-group-claim.ts). A rowid
 * can pass 2^53, past what a JavaScript number holds exactly. Rows written before this scheme (rowids 1, 2, ...) lie in
 * priority 0's range, whatever their priority, and nothing relies on that.
 *
 * When a row's range is the table's top one (it holds the last row), the
 * row is given no rowid: SQLite numbers it one past the table's last row,
 * which is that very place, and appends it without the probe an explicit
 * rowid costs. With priorities unused that is every row.
 */

import { type RawBuilder, sql } from "kysely";
import type { Row } from "../shared/job-rows.js";
import type { BoundStatement } from "../shared/shared-statement.js";

/** SQL: the first rowid of the range of priority `p` (an SQL expression). */
const rangeStart = (p: string) => `(((${p} + 65536) & 65535) << 47)`;

/**
 * SQL: the rowid of one new row whose priority is `p` (an SQL expression, `?` for a bound one, read four
 * times), found by the insert itself: null when `p`'s range is the top one, else the place after the last
 * in `p`'s range (its first place when empty). For an insert of one row: the reads are subqueries of the
 * insert, not statements of their own. {@link nextRowid} is the same for a Kysely statement.
 */
export function nextRowidText(p: string): string {
  return `CASE WHEN (SELECT max(rowid) >> 47 FROM later_jobs) = ((${p} + 65536) & 65535) THEN NULL ELSE coalesce((SELECT rowid + 1 FROM later_jobs
    WHERE rowid BETWEEN ${rangeStart(p)} AND ${rangeStart(p)} + 140737488355327 ORDER BY rowid DESC LIMIT 1), ${rangeStart(p)}) END`;
}

/** Where {@link nextRowid} binds the priority in {@link nextRowidText}'s text. */
const PRIORITY_SLOT = "\u0000";

/**
 * {@link nextRowidText} as a Kysely expression, for an insert into a caller's transaction (`enqueueIn`):
 * its first statement of ours must be a write, since a read first would start the transaction as a reader,
 * and its upgrade to a writer fails at once (SQLITE_BUSY) when another connection committed since.
 */
export function nextRowid(p: number): RawBuilder<number> {
  // The same text, with `p` bound wherever it reads the priority.
  return sql.join(
    nextRowidText(PRIORITY_SLOT)
      .split(PRIORITY_SLOT)
      .map((part) => sql.raw(part)),
    sql`${p}`,
  );
}

/** The table's last row: its range number and its place there; no row (null): the table is empty. */
const LAST_ROW: BoundStatement = { text: "SELECT max(rowid) >> 47 AS r, max(rowid) & 140737488355327 AS k FROM later_jobs", values: [] };

/** The last place taken in `priority`'s range; no row: the range is empty. */
function lastPlace(priority: number): BoundStatement {
  return {
    text: `SELECT rowid - ${rangeStart("?")} AS k FROM later_jobs WHERE rowid BETWEEN ${rangeStart("?")} AND ${rangeStart("?")} + 140737488355327 ORDER BY rowid DESC LIMIT 1`,
    values: [priority, priority, priority],
  };
}

/** The range number of `priority`. */
const rangeOf = (priority: number) => (priority + 65536) & 65535;

/**
 * The rowids of one write transaction's new rows, given in the order the rows are inserted. The table's
 * last row is read once (its range is the top one), and the last place of any other range at its first
 * row; from there places are counted. For a transaction's several rows (the reads are statements of their
 * own; an insert of one row reads in its own statement, {@link nextRowidText}). Build one per transaction:
 * a place read in another would be stale.
 */
export class RowPlaces {
  /** Last place taken, per range number. */
  private readonly last = new Map<number, number>();
  /** The range holding the table's last row (null: the table is empty); undefined: not read yet. */
  private top: number | null | undefined;

  constructor(private readonly read: (s: BoundStatement) => Row | undefined) {}

  /** The places of a transaction that inserts `rows` rows; null for one row, which finds its place in its insert ({@link nextRowidText}). */
  static forRows(rows: number, read: (s: BoundStatement) => Row | undefined): RowPlaces | null {
    return rows === 1 ? null : new RowPlaces(read);
  }

  /** The rowid of the next new row of `priority`, to bind; null: let SQLite number it (the same place). */
  next(priority: number): bigint | null {
    if (this.top === undefined) {
      const row = this.read(LAST_ROW);
      this.top = row?.r === undefined || row.r === null ? null : Number(row.r);
      if (this.top !== null) this.last.set(this.top, Number(row!.k));
    }
    const range = rangeOf(priority);
    let k = this.last.get(range);
    if (k === undefined) {
      const row = this.read(lastPlace(priority));
      k = row?.k === undefined || row.k === null ? -1 : Number(row.k);
    }
    this.last.set(range, ++k);
    if (range === this.top) return null;
    if (this.top === null || range > this.top) this.top = range;
    return (BigInt(range) << 47n) | BigInt(k);
  }
}
