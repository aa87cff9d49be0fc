/**
 * P3 runs on PostgreSQL: the statement that writes a run whose jobs all
 * succeeded (`runSuccessNext`) finds the followers it writes by key,
 * however many there are and whatever the table's statistics say. They were
 * found by a join of the table with the ids sent, which the planner, for a
 * run of 95 followers or more on a table whose statistics were not yet taken
 * (a server's first statements after a burst), made a sequential scan of
 * the table joined row by row to the ids: 1.8 s a statement in
 * `bench/partitions.js` with `partitionRunMax: 96`, where 64 took 24 ms.
 */
import { afterEach, describe, expect, it } from "vitest";
import { newJobId, topic } from "@later/runtime";
import { postgresUrl, withClient } from "../support/postgres.js";
import { recordedPostgres } from "../support/recorded-backends.js";

const url = postgresUrl();

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}
const planNodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(planNodes)];

describe.skipIf(url === null)("PostgreSQL: the statement that writes a run (P3)", () => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it.each([{ analyzed: false }, { analyzed: true }])(
    "a run of 127 followers (partitionRunMax 128), table analyzed: $analyzed: the followers found by key, no sequential scan of the jobs",
    async ({ analyzed }) => {
      const { backend, url: dbUrl, table, seen } = await recordedPostgres(cleanups);
      const now = Date.now();
      await backend.partitions.topicRegister({ topics: [topic("orders", 8)], now });
      // As bench/partitions.js fills it: 20,000 jobs of 1,000 keys over 8 partitions.
      const N = 20_000;
      const jobs = Array.from({ length: N }, (_, i) => ({
        id: newJobId(now + i),
        jobType: "order",
        payload: JSON.stringify({ key: `customer-${i % 1_000}`, n: Math.floor(i / 1_000) }),
        runAt: now,
        retryPolicy: null,
        topic: "orders",
        partition: i % 8,
      }));
      for (let i = 0; i < N; i += 2_000) await backend.jobs.insertMany({ jobs: jobs.slice(i, i + 2_000), now });
      await withClient(dbUrl, async (c) => {
        if (analyzed) await c.query(`ANALYZE ${table}`);
        const tuples = Number((await c.query("SELECT reltuples FROM pg_class WHERE oid = $1::regclass", [table])).rows[0].reltuples);
        if (analyzed) expect(tuples).toBe(N);
        else expect(tuples).toBeLessThan(0);
      });
      const claimNext = { leaseExpiresAt: now + 60_000, jobTypes: ["order"], runMax: 128 };
      const { claimed } = await backend.partitions.headClaim({
        owner: "w",
        partitions: [{ topic: "orders", partition: 0 }],
        limit: 1,
        now,
        ...claimNext,
      });
      const claim = claimed[0]!;
      expect(claim.followers).toHaveLength(127);
      seen.length = 0;
      const followers = claim.followers!.map((f) => ({
        id: f.id,
        attempt: f.attempt,
        startedAt: now,
        outcome: { kind: "success" as const },
        retentionMs: 60_000,
      }));
      const written = await backend.partitions.headFinish({ owner: "w", claim, outcome: { kind: "success" }, now, retentionMs: 60_000, followers, claimNext });
      expect(written.followersApplied).toBe(127);
      expect(written.next?.followers).toHaveLength(127);
      const statement = seen.find((q) => /^WITH held AS/.test(q.text) && /\bfw AS \(/.test(q.text));
      expect(statement).toBeDefined();
      // Its plan for the next run's write, the values known (as PostgreSQL's first five runs of a prepared statement plan it).
      const next = written.next!;
      const values = [...statement!.values];
      values[5] = next.id; // $6 the head written, $9 its attempt; $17-$21 the followers
      values[8] = next.attempt;
      values[16] = next.followers!.map((f) => f.id);
      values[17] = next.followers!.map((f) => f.attempt + 1);
      await withClient(dbUrl, async (c) => {
        const [row] = (await c.query({ text: `EXPLAIN (FORMAT JSON) ${statement!.text}`, values })).rows;
        const nodes = planNodes(row["QUERY PLAN"][0].Plan);
        expect(nodes.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "later_jobs")).toEqual([]);
      });
    },
  );
});
