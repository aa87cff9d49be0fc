// The bench-only switch that turns later's stage counters off, so a run can
// show processing with counters on beside the same build with them off.
//
// * PostgreSQL keeps the counters with triggers on later_jobs (migration 4):
//   `turnCountersOff({ pgUrl })` drops them in that bench database, which
//   holds for every process using it; every statement of the runtime stays
//   as it is.
// * SQLite keeps them in its own statements (one upsert per changed counter
//   per transaction, `SqliteStageCounters.write`): `turnCountersOff({ file })`
//   makes that write a no-op in this process, so it must run in every process
//   that writes to the file (each bench phase process calls it before it
//   opens the backend). The rest of every statement stays as it is.
//
// With them off the counters are stale, so stage counts of such a database
// are read with a GROUP BY over the jobs (`storedStageCounts`), as the runtime
// did before it had counters.
import Database from "better-sqlite3";
import pg from "pg";

const SCHEMA = "later";

/**
 * Turns the counters off: `{ pgUrl }` (schema `later`) drops the triggers on
 * later_jobs; `{ file }` (SQLite) disables the writes in this process.
 * Resolves to a function that turns SQLite's writes back on in this process
 * (for PostgreSQL it does nothing: the database is dropped after the run).
 */
export async function turnCountersOff(target) {
  if (target.file) {
    // The same module instance the runtime loads (its dist, resolved through the workspace link).
    const url = new URL("../packages/runtime/dist/backend/sqlite/sqlite-stage-counters.js", import.meta.url);
    const { SqliteStageCounters } = await import(url.href);
    const write = SqliteStageCounters.prototype.write;
    SqliteStageCounters.prototype.write = function skipped() {};
    return () => {
      SqliteStageCounters.prototype.write = write;
    };
  }
  const client = new pg.Client({ connectionString: target.pgUrl });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass($1) AND NOT tgisinternal", [`${SCHEMA}.later_jobs`]);
    for (const { tgname } of rows) await client.query(`DROP TRIGGER IF EXISTS ${pg.escapeIdentifier(tgname)} ON ${SCHEMA}.later_jobs`);
    return () => {};
  } finally {
    await client.end();
  }
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
