/**
 * X9: the running count of a limited claim reads the namespace's running
 * regular jobs through `later_jobs_running`, on both backends, whatever the
 * statistics: never a scan of the jobs table (migration 19 adds no index of
 * running jobs by type, which every claim and finish of every job would
 * maintain). The statement checked is the one the backend runs, recorded
 * from its connection during a limited claim over a backlog: on SQLite its
 * `EXPLAIN QUERY PLAN` without `ANALYZE`, on PostgreSQL its generic and
 * custom plans on a table never analyzed (as a queue just filled, with
 * autovacuum off). On PostgreSQL a type whose limit is a concurrency alone
 * is counted inside its one claim statement (`claimUnderConcurrency`): that
 * statement's whole plan is checked.
 */
import { afterEach, describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { postgresUrl, withClient } from "../support/postgres.js";
import { recordedPostgres, recordedSqlite } from "../support/recorded-backends.js";

const url = postgresUrl();
const NOW = 1_800_000_000_000;
/** The running count's text: the one statement of a claim that counts running rows per type. */
const isRunningCount = (text: string) => /^SELECT job_type, count\(\*\)/.test(text) && /stage = 'running'/.test(text);
/** PostgreSQL's: the one claim statement of a type limited by a concurrency alone, which counts its running rows. */
const isPgRunningCount = (text: string) => /stage = 'running' AND topic IS NULL AND job_type = \$7/.test(text);

/** A backlog of 4,000 ready jobs of types `a` and `b`, 20 of each claimed (running), and a limit on `a`. */
async function fill(backend: Backend): Promise<void> {
  for (let batch = 0; batch < 4; batch++) {
    const jobs = Array.from({ length: 1_000 }, (_, i) => ({
      id: newJobId(NOW + batch * 1_000 + i),
      jobType: i % 2 === 0 ? "a" : "b",
      payload: "{}",
      runAt: NOW - 1_000,
      retryPolicy: null,
    }));
    await backend.jobs.insertMany({ jobs, now: NOW });
  }
  await backend.jobs.claimReady({ owner: "w0", limit: 40, now: NOW, leaseExpiresAt: NOW + 60_000, jobTypes: ["a", "b"] });
  await backend.jobs.limitsSet({ jobTypes: ["a"], limits: [{ jobType: "a", concurrency: 25, rateLimit: null, groupConcurrency: null }], now: NOW });
}

/** The limited claim whose statements are checked: `a` limited (5 slots free), `b` plain. */
async function limitedClaim(backend: Backend): Promise<void> {
  const { jobs } = await backend.jobs.claimReady({ owner: "w1", limit: 10, now: NOW, leaseExpiresAt: NOW + 60_000, jobTypes: ["b"], limitedTypes: ["a"] });
  expect(jobs.filter((j) => j.jobType === "a")).toHaveLength(5);
}

describe("the limited claim's running count (X9)", () => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("SQLite: searches later_jobs_running by namespace, no scan of later_jobs (no ANALYZE)", async () => {
    const { backend, database, seen } = await recordedSqlite(cleanups);
    await fill(backend);
    seen.length = 0;
    await limitedClaim(backend);
    const counts = seen.filter(isRunningCount);
    expect(counts).toHaveLength(1);
    const plan = database
      .prepare(`EXPLAIN QUERY PLAN ${counts[0]!.replaceAll(/\?/g, "NULL")}`)
      .all()
      .map((r) => String((r as { detail: string }).detail));
    expect(plan).toContain("SEARCH later_jobs USING INDEX later_jobs_running (namespace=?)");
    expect(plan.filter((d) => /^SCAN later_jobs\b/.test(d))).toEqual([]);
  });

  it.skipIf(url === null)("PostgreSQL: an index scan of later_jobs_running, generic and custom plans, on a never-analyzed table", async () => {
    const { backend, url: dbUrl, table, seen } = await recordedPostgres(cleanups);
    await fill(backend);
    seen.length = 0;
    await limitedClaim(backend);
    const counts = seen.filter((q) => isPgRunningCount(q.text));
    expect(counts).toHaveLength(1);
    const { text, values } = counts[0]!;
    await withClient(dbUrl, async (c) => {
      const tuples = (await c.query("SELECT reltuples FROM pg_class WHERE oid = $1::regclass", [table])).rows[0].reltuples;
      expect(Number(tuples)).toBeLessThan(0); // never analyzed
      await c.query(`PREPARE running_count AS ${text}`);
      const args = values.map((v) => (Array.isArray(v) ? `ARRAY[${v.map((s) => c.escapeLiteral(String(s))).join(",")}]` : c.escapeLiteral(String(v))));
      for (const mode of ["force_generic_plan", "force_custom_plan"]) {
        await c.query(`SET plan_cache_mode = ${mode}`);
        const [row] = (await c.query(`EXPLAIN (FORMAT JSON) EXECUTE running_count(${args.join(", ")})`)).rows;
        const nodes = planNodes(row["QUERY PLAN"][0].Plan);
        expect(
          nodes.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "later_jobs"),
          mode,
        ).toEqual([]);
        expect(
          nodes.some((n) => String(n["Node Type"]).includes("Index") && n["Index Name"] === "later_jobs_running"),
          mode,
        ).toBe(true);
      }
    });
  });
});

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** A plan's nodes, depth first. */
function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}
