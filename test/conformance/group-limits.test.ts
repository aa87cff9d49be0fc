/**
 * X9 groups on both backends: `groupConcurrency` never exceeded per group
 * across two servers of one database (the jobs with no group are one group
 * of their own), fairness (one group's backlog does not delay another
 * group's first jobs: the claim deals its slots round-robin over the ready
 * groups), and bad input (a group that is not a string of 1 to 200
 * characters, a bad `groupConcurrency`). Waits are on conditions with
 * deadlines; nothing is timed.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { JobPublisher } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";
import { codeOf, useHarness, waitFor } from "./harness.js";

/** A publisher of `jobType` with no server of its own on `backend`. */
function publisherOn(backend: Backend, jobType: string): JobPublisher {
  return new JobPublisher({
    backend,
    clock: { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) },
    defaultRetryPolicy: null,
    encoders: new Map([[jobType, (p: unknown) => JSON.stringify(p)]]),
    topics: new Map(),
    retentionMs: 60_000,
    onCommitted: () => {},
  });
}

/** Lets other work run: a job that takes a few turns of the event loop, so attempts overlap when the limits let them. */
const work = async (turns = 5) => {
  for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
};

describe.each(BACKENDS)("per group limits (X9) on $name", (entry) => {
  const harness = useHarness(entry);

  it("X9: groupConcurrency 2 is never exceeded per group by two servers of one database; ungrouped jobs are one group; every job runs", async () => {
    const h = harness();
    const running = new Map<string, number>();
    const most = new Map<string, number>();
    let done = 0;
    const handlers = {
      tenant: {
        groupConcurrency: 2,
        handle: async (_ctx: unknown, payload: unknown) => {
          const g = (payload as { g: string }).g;
          const now = (running.get(g) ?? 0) + 1;
          running.set(g, now);
          most.set(g, Math.max(most.get(g) ?? 0, now));
          await work();
          running.set(g, running.get(g)! - 1);
          done++;
        },
      },
    };
    const a = await h.start({ workerCount: 6, handlers });
    await h.start({ workerCount: 6, handlers });
    for (const g of ["a", "b", "c"]) {
      await a.publisher.enqueueMany(
        "tenant",
        Array.from({ length: 12 }, () => ({ g })),
        { group: g },
      );
    }
    await a.publisher.enqueueMany(
      "tenant",
      Array.from({ length: 12 }, () => ({ g: "none" })),
    );
    await waitFor(() => done === 48, "every job done", 30_000);
    for (const g of ["a", "b", "c", "none"]) {
      expect(most.get(g)).toBeGreaterThan(0);
      expect(most.get(g)).toBeLessThanOrEqual(2);
    }
  });

  // A holds at most 2 of the 4 workers (its claimed jobs, buffered ones included, count as running), so the
  // other two start B's jobs as they arrive; a claim in (priority, run_at) order would start B after all 20,000
  // A jobs. The round-robin order of the claim itself, with the group limit not reached, is checked at the
  // seam (test/seam/job-store.test.ts): here a server's buffer of claimed A jobs would start first.
  it("X9 fairness: group A enqueues 20,000 jobs, then group B 10; every B job starts before A's next 200 do", async () => {
    const h = harness();
    const starts: string[] = [];
    const server = await h.start({
      workerCount: 4,
      handlers: {
        tenant: {
          groupConcurrency: 2,
          handle: async (_ctx: unknown, payload: unknown) => {
            const g = (payload as { g: string }).g;
            starts.push(g);
            await work();
          },
        },
      },
    });
    await server.publisher.enqueueMany(
      "tenant",
      Array.from({ length: 20_000 }, () => ({ g: "A" })),
      { group: "A" },
    );
    // A is running (its backlog waits in storage) before B arrives.
    await waitFor(() => starts.length >= 10, "group A running");
    const before = starts.length;
    await server.publisher.enqueueMany(
      "tenant",
      Array.from({ length: 10 }, () => ({ g: "B" })),
      { group: "B" },
    );
    // Stops once every B job has started: the rest of A's backlog is not waited for.
    await waitFor(() => starts.filter((g) => g === "B").length === 10, "every B job started", 30_000);
    const after = starts.slice(before);
    const lastB = after.lastIndexOf("B");
    const aBeforeLastB = after.slice(0, lastB).filter((g) => g === "A").length;
    expect(after.filter((g) => g === "B")).toHaveLength(10);
    expect(aBeforeLastB).toBeLessThan(200);
  });

  // The type's jobs with no group are one group of the round-robin: it gets a job once a lap over the ready groups, as
  // any group does, and within it the lowest priority number first (X1). Stored as the group '' when the type's group
  // limit was stored before them, or moved there when a server stores it after them. Before, the walk never reached
  // them while the claim's slots went to other groups (600 groups: more than a claim's slots on either backend), and
  // they started after all 12,000 grouped jobs.
  it.each([
    ["enqueued after the limit was stored", false],
    ["enqueued before any server stored the limit", true],
  ])("X9 fairness: the jobs with no group take their turn once a lap behind 600 groups' backlog of 20 each, by priority (%s)", async (_name, before) => {
    const h = harness();
    const starts: { g: string; p: number }[] = [];
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const handlers = {
      tenant: {
        groupConcurrency: 100,
        handle: async (_ctx: unknown, payload: unknown) => {
          starts.push(payload as { g: string; p: number });
          await gate;
        },
      },
    };
    // Before: a publisher with no server (nothing stored the limit yet), on the database a server then starts on.
    const server = before ? null : await h.start({ workerCount: 4, handlers });
    const other = before ? await h.start({ handlers: { other: { handle: () => undefined } } }) : null;
    const producer = server?.publisher ?? publisherOn(other!.backend, "tenant");
    const groups = 600;
    for (let g = 0; g < groups; g++) {
      await producer.enqueueMany(
        "tenant",
        Array.from({ length: 20 }, () => ({ g: `G${String(g).padStart(3, "0")}`, p: 0 })),
        { group: `G${String(g).padStart(3, "0")}` },
      );
    }
    const priorities = [5, -3, 0, 2, -1];
    const ids: string[] = [];
    for (const p of priorities) ids.push(await producer.enqueue("tenant", { g: "none", p }, { priority: p }));
    const limited = server ?? (await h.start({ workerCount: 4, handlers }));
    open();
    await waitFor(() => starts.filter((s) => s.g === "none").length === priorities.length, "every ungrouped job started", 60_000);
    const at = starts.flatMap((s, i) => (s.g === "none" ? [i] : []));
    expect(starts.filter((s) => s.g === "none").map((s) => s.p)).toEqual([-3, -1, 0, 2, 5]);
    // One a lap: the first within the first lap or two, the fifth within about five, long before the 12,000 grouped
    // jobs are done.
    expect(at[0]).toBeLessThan(3 * groups);
    expect(at.at(-1)).toBeLessThan(8 * groups);
    // Shown as no group, and not listed among the busiest groups.
    const stored = await limited.backend.inspect.jobGet({ id: ids[0]! });
    expect(stored?.group).toBeNull();
    const busiest = await limited.backend.inspect.groupList({ jobType: "tenant", nowMs: Date.now(), limit: 1_000 });
    expect(busiest.groups.some((g) => g.group === "" || g.group === null)).toBe(false);
  });

  it("X9: every insert stores a job with no group of a group-limited type in its ungrouped group (''), read as no group; other types and grouped jobs keep theirs", async () => {
    const h = harness();
    const server = await h.start({
      workerCount: 1,
      handlers: { tenant: { groupConcurrency: 2, handle: () => undefined }, other: { handle: () => undefined } },
    });
    const p = server.publisher;
    const app = h.db.appDatabase<Record<string, never>>();
    try {
      const ids = {
        single: await p.enqueue("tenant", {}),
        many: (await p.enqueueMany("tenant", [{}, {}]))[1]!,
        unique: await p.enqueue("tenant", {}, { uniqueKey: "k" }),
        inTransaction: await app.transaction().execute((trx) => p.enqueueIn(trx, "tenant", {})),
        grouped: await p.enqueue("tenant", {}, { group: "g" }),
        otherType: await p.enqueue("other", {}),
      };
      const rows = await sql<{ id: string; group_key: string | null }>`SELECT id, group_key FROM later_jobs`.execute(app);
      const stored = new Map(rows.rows.map((r) => [r.id, r.group_key]));
      expect(Object.fromEntries(Object.entries(ids).map(([k, id]) => [k, stored.get(id)]))).toEqual({
        single: "",
        many: "",
        unique: "",
        inTransaction: "",
        grouped: "g",
        otherType: null,
      });
      expect((await server.backend.inspect.jobGet({ id: ids.single }))?.group).toBeNull();
      expect((await server.backend.inspect.jobGet({ id: ids.grouped }))?.group).toBe("g");
    } finally {
      await app.destroy();
    }
  });

  it("X9 bad input: a group that is empty, over 200 characters or not a string is INVALID_ARGUMENT naming group, nothing written", async () => {
    const h = harness();
    const server = await h.start({ handlers: { t: { groupConcurrency: 1, handle: () => undefined } } });
    for (const group of ["", "x".repeat(201), 7, null]) {
      const enqueue = server.publisher.enqueue("t", {}, { group } as never);
      expect(await codeOf(enqueue)).toBe("INVALID_ARGUMENT");
      await expect(enqueue).rejects.toThrow("group");
      expect(await codeOf(server.publisher.enqueueMany("t", [{}, {}], { group } as never))).toBe("INVALID_ARGUMENT");
    }
    expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
    // 200 characters is a group.
    await server.publisher.enqueue("t", {}, { group: "x".repeat(200) });
    expect(await server.backend.inspect.jobList({ limit: 10 })).toHaveLength(1);
  });

  it("X9 bad input: a groupConcurrency of 0, negative or non-integer refuses the start (INVALID_ARGUMENT naming the type and field), storing nothing", async () => {
    const h = harness();
    for (const groupConcurrency of [0, -1, 1.5, "2"]) {
      const start = h.start({ handlers: { t: { groupConcurrency, handle: () => undefined } as never } });
      expect(await codeOf(start)).toBe("INVALID_ARGUMENT");
      await expect(start).rejects.toThrow("handlers.t.groupConcurrency");
    }
    // Nothing was stored: a server with a limit for the type finds none before it (no LIMITS_CHANGED warning).
    await h.start({ handlers: { t: { groupConcurrency: 1, handle: () => undefined } } });
    expect(h.events.filter((e) => e.type === "warning" && e.code === "LIMITS_CHANGED")).toEqual([]);
  });
});
