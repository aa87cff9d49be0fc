// What bench/overload.js reads from and does to a scenario's database: the sample it takes every
// second, the jobs it counts at the end, and the sessions that hold back vacuum.
import pg from "pg";
import { NAMESPACE, wallNow } from "./lib.js";
import { postgresServerCpuMs } from "./statement-meter.js";

const JOBS = "later.later_jobs";
/** count(*) scans per REPEATABLE READ transaction of a reader. */
const SCANS = 3;

const SAMPLE = `SELECT
  (SELECT coalesce(json_object_agg(stage, n), '{}') FROM (SELECT stage, sum(n)::bigint AS n FROM later.later_stage_counts WHERE namespace = $1 GROUP BY stage) s) AS stages,
  t.n_dead_tup AS dead, t.n_live_tup AS live, t.autovacuum_count AS autovacuums, t.autoanalyze_count AS autoanalyzes, pg_total_relation_size(t.relid) AS bytes,
  EXISTS (SELECT 1 FROM pg_stat_progress_vacuum v WHERE v.relid = t.relid) AS vacuuming
FROM pg_stat_user_tables t WHERE t.relid = '${JOBS}'::regclass`;

/** The sample of this second (see bench/overload-series.js); `committed`: the producer's latest count. */
export async function sampleOf(client, committed) {
  const [r] = (await client.query(SAMPLE, [NAMESPACE])).rows;
  const stage = (name) => Number(r.stages[name] ?? 0);
  return {
    at: wallNow(),
    success: stage("success"),
    ready: stage("enqueued") + stage("requeued"),
    running: stage("running"),
    committed,
    dead: Number(r.dead),
    live: Number(r.live),
    bytes: Number(r.bytes),
    autovacuums: Number(r.autovacuums),
    autoanalyzes: Number(r.autoanalyzes),
    vacuuming: r.vacuuming,
    dbCpuMs: await postgresServerCpuMs(),
  };
}

/** A session idle in a transaction that has an xid: the xmin horizon stays where it began. */
export async function idleSession(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("BEGIN");
  await client.query("SELECT txid_current()");
  return {
    stop: async () => {
      await client.query("COMMIT");
      await client.end();
      return {};
    },
  };
}

/** `n` REPEATABLE READ sessions, each in a loop: BEGIN; count(*) of later_jobs × 3; COMMIT; `parallel` false: without parallel workers. */
export async function readerSessions(url, n, parallel = true) {
  let running = true;
  const counts = { transactions: 0, scans: 0, errors: 0 };
  const loop = async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    if (!parallel) await client.query("SET max_parallel_workers_per_gather = 0");
    while (running) {
      try {
        await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
        for (let k = 0; k < SCANS && running; k++, counts.scans++) await client.query(`SELECT count(*) FROM ${JOBS}`);
        await client.query("COMMIT");
        counts.transactions++;
      } catch {
        counts.errors++;
        await client.query("ROLLBACK").catch(() => {});
      }
    }
    await client.end();
  };
  const loops = Array.from({ length: n }, loop);
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return counts;
    },
  };
}

/** The jobs per stage, counted over later_jobs (exact, once the scenario is over), and how many ran more than once. */
export async function storedStages(client) {
  const { rows } = await client.query(
    `SELECT stage, count(*)::bigint AS n, count(*) FILTER (WHERE attempt > 1)::bigint AS retried FROM ${JOBS} WHERE namespace = $1 GROUP BY stage`,
    [NAMESPACE],
  );
  return { stages: Object.fromEntries(rows.map((r) => [r.stage, Number(r.n)])), retried: rows.reduce((t, r) => t + Number(r.retried), 0) };
}
