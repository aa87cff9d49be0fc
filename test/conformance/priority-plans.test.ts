/**
 * X1: the claim orders by (priority, run_at) through the ready index
 * (namespace, priority, run_at), never by sorting the backlog. On a table of
 * a few thousand ready jobs of mixed priorities, each priority's share
 * larger than the claim's limit (and delayed ones behind them), the claim's plan reads the ready index per priority in index order:
 * PostgreSQL's EXPLAIN has no Sort over a scan of the jobs table and no
 * sequential scan of it; SQLite's EXPLAIN QUERY PLAN of the claim (and of
 * the next-run-at probe) has no TEMP B-TREE. The only sort left is
 * PostgreSQL's of the claimed rows themselves (at most `limit`). (When a
 * priority holds fewer ready rows than the limit, PostgreSQL may rightly
 * prefer a bitmap scan and a sort of those few rows.)
 */
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import { type Backend, prepareBackend } from "@later/runtime/internal";
import { BACKENDS, withDatabase } from "./backends.js";
import { oneSessionBackend, postgresUrl } from "../support/postgres.js";

const READY = 3_000;
const DELAYED = 3_000;

/** Fills `backend` with READY due jobs of random priorities and DELAYED jobs not yet due. */
async function fill(backend: Backend, now: number): Promise<void> {
  const jobs = Array.from({ length: READY + DELAYED }, (_, i) => ({
    id: newJobId(now),
    jobType: "work",
    payload: "{}",
    runAt: i < READY ? now - 1_000 + (i % 500) : now + 60_000 + i,
    retryPolicy: null,
    priority: ((i * 7919) % 5) - 2,
  }));
  for (let i = 0; i < jobs.length; i += 1_000) await backend.jobs.insertMany({ jobs: jobs.slice(i, i + 1_000), now });
}

/** Zeros for every parameter of `text`: an object by number when it numbers them (`?5`), else one per `?`. */
function zeros(text: string): unknown[] {
  const numbered = [...text.matchAll(/\?(\d+)/g)].map((m) => Number(m[1]));
  if (numbered.length > 0) return [Object.fromEntries(Array.from({ length: Math.max(...numbered) }, (_, i) => [i + 1, 0]))];
  return Array.from({ length: (text.match(/\?/g) ?? []).length }, () => 0);
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  Plans?: PlanNode[];
}

function nodes(n: PlanNode): PlanNode[] {
  return [n, ...(n.Plans ?? []).flatMap(nodes)];
}

describe.skipIf(postgresUrl() === null)("X1 claim plan on PostgreSQL", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("reads later_jobs_ready per priority in (priority, run_at) order: no Sort over the jobs, no sequential scan, analyzed or not", async () => {
    const { pool, backend, table } = await oneSessionBackend(cleanups); // one session: the claim's prepared statement is there
    const now = Date.now();
    await fill(backend, now);
    const claimed = await backend.jobs.claimReady({ owner: "w", limit: 10, now, leaseExpiresAt: now + 60_000, jobTypes: ["work"] });
    expect(claimed.jobs).toHaveLength(10);
    const { rows } = await pool.query("SELECT name FROM pg_prepared_statements WHERE statement LIKE '%WITH RECURSIVE prio%'");
    expect(rows).toHaveLength(1);
    const name = String(rows[0].name);
    for (const analyzed of [false, true]) {
      if (analyzed) await pool.query(`ANALYZE ${table}`);
      for (const limit of [10, 200]) {
        const explained = await pool.query(
          `EXPLAIN (FORMAT JSON) EXECUTE ${name}('${backend.namespace}', ${now}, ARRAY['work'], ${limit}, 'w', ${now + 60_000})`,
        );
        const plan = nodes(explained.rows[0]["QUERY PLAN"][0].Plan as PlanNode);
        const what = `${analyzed ? "analyzed" : "never analyzed"}, limit ${limit}`;
        expect(
          plan.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "later_jobs"),
          what,
        ).toEqual([]);
        // The one sort allowed is of the claimed rows (CTE `claimed`, at most `limit`).
        for (const sort of plan.filter((n) => n["Node Type"] === "Sort")) {
          expect(
            nodes(sort).filter((n) => n["Relation Name"] === "later_jobs"),
            `${what}: a Sort over the jobs table`,
          ).toEqual([]);
        }
        const ready = plan.filter((n) => n["Index Name"] === "later_jobs_ready" && (n["Index Cond"] ?? "").includes("run_at <="));
        expect(ready.length, what).toBeGreaterThan(0);
        expect(ready[0]!["Index Cond"], what).toContain("priority =");
      }
    }
  });
});

