/**
 * PostgreSQL, a deadlock on the stage counters (docs/storage.md "Stage
 * counters"): a claim locks its shard's `enqueued` counter row, then its
 * `running` row; a transaction of another session holding `running` that
 * then asks for `enqueued` (as a partition head's finish that claims the
 * next head does) closes a cycle. PostgreSQL rolls one side back; when that
 * side is the claim, the claim runs again and returns its jobs instead of
 * failing with "deadlock detected".
 *
 * The other side holds the claim's counter rows directly (any session can
 * lock a shard's rows) and waits 10 s before its own deadlock check, the
 * claim's session 50 ms, so the claim is always the side PostgreSQL rolls
 * back: the other side's second lock succeeds only because of that.
 */
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import { oneSessionBackend, postgresUrl } from "../support/postgres.js";

const url = postgresUrl();
const NOW = 1_800_000_000_000;
const SHARDS = 16;

describe.skipIf(url === null)("a claim rolled back for a deadlock on PostgreSQL", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("runs again and returns its jobs; the counters stay equal to the jobs", async () => {
    const { db, pool, backend } = await oneSessionBackend(cleanups);
    const [session] = (await pool.query("SELECT pg_backend_pid() AS pid")).rows as { pid: number }[];
    await pool.query("SET deadlock_timeout = '50ms'"); // the backend's only session: its claims check first
    const shard = session!.pid % SHARDS;
    const ids = [newJobId(NOW), newJobId(NOW)];
    await backend.jobs.insertMany({ jobs: ids.map((id) => ({ id, jobType: "work", payload: "{}", runAt: NOW - 1, retryPolicy: null })), now: NOW });
    const claim = () => backend.jobs.claimReady({ owner: "w", limit: 1, now: NOW, leaseExpiresAt: NOW + 60_000, jobTypes: ["work"] });
    expect((await claim()).jobs.map((j) => j.id)).toEqual([ids[0]]); // the shard's `enqueued` and `running` rows now exist

    const other = new pg.Client(url!);
    await other.connect();
    cleanups.push(() => other.end());
    const counters = `${pg.escapeIdentifier(db.schema)}.later_stage_counts`;
    const lock = (stage: string) =>
      other.query(`UPDATE ${counters} SET n = n WHERE namespace = 'default' AND stage = $1 AND shard = $2 RETURNING n`, [stage, shard]);
    await other.query("BEGIN");
    await other.query("SET LOCAL deadlock_timeout = '10s'");
    expect((await lock("running")).rowCount).toBe(1);

    const claimed = claim();
    // The claim has locked `enqueued` and waits for `running`.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { rows } = await other.query("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", [session!.pid]);
      if (rows[0]?.wait_event_type === "Lock") break;
      if (Date.now() > deadline) throw new Error("the claim never waited for the counter row");
      await new Promise((r) => setTimeout(r, 10));
    }
    // Closes the cycle; PostgreSQL rolls the claim back (its check comes first), so this lock is granted.
    expect((await lock("enqueued")).rowCount).toBe(1);
    await other.query("COMMIT");

    expect((await claimed).jobs.map((j) => j.id)).toEqual([ids[1]]);
    expect((await backend.inspect.stageCounts()).counts).toMatchObject({ enqueued: 0, running: 2 });
    const { rows } = await other.query(`SELECT stage, count(*)::int AS n FROM ${pg.escapeIdentifier(db.schema)}.later_jobs GROUP BY stage`);
    expect(rows).toEqual([{ stage: "running", n: 2 }]);
  });
});
