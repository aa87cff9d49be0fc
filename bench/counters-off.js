// The bench-only switch that turns later's stage counters off, so a run can
// show processing with counters on beside the same build with them off. Both
// backends keep the counters in their own statements, so the switch works per
// process: `turnCountersOff(target)` must run in every process that writes to
// the bench database, before it opens a backend (bench/systems/later.js calls
// it whenever it creates one).
//
// * PostgreSQL: every statement that changes a stage ends with the counter
//   CTEs of `PostgresStageCounters.countMoves`; with the counters off that
//   returns no CTE, so the statements are built without them. A probe from
//   a partition's start reads no more jobs than its counters say it has
//   (`PostgresStageCounters.unfinishedOf`); with them off, it is not bounded.
//   The rest of every statement stays as it is.
// * SQLite: one upsert per changed counter per transaction
//   (`SqliteStageCounters.write`) becomes a no-op.
//
// With them off the counters are stale, so stage counts of such a database
// are read with a GROUP BY over the jobs (`storedStageCounts`), as the runtime
// did before it had counters. Not for job types with a limit (X9): a limited
// claim takes the counters' running jobs as a bound of the type's.
import Database from "better-sqlite3";
import pg from "pg";

const SCHEMA = "later";

/**
 * Turns the counters off in this process (`{ pgUrl }` or `{ file }`: only the
 * kind matters). Resolves to a function that turns them back on.
 */
export async function turnCountersOff(target) {
  // The same module instances the runtime loads (its dist, resolved through the workspace link).
  const dist = (path) => new URL(`../packages/runtime/dist/backend/${path}`, import.meta.url).href;
  if (target.file) {
    const { SqliteStageCounters } = await import(dist("sqlite/sqlite-stage-counters.js"));
    const write = SqliteStageCounters.prototype.write;
    SqliteStageCounters.prototype.write = function skipped() {};
    return () => {
      SqliteStageCounters.prototype.write = write;
    };
  }
  const { PostgresStageCounters } = await import(dist("postgres/postgres-stage-counters.js"));
  const { countMoves, unfinishedOf } = PostgresStageCounters;
  PostgresStageCounters.countMoves = () => "";
  // Stale counters would say every partition is empty: its probes then go by the jobs alone.
  PostgresStageCounters.unfinishedOf = () => "2147483647";
  return () => {
    PostgresStageCounters.countMoves = countMoves;
    PostgresStageCounters.unfinishedOf = unfinishedOf;
  };
}

/** Jobs per stage of `namespace`, counted over the jobs (for databases whose counters were turned off). */
export async function storedStageCounts(target, namespace) {
  const sql = "SELECT stage, count(*) AS n FROM %s WHERE namespace = $1 GROUP BY stage";
  let rows;
  if (target.file) {
    const db = new Database(target.file, { readonly: true });
    try {
      rows = db.prepare(sql.replace("%s", "later_jobs").replace("$1", "?")).all(namespace);
    } finally {
      db.close();
    }
  } else {
    const client = new pg.Client({ connectionString: target.pgUrl });
    await client.connect();
    try {
      rows = (await client.query(sql.replace("%s", `${SCHEMA}.later_jobs`), [namespace])).rows;
    } finally {
      await client.end();
    }
  }
  return Object.fromEntries(rows.map((r) => [r.stage, Number(r.n)]));
}
