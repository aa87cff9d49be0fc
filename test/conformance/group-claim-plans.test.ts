/**
 * X9 groups: the statements of a group claim read a group's backlog only as
 * far as they take from it, on both backends, whatever the statistics: the
 * walk of the ready groups and each group's share go through
 * `later_jobs_ready_group` (a partial index of the claimable rows that carry
 * a group), never a scan of the jobs table. Checked on the statements the
 * backend runs, recorded from its connection during a group claim over a
 * backlog of one group: on SQLite their `EXPLAIN QUERY PLAN` without
 * `ANALYZE`, on PostgreSQL their generic and custom plans on a table never
 * analyzed (autovacuum off).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { prepareBackend } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { createPostgresSchema, postgresUrl, withClient } from "../support/postgres.js";

const url = postgresUrl();
const NOW = 1_800_000_000_000;
/** The walk of the ready groups, and a claim of the groups' shares. */
const isWalk = (text: string) => /^WITH RECURSIVE g\b/.test(text);
/** PostgreSQL's statement text (`group_key = q.g`), or SQLite's as its `verbose` hook prints it (values expanded). */
const isGroupClaim = (text: string) => /group_key = q\.g/.test(text) || (/^UPDATE later_jobs SET stage = 'running'/.test(text) && /group_key = '/.test(text));

/** 4,000 ready jobs of type `t`: 3,990 of group A (the backlog), one each of ten more groups; a group limit on `t`. */
async function fill(backend: Backend): Promise<void> {
  for (let batch = 0; batch < 4; batch++) {
    const jobs = Array.from({ length: 1_000 }, (_, i) => {
      const n = batch * 1_000 + i;
      return { id: newJobId(NOW + n), jobType: "t", payload: "{}", runAt: NOW - 1_000, retryPolicy: null, group: n < 3_990 ? "A" : `g${n}` };
    });
    await backend.jobs.insertMany({ jobs, now: NOW });
  }
  await backend.jobs.limitsSet({ jobTypes: ["t"], limits: [{ jobType: "t", concurrency: null, rateLimit: null, groupConcurrency: 3 }], now: NOW });
}

/** The group claim whose statements are checked: 3 of A and one of each other group. */
async function groupClaim(backend: Backend): Promise<void> {
  const { jobs } = await backend.jobs.claimReady({ owner: "w1", limit: 20, now: NOW, leaseExpiresAt: NOW + 60_000, jobTypes: [], limitedTypes: ["t"] });
  expect(jobs).toHaveLength(13);
}

describe("the group claim's reads (X9)", () => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("SQLite: the walk and the shares search later_jobs_ready_group, no scan of later_jobs (no ANALYZE)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "later-group-plans-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const seen: string[] = [];
    const database = new Database(join(dir, "plans.db"), { verbose: (text) => seen.push(String(text)) });
    cleanups.push(() => database.close());
    const backend = sqlite({ database });
    await prepareBackend(backend, true);
    cleanups.push(() => backend.close());
    await fill(backend);
    seen.length = 0;
    await groupClaim(backend);
    const checked = [...new Set(seen.filter((t) => isWalk(t) || isGroupClaim(t)))];
    expect(checked.filter(isWalk)).toHaveLength(1);
    expect(checked.filter(isGroupClaim).length).toBeGreaterThan(0);
    for (const text of checked) {
      const plan = database
        .prepare(`EXPLAIN QUERY PLAN ${text}`)
        .all()
        .map((r) => String((r as { detail: string }).detail));
      expect(
        plan.some((d) => d.includes("USING INDEX later_jobs_ready_group") || d.includes("USING COVERING INDEX later_jobs_ready_group")),
        text,
      ).toBe(true);
      expect(
        plan.filter((d) => /^SCAN later_jobs\b/.test(d)),
        text,
      ).toEqual([]);
    }
  });

  it.skipIf(url === null)("PostgreSQL: index scans of later_jobs_ready_group, generic and custom plans, on a never-analyzed table", async () => {
    const db = await createPostgresSchema();
    cleanups.push(db.dispose);
    const seen: { text: string; values: unknown[] }[] = [];
    const pool = new pg.Pool({ connectionString: db.url });
    // Every statement the backend sends, as text and values.
    pool.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const q = args[0] as { text?: string; values?: unknown[] } | string;
        if (typeof q === "object" && q.text !== undefined) seen.push({ text: q.text, values: q.values ?? (args[1] as unknown[]) ?? [] });
        return query(...args);
      };
    });
    cleanups.push(() => pool.end());
    const backend = postgres({ pool, schema: db.schema, listen: false });
    await prepareBackend(backend, true);
    cleanups.push(() => backend.close());
    const table = `${pg.escapeIdentifier(db.schema)}.later_jobs`;
    await pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
    await fill(backend);
    seen.length = 0;
    await groupClaim(backend);
    const walk = seen.find((q) => isWalk(q.text));
    const claim = seen.find((q) => isGroupClaim(q.text));
    expect(walk).toBeDefined();
    expect(claim).toBeDefined();
    await withClient(db.url, async (c) => {
      const tuples = (await c.query("SELECT reltuples FROM pg_class WHERE oid = $1::regclass", [table])).rows[0].reltuples;
      expect(Number(tuples)).toBeLessThan(0); // never analyzed
      for (const [name, { text, values }] of [
        ["group_walk", walk!],
        ["group_claim", claim!],
      ] as const) {
        await c.query(`PREPARE ${name} AS ${text}`);
        const args = values.map((v) => c.escapeLiteral(String(v)));
        for (const mode of ["force_generic_plan", "force_custom_plan"]) {
          await c.query(`SET plan_cache_mode = ${mode}`);
          const [row] = (await c.query(`EXPLAIN (FORMAT JSON) EXECUTE ${name}(${args.join(", ")})`)).rows;
          const nodes = planNodes(row["QUERY PLAN"][0].Plan);
          expect(
            nodes.filter((n) => n["Node Type"] === "Seq Scan"),
            `${name} ${mode}`,
          ).toEqual([]);
          expect(
            nodes.some((n) => String(n["Node Type"]).includes("Index") && n["Index Name"] === "later_jobs_ready_group"),
            `${name} ${mode}`,
          ).toBe(true);
        }
      }
    });
  });
});

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** A plan's nodes, depth first. */
function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}
