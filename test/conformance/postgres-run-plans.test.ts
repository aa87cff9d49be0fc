/**
 * P3 runs on PostgreSQL: the statement that writes a run whose jobs all
 * succeeded (`runSuccessNext`) finds the followers it writes by key,
 * however many there are and whatever the table's statistics say. They were
 * found by a join of the table with the ids sent, which the planner, for a
 * run of 95 followers or more on a table whose statistics were not yet taken
 * (a server's first statements after a burst), made a sequential scan of
 * the table joined row by row to the ids: 1.8 s a statement in
 * `bench/partitions.js` with `partitionRunMax: 96`, where 64 took 24 ms.
 *
 * The same statement reads no further than its partition's last job. Its
 * range over the partition index is bounded above by a row comparison, which
 * PostgreSQL's B-tree checks entry by entry without ending the scan (only a
 * row comparison's first column, the namespace, ends it): a probe that found
 * fewer jobs than it looked for (the next head past a partition's last job,
 * followers past a last run's) read every entry of the namespace after the
 * partition, 60-80 ms a statement behind 100,000 jobs of another topic in
 * `bench/partitions.js`. It now looks for no more than the partition's
 * `next_seq` says there are. A probe from a partition's start (its head)
 * found nothing in an empty partition the same way, after reading every
 * entry after it, at each head claim of an idle partition: it is now made
 * only when the partition's counters say it has unfinished jobs.
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

/** Runs `text` with `values` in a transaction rolled back: its rows, and the pages of the partition head index it read. */
async function headIndexPages(dbUrl: string, table: string, text: string, values: unknown[]): Promise<{ rows: Record<string, unknown>[]; pages: number }> {
  return withClient(dbUrl, async (c) => {
    await c.query("BEGIN");
    try {
      const { rows } = await c.query(text, values);
      const index = `${table.split(".")[0]}.later_jobs_partition_head`;
      const [pages] = (await c.query("SELECT pg_stat_get_xact_blocks_fetched($1::regclass) AS n", [index])).rows;
      return { rows, pages: Number(pages.n) };
    } finally {
      await c.query("ROLLBACK");
    }
  });
}

/** A job of partition `partition` of topic `t` (its type named after the topic), id `at` ms after `now`, due now. */
const partitionJob = (t: string, partition: number, now: number, at: number) => ({
  id: newJobId(now + at),
  jobType: t,
  payload: "{}",
  runAt: now,
  retryPolicy: null,
  topic: t,
  partition,
});