describe("X1 claim plan on SQLite", () => {
  it("the claim and the next-run-at probe use later_jobs_ready with no TEMP B-TREE", async () => {
    const entry = BACKENDS.find((b) => b.name === "sqlite")!;
    await withDatabase(entry, async (db) => {
      const backend = db.backend();
      await prepareBackend(backend, true);
      try {
        const now = Date.now();
        await fill(backend, now);
        // Short: the probe runs too.
        const claimed = await backend.jobs.claimReady({ owner: "w", limit: READY + 10, now, leaseExpiresAt: now + 60_000, jobTypes: ["work"] });
        expect(claimed.jobs).toHaveLength(READY);
        // The statements the backend prepared, as it ran them.
        const texts = [...(backend.jobs as unknown as { conn(): { statements: Map<string, unknown> } }).conn().statements.keys()];
        const claim = texts.filter((t) => t.includes("SET stage = 'running'") && t.includes("priority IN (SELECT p FROM prio"));
        const probe = texts.filter((t) => t.includes("WITH RECURSIVE prio") && !t.includes("SET stage = 'running'"));
        expect(claim).toHaveLength(1);
        expect(probe.length).toBeGreaterThanOrEqual(1);
        const reader = new Database(db.location, { readonly: true });
        try {
          for (const text of [...claim, ...probe]) {
            const params = zeros(text);
            const plan = (reader.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...params) as { detail: string }[]).map((r) => r.detail);
            expect(
              plan.filter((d) => d.includes("TEMP B-TREE")),
              plan.join("\n"),
            ).toEqual([]);
            expect(
              plan.some((d) => d.includes("later_jobs_ready")),
              plan.join("\n"),
            ).toBe(true);
            expect(
              plan.filter((d) => /^SCAN later_jobs\b|^SCAN w\b/.test(d)),
              plan.join("\n"),
            ).toEqual([]);
          }
        } finally {
          reader.close();
        }
      } finally {
        await backend.close();
      }
    });
  });
  it("every statement that reads the ready jobs repeats the index's stage term and reads later_jobs_ready, never the table", async () => {
    const entry = BACKENDS.find((b) => b.name === "sqlite")!;
    await withDatabase(entry, async (db) => {
      const backend = db.backend();
      await prepareBackend(backend, true);
      try {
        const now = Date.now();
        await fill(backend, now);
        // Every reader of the ready jobs: the claim and its probes, the autoscaler's count, the oldest ready
        // job, the unhandled types' window, the limits' read.
        await backend.jobs.claimReady({ owner: "w", limit: 10, now, leaseExpiresAt: now + 60_000, jobTypes: ["work"] });
        await backend.jobs.countReady({ jobTypes: ["work"], now });
        await backend.inspect.oldestReadyAt({ nowMs: now });
        await backend.inspect.unhandledJobTypes({ nowMs: now });
        await backend.jobs.limitsSet({ jobTypes: ["work"], limits: [{ jobType: "work", concurrency: 5, rateLimit: null, groupConcurrency: null }], now });
        await backend.inspect.limitList({ nowMs: now });
        const texts = [...(backend.jobs as unknown as { conn(): { statements: Map<string, unknown> } }).conn().statements.keys()];
        // SQLite matches a partial index by the predicate's terms as written: the disjunction, never an IN list of the same stages.
        expect(texts.filter((t) => /stage IN \('enqueued', 'delayed', 'requeued'\)/i.test(t))).toEqual([]);
        const readers = texts.filter((t) => t.includes("stage = 'enqueued' OR stage = 'delayed' OR stage = 'requeued'"));
        expect(readers.length).toBeGreaterThanOrEqual(4);
        const reader = new Database(db.location, { readonly: true });
        try {
          for (const text of readers) {
            const params = zeros(text);
            const plan = (reader.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...params) as { detail: string }[]).map((r) => r.detail);
            expect(
              plan.some((d) => d.includes("later_jobs_ready")),
              `${text}\n${plan.join("\n")}`,
            ).toBe(true);
            expect(
              plan.filter((d) => /^SCAN (later_jobs|w|j)\b(?! USING)/.test(d)),
              `${text}\n${plan.join("\n")}`,
            ).toEqual([]);
          }
        } finally {
          reader.close();
        }
      } finally {
        await backend.close();
      }
    });
  });
  it("new rows lie by priority: each priority's rows together in rowid order, in insertion order, whichever insert wrote them", async () => {
    const entry = BACKENDS.find((b) => b.name === "sqlite")!;
    await withDatabase(entry, async (db) => {
      const backend = db.backend();
      await prepareBackend(backend, true);
      const app = db.appDatabase<Record<string, never>>();
      try {
        const now = Date.now();
        const job = (i: number, priority: number) => ({
          id: newJobId(now),
          jobType: "work",
          payload: JSON.stringify({ i }),
          runAt: now,
          retryPolicy: null,
          priority,
        });
        const order: { id: string; priority: number }[] = [];
        const note = (j: { id: string; priority?: number }) => order.push({ id: j.id, priority: j.priority ?? 0 });
        // Two batch inserts of mixed priorities (the extremes included), a unique insert, an insert into a caller's transaction.
        for (const batch of [0, 1]) {
          const jobs = [-32768, 5, 0, 32767, -3, 5, 0].map((p, i) => job(batch * 10 + i, p));
          await backend.jobs.insertMany({ jobs, now });
          jobs.forEach(note);
        }
        // Rows of the table's top range are numbered by SQLite itself; a continuation (written at once, not in the
        // multi-row insert) among them.
        const parent = order[0]!.id;
        const mixed = [job(30, 32767), { ...job(31, 32767), parentId: parent }, job(32, 32767), job(33, 0), { ...job(34, 0), parentId: parent }];
        await backend.jobs.insertMany({ jobs: mixed, now });
        mixed.forEach(note);
        // Batches of one job (their insert finds the rowid itself): a middle range, then the top one.
        for (const one of [job(40, -3), job(41, 32767), job(42, 0)]) {
          await backend.jobs.insertMany({ jobs: [one], now });
          note(one);
        }
        const unique = job(20, 5);
        await backend.jobs.insertUniqueMany({ inserts: [{ job: unique, uniqueKey: "k", uniqueMode: "keep", now }] });
        note(unique);
        const inTransaction = [job(21, -3), job(22, 32767), job(23, -3)];
        const trx = await app.startTransaction().execute();
        await backend.jobs.insertMany({ jobs: inTransaction, now, transaction: trx as never });
        await trx.commit().execute();
        inTransaction.forEach(note);
        const reader = new Database(db.location, { readonly: true });
        try {
          const stored = (reader.prepare("SELECT id, priority FROM later_jobs ORDER BY rowid").all() as { id: string; priority: number }[]).map((r) => ({
            id: r.id,
            priority: Number(r.priority),
          }));
          // By priority's range (0 first, then 1..32767, then -32768..-1), then in the order written (a stable sort).
          const range = (p: number) => (p + 65536) & 65535;
          const expected = [...order].sort((a, b) => range(a.priority) - range(b.priority));
          expect(stored).toEqual(expected);
        } finally {
          reader.close();
        }
      } finally {
        await app.destroy();
        await backend.close();
      }
    });
  });
});
