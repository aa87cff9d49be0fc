/**
 * PostgreSQL keeps a prepared statement's generic plan until the statistics
 * of the tables it reads change; a plan made while `later_jobs` was empty
 * reads it whole (docs/storage.md "Plans and a growing table"). The
 * `analyze` maintenance task analyzes a later table once it has more than
 * doubled since its statistics were taken, so those plans are made again.
 *
 * Checked on one session (a pool of one connection, autovacuum off on the
 * table): a server runs jobs on the empty table until its statements hold
 * generic plans, the table then grows to 30,000 rows behind its back, and
 * once the server's `analyze` task has run, 200 more jobs are claimed and
 * finished without one sequential scan of `later_jobs` (without the task,
 * 126 in this run's set-up). And through the seam: one `ANALYZE` per
 * doubling, with no statistics for the columns no statement filters on
 * (migration 23), and a role that does not own the tables is told, not failed.
 */
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { BackgroundJobServer, newJobId, type ServerEvent } from "@later/runtime";
import { type Backend, prepareBackend } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { waitFor } from "./harness.js";
import { oneSessionBackend, postgresUrl, withClient } from "../support/postgres.js";

const url = postgresUrl();

/** Inserts `count` jobs of type `other` due in an hour (nothing claims them): the table grows, the ready work does not. */
async function grow(backend: Backend, count: number): Promise<void> {
  const now = Date.now();
  const jobs = Array.from({ length: count }, () => ({ id: newJobId(now), jobType: "other", payload: "{}", runAt: now + 3_600_000, retryPolicy: null }));
  for (let i = 0; i < jobs.length; i += 2_000) await backend.jobs.insertMany({ jobs: jobs.slice(i, i + 2_000), now });
}

describe.skipIf(url === null)("planner statistics on PostgreSQL", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("a server's statements planned on an empty table do not scan it whole once it has grown", async () => {
    const { pool, backend, table } = await oneSessionBackend(cleanups, { migrate: false }); // the server migrates
    const events: ServerEvent[] = [];
    let done = 0;
    const server = await BackgroundJobServer.start({
      backend,
      context: undefined,
      autoMigrate: true,
      pollIntervalMs: 20,
      workerCount: 2,
      handlers: { work: { handle: () => void done++ } },
      onEvent: (e) => void events.push(e),
    });
    cleanups.push(() => server.shutdown({ deadlineMs: 0 }));
    await pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
    // One at a time on the empty table: the claim and the finish run more than five times, then keep a generic plan.
    for (let i = 1; i <= 40; i++) {
      await server.publisher.enqueue("work", {});
      await waitFor(() => done >= i, `job ${i}`);
    }
    const generic = await pool.query("SELECT count(*)::int AS n FROM pg_prepared_statements WHERE generic_plans > 0");
    expect(generic.rows[0].n).toBeGreaterThan(0);
    const analyzes = () => events.filter((e) => e.type === "maintenance" && e.task === "analyze").length;
    const before = analyzes();
    await grow(server.backend, 30_000);
    await waitFor(() => analyzes() > before, "the analyze task", 15_000);

    // The session's table statistics, flushed to the shared ones before this call returns.
    const seqScans = async () => {
      await pool.query("SELECT pg_stat_force_next_flush()");
      const { rows } = await withClient(url!, (c) => c.query(`SELECT seq_scan::int AS n FROM pg_stat_user_tables WHERE relid = '${table}'::regclass`));
      return rows[0].n as number;
    };
    const scansBefore = await seqScans();
    const base = done;
    for (let i = 0; i < 200; i++) await server.publisher.enqueue("work", {});
    await waitFor(() => done >= base + 200, "200 jobs", 30_000);
    expect((await seqScans()) - scansBefore).toBe(0);
  });

  it("analyzes a table once per doubling, and tells a role that does not own it instead of failing", async () => {
    const { db, pool, backend, table } = await oneSessionBackend(cleanups);
    const pages = async () => (await pool.query(`SELECT relpages FROM pg_class WHERE oid = '${table}'::regclass`)).rows[0].relpages as number;
    expect(await backend.maintenance.statisticsRefresh()).toEqual({ analyzed: [], notOwned: [] }); // empty: nothing to do
    await grow(backend, 5_000);
    expect(await pages()).toBe(0);
    const first = await backend.maintenance.statisticsRefresh();
    expect(first.analyzed).toContain("later_jobs");
    expect(first.notOwned).toEqual([]);
    const analyzedAt = await pages();
    expect(analyzedAt).toBeGreaterThan(16);
    // Statistics for the columns statements filter on, none for the payload, history and the like (migration 23).
    const { rows: stats } = await pool.query(`SELECT attname FROM pg_stats WHERE schemaname = $1 AND tablename = 'later_jobs'`, [db.schema]);
    const columns = stats.map((r) => r.attname as string);
    expect(columns).toEqual(expect.arrayContaining(["id", "namespace", "job_type", "stage", "run_at", "priority"]));
    for (const none of ["payload", "stages", "result", "last_error", "progress", "meta", "retry_policy"]) expect(columns).not.toContain(none);
    // Until the table doubles again: nothing.
    expect((await backend.maintenance.statisticsRefresh()).analyzed).not.toContain("later_jobs");
    await grow(backend, 6_000);
    expect((await backend.maintenance.statisticsRefresh()).analyzed).toContain("later_jobs");
    expect(await pages()).toBeGreaterThan(2 * analyzedAt);

    // A role that may read and write the tables but does not own them: told, nothing analyzed.
    const role = `${db.schema}_user`;
    await pool.query(`CREATE ROLE ${role} LOGIN`);
    cleanups.push(() => withClient(url!, (c) => c.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`)));
    await pool.query(`GRANT USAGE ON SCHEMA ${pg.escapeIdentifier(db.schema)} TO ${role}`);
    await pool.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${pg.escapeIdentifier(db.schema)} TO ${role}`);
    await grow(backend, 25_000);
    const asUser = new URL(url!);
    asUser.username = role;
    const other = postgres({ connectionString: asUser.toString(), schema: db.schema, listen: false });
    await prepareBackend(other, false);
    cleanups.push(() => other.close());
    const relpages = await pages();
    const refused = await other.maintenance.statisticsRefresh();
    expect(refused.analyzed).toEqual([]);
    expect(refused.notOwned).toContain("later_jobs");
    expect(await pages()).toBe(relpages);
  });
});