/** 20,000 jobs of topic "zz", which sort after every partition of the other topics in the partition indexes. */
async function fillZz(backend: Awaited<ReturnType<typeof recordedPostgres>>["backend"], now: number, first: number): Promise<void> {
  for (let k = 0; k < 10; k++) {
    const jobs = Array.from({ length: 2_000 }, (_, i) => partitionJob("zz", 0, now, first + k * 2_000 + i));
    await backend.jobs.insertMany({ jobs, now });
  }
}

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

  it("a run's write reads the partition index no further than its partition's last job, with 20,000 jobs of another topic after it", async () => {
    const { backend, url: dbUrl, table, seen } = await recordedPostgres(cleanups);
    const now = Date.now();
    await backend.partitions.topicRegister({ topics: [topic("orders", 2), topic("zz", 1)], now });
    // Each partition of "orders": a run of 128, then a last run of 63. Every "zz" job lies after them in the index.
    let i = 0;
    for (const p of [0, 1]) await backend.jobs.insertMany({ jobs: Array.from({ length: 191 }, () => partitionJob("orders", p, now, i++)), now });
    await fillZz(backend, now, i);
    await withClient(dbUrl, (c) => c.query(`ANALYZE ${table}`));
    const claimNext = { leaseExpiresAt: now + 60_000, jobTypes: ["orders"], runMax: 128 };
    const partitions = [0, 1].map((partition) => ({ topic: "orders", partition }));
    const { claimed } = await backend.partitions.headClaim({ owner: "w", partitions, limit: 2, now, ...claimNext });
    const [a, b] = [0, 1].map((p) => claimed.find((c) => c.partition === p)!);
    expect(b!.followers).toHaveLength(127);
    const ran = (c: typeof a) =>
      c!.followers!.map((f) => ({ id: f.id, attempt: f.attempt, startedAt: now, outcome: { kind: "success" as const }, retentionMs: 60_000 }));
    seen.length = 0;
    const written = await backend.partitions.headFinish({
      owner: "w",
      claim: a!,
      outcome: { kind: "success" },
      now,
      retentionMs: 60_000,
      followers: ran(a),
      claimNext,
    });
    expect(written.next?.followers).toHaveLength(62);
    const statement = seen.find((q) => /^WITH held AS/.test(q.text) && /\bfw AS \(/.test(q.text))!;
    expect(statement).toBeDefined();
    // The same statement for another run, in a transaction rolled back: its row, and the partition index's pages it read.
    const writeRun = async (run: NonNullable<typeof a>) => {
      const values = [...statement.values];
      const followers = run.followers!;
      values[2] = run.partition; // $3 partition, $4 epoch, $6 head, $9 its attempt, $17-$21 the followers
      values[3] = run.epoch;
      values[5] = run.id;
      values[8] = run.attempt;
      values[16] = followers.map((f) => f.id);
      values[17] = followers.map((f) => f.attempt);
      values[18] = followers.map(() => now);
      values[19] = followers.map(() => now + 60_000);
      values[20] = followers.map(() => null);
      const { rows, pages } = await headIndexPages(dbUrl, table, statement.text, values);
      return { row: rows[0]!, pages };
    };
    // Partition 1's first run written: its next head is there, and 62 followers behind it, not the 127 looked for.
    const first = await writeRun(b!);
    expect(first.row.followers_applied).toBe(127);
    expect(first.row.followers).toHaveLength(62);
    // Partition 0's last run written: no next head.
    const last = await writeRun(written.next!);
    expect(last.row.followers_applied).toBe(62);
    expect(last.row.id).toBeNull();
    // 20,000 entries of "zz" fill about 100 pages of the index; a partition's own entries here, under 10.
    expect(first.pages).toBeLessThan(25);
    expect(last.pages).toBeLessThan(25);
  });

  it("a head claim and the partition list read nothing of the partition index for idle partitions, with 20,000 jobs of another topic after them", async () => {
    const { backend, url: dbUrl, table, seen } = await recordedPostgres(cleanups);
    const now = Date.now();
    await backend.partitions.topicRegister({ topics: [topic("idle", 4), topic("zz", 1)], now });
    // Partition 0 of "idle" ran a job to its end; the other three never had one.
    await backend.jobs.insertMany({ jobs: [partitionJob("idle", 0, now, 0)], now });
    const partitions = [0, 1, 2, 3].map((partition) => ({ topic: "idle", partition }));
    const claim = { owner: "w", partitions, limit: 4, now, leaseExpiresAt: now + 60_000, jobTypes: ["idle"] };
    const [ran] = (await backend.partitions.headClaim(claim)).claimed;
    await backend.partitions.headFinish({ owner: "w", claim: ran!, outcome: { kind: "success" }, now, retentionMs: 60_000 });
    await fillZz(backend, now, 1);
    await withClient(dbUrl, (c) => c.query(`ANALYZE ${table}`));
    seen.length = 0;
    expect((await backend.partitions.headClaim(claim)).claimed).toEqual([]);
    const heads = seen.find((q) => /^WITH p AS MATERIALIZED/.test(q.text))!;
    expect(heads).toBeDefined();
    const listed = await backend.inspect.partitionList({ topic: "idle" });
    expect(listed.partitions.map((p) => p.headJobId)).toEqual([null, null, null, null]);
    const list = seen.find((q) => /\bAS head_id\b/.test(q.text))!;
    expect(list).toBeDefined();
    for (const q of [heads, list]) {
      const { rows, pages } = await headIndexPages(dbUrl, table, q.text, q.values);
      expect(rows.filter((r) => r.id ?? r.head_id)).toEqual([]);
      // Each idle partition's probe read the 20,000 entries of "zz" (about 100 pages) before it had this guard.
      expect(pages).toBeLessThan(10);
    }
  });

  it("the next run read after a failure reads no more of the partition index than the partition's unfinished jobs, with 20,000 jobs of another topic after them", async () => {
    const { backend, url: dbUrl, table, seen } = await recordedPostgres(cleanups);
    const now = Date.now();
    await backend.partitions.topicRegister({ topics: [topic("few", 1), topic("zz", 1)], now });
    const jobs = [0, 1, 2].map((i) => partitionJob("few", 0, now, i));
    await backend.jobs.insertMany({ jobs, now });
    await fillZz(backend, now, 3);
    await withClient(dbUrl, (c) => c.query(`ANALYZE ${table}`));
    const claimNext = { leaseExpiresAt: now + 60_000, jobTypes: ["few"], runMax: 128 };
    // The first head claimed alone (a run of one), so that its failure reads the next run from the partition's start.
    const partitions = [{ topic: "few", partition: 0 }];
    const { claimed } = await backend.partitions.headClaim({ owner: "w", partitions, limit: 1, now, ...claimNext, runMax: 1 });
    seen.length = 0;
    const failed = await backend.partitions.headFinish({
      owner: "w",
      claim: claimed[0]!,
      outcome: { kind: "fail", error: "no" },
      now,
      retentionMs: 60_000,
      claimNext,
    });
    expect(failed.next?.id).toBe(jobs[1]!.id);
    expect(failed.next?.followers?.map((f) => f.id)).toEqual([jobs[2]!.id]);
    const ahead = seen.find((q) => /^SELECT j\.id, j\.job_type, j\.stage, j\.payload/.test(q.text) && /\bLIMIT least\(128\b/.test(q.text))!;
    expect(ahead).toBeDefined();
    const { rows, pages } = await headIndexPages(dbUrl, table, ahead.text, ahead.values);
    expect(rows.map((r) => r.id)).toEqual([jobs[1]!.id, jobs[2]!.id]);
    // Looking for 128 and finding 2, the range read the 20,000 entries of "zz" (about 100 pages) before it was bounded.
    expect(pages).toBeLessThan(10);
  });
});
