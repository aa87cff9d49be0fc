/**
 * PostgreSQL, a held-back horizon (docs/storage.md "A held-back horizon"):
 * while another session's snapshot is older than the claims, the entries
 * the claims left in `later_jobs_ready` cannot be removed, and a claim that
 * reads the index from its start visits the table for each. A claim slower
 * than `slowMs` starts a degraded spell in which claims read from a floor.
 *
 * Checked through the seam on one session: with 3,000 jobs claimed and
 * finished under a held snapshot, the full claim's probe visits the table
 * for each of their entries and the floored claim for none of them, its plan
 * starting the floored priority at `(priority, floor)`; floored claims take every job once, in (priority,
 * run_at) order, as full claims do; a job stored below the floor is taken by
 * the check below the floor that ends the spell.
 */
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { oneSessionBackend, postgresUrl } from "../support/postgres.js";

const url = postgresUrl();
const NOW = 1_800_000_000_000;

interface FloorLike {
  floorFor(types: readonly string[]): { runAt: number; priority: number } | null;
}
interface StoreInternals {
  ready: { floor: FloorLike };
  q: { claims: { claimBatch(limit: number, floored?: boolean): [number, { text: string }] } };
}
const internals = (backend: Backend) => backend.jobs as unknown as StoreInternals;
/** A floor that starts a spell on every full claim (each spell 1 s of the claims' `now`). */
function alwaysFloored(backend: Backend): void {
  const store = internals(backend);
  const Floor = store.ready.floor.constructor as new (options: { slowMs: number; slackMs?: number }) => FloorLike;
  store.ready.floor = new Floor({ slowMs: 0, slackMs: 1_000 });
}

async function insert(backend: Backend, jobs: { runAt: number; priority?: number }[]): Promise<string[]> {
  const rows = jobs.map((j) => ({ id: newJobId(NOW), jobType: "work", payload: "{}", runAt: j.runAt, retryPolicy: null, priority: j.priority ?? 0 }));
  for (let i = 0; i < rows.length; i += 1_000) await backend.jobs.insertMany({ jobs: rows.slice(i, i + 1_000), now: NOW });
  return rows.map((r) => r.id);
}

interface PlanNode {
  "Heap Fetches"?: number;
  Plans?: PlanNode[];
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

const claim = (backend: Backend, limit: number, now: number) =>
  backend.jobs.claimReady({ owner: "w", limit, now, leaseExpiresAt: now + 600_000, jobTypes: ["work"] });

describe.skipIf(url === null)("claim floor on PostgreSQL", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("under a held snapshot, the floored claim skips the dead entries the full claim visits", async () => {
    const { pool, backend } = await oneSessionBackend(cleanups);
    const holder = new pg.Client(url!);
    await holder.connect();
    cleanups.push(() => holder.end());
    await holder.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
    await holder.query("SELECT 1"); // its snapshot: nothing claimed after this can be removed while it is held
    await insert(
      backend,
      Array.from({ length: 3_000 }, (_, i) => ({ runAt: NOW - 10_000 + i })),
    );
    for (let i = 0; i < 3; i++) {
      const { jobs } = await claim(backend, 1_024, NOW);
      await backend.jobs.finishMany({
        now: NOW,
        retentionMs: 60_000,
        finishes: jobs.map((j) => ({ id: j.id, attempt: j.attempt, outcome: { kind: "success" } })),
      });
    }
    await insert(
      backend,
      Array.from({ length: 50 }, (_, i) => ({ runAt: NOW + 1_000 + i })),
    );
    const later = NOW + 5_000;
    const buffers = async (floored: boolean) => {
      const [batch, s] = internals(backend).q.claims.claimBatch(32, floored);
      const values: unknown[] = [backend.namespace, later, ["work"], batch, "x", later + 60_000];
      if (floored) values.push(NOW - 1_000, 0); // the floor a short claim at NOW leaves for priority 0: now minus the slack
      await pool.query("BEGIN");
      try {
        const { rows } = await pool.query({ text: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${s.text}`, values });
        const plan = rows[0]["QUERY PLAN"][0].Plan as PlanNode;
        // Each dead entry an index-only scan meets is a visit to the table ("Heap Fetches").
        return { fetches: nodes(plan).reduce((n, node) => n + (node["Heap Fetches"] ?? 0), 0), text: JSON.stringify(plan) };
      } finally {
        await pool.query("ROLLBACK");
      }
    };
    const full = await buffers(false);
    const floored = await buffers(true);
    expect(full.fetches).toBeGreaterThanOrEqual(3_000); // the 3,000 dead entries
    expect(floored.fetches).toBeLessThan(100);
    expect(floored.text).toMatch(/ROW\(priority, run_at\) >= ROW/);
    expect(floored.text).not.toContain('"Seq Scan"');
    await holder.query("ROLLBACK");
  });

  it("floored claims take every job once, in (priority, run_at) order; a job below the floor waits for the check that ends the spell", async () => {
    const { backend } = await oneSessionBackend(cleanups);
    alwaysFloored(backend);
    const jobs = Array.from({ length: 300 }, (_, i) => ({ runAt: NOW - 60_000 + i * 7, priority: [0, 1, -1][i % 3]! }));
    const ids = await insert(backend, jobs);
    const order = ids.map((id, i) => ({ id, ...jobs[i]! })).sort((a, b) => a.priority - b.priority || a.runAt - b.runAt);
    const taken: string[] = [];
    let now = NOW;
    // The first claim is full (and starts a spell); the others within the spell are floored.
    for (let round = 0; round < 20 && taken.length < 300; round++) {
      now += 10;
      const { jobs: got } = await claim(backend, 32, now);
      taken.push(...got.map((j) => j.id));
      if (round === 1) expect(internals(backend).ready.floor.floorFor(["work"])).not.toBeNull();
    }
    expect(taken).toEqual(order.map((o) => o.id));
    // Everything due was taken, the last row of priority 1: its floor is now minus the slack. A job of that
    // priority given a run_at below it is skipped until the spell ends; one of another priority is not.
    const [below] = await insert(backend, [{ runAt: now - 5_000, priority: 1 }]);
    const [other] = await insert(backend, [{ runAt: now - 5_000, priority: 0 }]);
    const [above] = await insert(backend, [{ runAt: now - 100, priority: 1 }]);
    const [lower] = await insert(backend, [{ runAt: now - 100, priority: 5 }]);
    const floored = await claim(backend, 32, now + 10);
    expect(floored.jobs.map((j) => j.id)).toEqual([other, above, lower]);
    // Past the longest spell: the check below the floor runs beside the next claim (on this one session, before
    // it), and finds the job; the claim after it reads from the lowered floor.
    const atSpellEnd = await claim(backend, 32, now + 10 + 60_000);
    const next = await claim(backend, 32, now + 20 + 60_000);
    expect([...atSpellEnd.jobs, ...next.jobs].map((j) => j.id)).toEqual([below]);
  });
});
