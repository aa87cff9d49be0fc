// The bench-only switch that turns later's stage counters off in one bench
// database, so a run can show processing with counters on beside the same
// build with them off. The counters are kept by triggers on later_jobs
// (migration 4); dropping them leaves every statement of the runtime as it
// is and only removes the counting. With them gone the counters are stale,
// so stage counts of such a database are read with a GROUP BY over the jobs
// (`storedStageCounts`), as the runtime did before it had counters.
import Database from "better-sqlite3";
import pg from "pg";

const SCHEMA = "later";

/** Drops every trigger on later_jobs: `{ pgUrl }` (schema `later`) or `{ file }` (SQLite). Returns the names dropped. */
export async function dropCounterTriggers(target) {
  if (target.file) {
    const db = new Database(target.file);
    try {
      const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'later_jobs'").all().map((r) => r.name);
      for (const name of names) db.exec(`DROP TRIGGER IF EXISTS "${name}"`);
      return names;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: target.pgUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass($1) AND NOT tgisinternal", [`${SCHEMA}.later_jobs`]);
    for (const { tgname } of rows) await client.query(`DROP TRIGGER IF EXISTS ${pg.escapeIdentifier(tgname)} ON ${SCHEMA}.later_jobs`);
    return rows.map((r) => r.tgname);
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
