/**
 * The plans of the partition-head statements on PostgreSQL do not depend on
 * the table's statistics: on a jobs table filled since it was last analyzed
 * (as a queue after a burst, with autovacuum off or not yet come by), head
 * claims and finishes read each head through `later_jobs_partition_head`,
 * never the whole topic through another index nor the table.
 */
import { afterEach, describe, expect, it } from "vitest";
import pg from "pg";
import { partitionForKey, topic } from "@later/runtime";
import { postgres } from "@later/runtime/postgres";
import { prepareBackend } from "@later/runtime/internal";
import { createPostgresSchema, postgresUrl, withClient } from "../support/postgres.js";

const url = postgresUrl();

describe.skipIf(url === null)("PostgreSQL partition-head plans", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it.each([
    { table: "never analyzed", analyzed: false },
    { table: "analyzed after the fill (as the server's analyze task does at start)", analyzed: true },
  ])(
    "head claims, finishes (success and failure), runs (P3), put-backs and the partition list probe one head each on a table $table: no sequential scan, no scan of the topic",
    async ({ analyzed }) => {
      const db = await createPostgresSchema();
      cleanups.push(db.dispose);
      const pool = new pg.Pool({ connectionString: db.searchPathUrl, max: 1 }); // one connection: its statistics are flushed below
      cleanups.push(() => pool.end());
      const backend = postgres({ pool, schema: db.schema, listen: false });
      await prepareBackend(backend, true);
      cleanups.push(() => backend.close());
      const schema = pg.escapeIdentifier(db.schema);
      const table = `${schema}.later_jobs`;
      // Never analyzed for the whole test: an autovacuum worker passing by would otherwise analyze the table.
      await pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);

      // Filled as bench/partitions.js fills it: one topic of 8 partitions, 1,000 keys, through insertMany in batches of 2,000.
      const PARTITIONS = 8;
      const N = 24_000;
      const now = Date.now();
      await backend.partitions.topicRegister({ topics: [topic("orders", PARTITIONS)], now });
      // Short ids, as the bench's (`b` and 12 digits): the topic list index (namespace, topic, id) is then no
      // taller than the head index, and the planner, estimating one row either way, took it for every probe.
      const jobs = Array.from({ length: N }, (_, i) => ({
        id: `b${String(i + 1).padStart(12, "0")}`,
        jobType: "order",
        payload: "{}",
        runAt: now,
        retryPolicy: null,
        topic: "orders",
        partition: partitionForKey(`customer-${i % 1000}`, PARTITIONS),
      }));
      for (let i = 0; i < N; i += 2_000) await backend.jobs.insertMany({ jobs: jobs.slice(i, i + 2_000), now });
      if (analyzed) await pool.query(`ANALYZE ${table}`);
      const tuples = await withClient(url!, async (c) => (await c.query("SELECT reltuples FROM pg_class WHERE oid = $1::regclass", [table])).rows[0].reltuples);
      // Never analyzed, as a queue just filled; or analyzed with every row ready, which makes a join over the
      // namespace's jobs look cheap to the planner.
      if (analyzed) expect(Number(tuples)).toBe(N);
      else expect(Number(tuples)).toBeLessThan(0);

      /** The table's sequential scans, the scans of the topic list index, and the index entries read on the jobs table. */
      const stats = async () => {
        await pool.query("SELECT pg_stat_force_next_flush()"); // flushed when the connection next goes idle
        await pool.query("SELECT 1");
        return withClient(url!, async (c) => {
          const t = (await c.query("SELECT seq_scan FROM pg_stat_user_tables WHERE relid = $1::regclass", [table])).rows[0];
          const i = (
            await c.query(
              `SELECT coalesce(sum(idx_tup_read), 0)::bigint AS read, coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'later_jobs_topic_list'), 0)::bigint AS topic_list
             FROM pg_stat_user_indexes WHERE relid = $1::regclass`,
              [table],
            )
          ).rows[0];
          return { seqScans: Number(t.seq_scan), topicListScans: Number(i.topic_list), entriesRead: Number(i.read) };
        });
      };

      const partitions = Array.from({ length: PARTITIONS }, (_, p) => ({ topic: "orders", partition: p }));
      const claimNext = { leaseExpiresAt: now + 60_000, jobTypes: ["order"] };
      const before = await stats();
      let statements = 0;

      const { claimed } = await backend.partitions.headClaim({
        owner: "w",
        partitions,
        limit: PARTITIONS,
        now,
        leaseExpiresAt: now + 60_000,
        jobTypes: ["order"],
      });
      statements++;
      expect(claimed).toHaveLength(PARTITIONS);
      let held = claimed;
      // The hot path: a success that claims the partition's next head in the same statement.
      for (let round = 0; round < 25; round++) {
        const next = [];
        for (const claim of held) {
          const r = await backend.partitions.headFinish({ owner: "w", claim, outcome: { kind: "success" }, now, retentionMs: 60_000, claimNext });
          statements++;
          expect(r.applied).toBe(true);
          expect(r.next?.seq).toBe(claim.seq + 1);
          next.push(r.next!);
        }
        held = next;
      }
      // A failure (no retries): the finish, then the next head read on its own.
      const afterFail = [];
      for (const claim of held) {
        const r = await backend.partitions.headFinish({ owner: "w", claim, outcome: { kind: "fail", error: "no" }, now, retentionMs: 60_000, claimNext });
        statements++;
        expect(r.next?.seq).toBe(claim.seq + 1);
        afterFail.push(r.next!);
      }
      // Shutdown's put-back, then a new claim of the same heads.
      const put = await backend.partitions.headRelease({ owner: "w", claims: afterFail, now });
      statements++;
      expect(put.released).toHaveLength(PARTITIONS);
      const again = await backend.partitions.headClaim({ owner: "w2", partitions, limit: PARTITIONS, now, leaseExpiresAt: now + 60_000, jobTypes: ["order"] });
      statements++;
      expect(again.claimed.map((c) => c.id).sort()).toEqual(afterFail.map((c) => c.id).sort());
      // The partition list (each partition's head), as the dashboard and the lag gauges read it.
      const listed = await backend.inspect.partitionList({ topic: "orders" });
      statements++;
      expect(listed.partitions.map((p) => p.headJobId).sort()).toEqual(afterFail.map((c) => c.id).sort());

      // Runs (P3): a success reading the next run's followers with it, then runs finished (their followers
      // written, the next run read at once: held, followers, finish, next run, lease and claim, five statements
      // counted), then a claim with room for followers (one LATERAL range per partition).
      const runNext = { ...claimNext, runMax: 8 };
      let runs = again.claimed;
      for (let round = 0; round < 3; round++) {
        const next = [];
        for (const claim of runs) {
          const followers = (claim.followers ?? []).map((f) => ({
            id: f.id,
            attempt: f.attempt,
            startedAt: now,
            outcome: { kind: "success" as const },
            retentionMs: 60_000,
          }));
          const r = await backend.partitions.headFinish({
            owner: "w2",
            claim,
            outcome: { kind: "success" },
            now,
            retentionMs: 60_000,
            followers,
            claimNext: runNext,
          });
          statements += followers.length > 0 ? 5 : 1;
          expect(r.applied).toBe(true);
          expect(r.followersApplied ?? 0).toBe(followers.length);
          expect(r.next?.followers).toHaveLength(7);
          next.push(r.next!);
        }
        runs = next;
      }
      expect((await backend.partitions.headRelease({ owner: "w2", claims: runs, now })).released).toHaveLength(PARTITIONS);
      statements++;
      const withRuns = await backend.partitions.headClaim({
        owner: "w3",
        partitions,
        limit: PARTITIONS,
        now,
        leaseExpiresAt: now + 60_000,
        jobTypes: ["order"],
        runMax: 8,
      });
      statements += 2;
      expect(withRuns.claimed.map((c) => c.followers?.length)).toEqual(Array(PARTITIONS).fill(7));

      const after = await stats();
      expect(after.seqScans - before.seqScans).toBe(0);
      expect(after.topicListScans - before.topicListScans).toBe(0);
      // A statement reads its rows by key and a head or two, plus the entries of the partition's heads
      // finished before it until vacuum removes them (at most 27 here): about 30 entries a statement
      // (6,009 in all when written). Through the topic list it read the topic's 24,000 each time (5.57 million).
      expect(after.entriesRead - before.entriesRead).toBeLessThan(statements * 100);
      // Every statement run 20 times or more on this connection keeps a generic plan after PostgreSQL's five
      // custom ones: a value that sizes a plan (a run's room, a LIMIT) is written into the text, not bound.
      const plans = await pool.query(
        "SELECT left(statement, 60) AS statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE generic_plans + custom_plans >= 20",
      );
      expect(plans.rows.length).toBeGreaterThan(0);
      expect(plans.rows.filter((r) => Number(r.custom_plans) > 5)).toEqual([]);
      // The counts are live: a scan of the topic through its list index shows in them.
      await pool.query(`SELECT count(*) FROM ${table} WHERE namespace = 'default' AND topic = 'orders' AND id > ''`);
      const probe = await stats();
      expect(probe.entriesRead - after.entriesRead).toBeGreaterThan(0);
    },
  );
});
