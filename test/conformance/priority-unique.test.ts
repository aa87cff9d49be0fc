/**
 * X1 priority and X2 unique jobs through the public API, on both backends:
 * a worker takes the lowest priority number first and, within a priority,
 * the oldest; `uniqueKey` with each `uniqueMode` (keep, replace,
 * afterActive), the key freed once its job finished; a burst of
 * afterActive triggers during a run gives exactly one more run, with the
 * last payload; bad options are `INVALID_ARGUMENT` naming the field, with
 * nothing written.
 */
import { describe, expect, it } from "vitest";
import { JobPublisher, type JobContext } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";
import { deferred, refusal, useHarness, waitFor } from "./harness.js";

/** A publisher with no server on `backend` (nothing claims), whose clock moves 1 ms per read: every job is older than the next. */
function quietPublisher(backend: Backend, start = Date.now()) {
  let t = start;
  return new JobPublisher({
    backend,
    clock: { now: () => t++, sleep: (ms) => new Promise((r) => setTimeout(r, ms)) },
    defaultRetryPolicy: null,
    encoders: new Map([
      ["work", (p: unknown) => JSON.stringify(p)],
      ["other", (p: unknown) => JSON.stringify(p)],
    ]),
    topics: new Map([["orders", 2]]),
    retentionMs: 60_000,
    onCommitted: () => {},
  });
}

async function jobCount(backend: Backend): Promise<number> {
  const { counts } = await backend.inspect.stageCounts();
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

describe.each(BACKENDS)("priority and unique jobs on $name", (entry) => {
  const harness = useHarness(entry);

  it("X1: a worker takes the lowest priority number first, and within a priority the oldest; the priority is stored", async () => {
    const h = harness();
    const order: number[] = [];
    // A first server only to create the database; its handler type is not the one enqueued below.
    const first = await h.start({ workerCount: 1, handlers: { unrelated: { handle: () => undefined } } });
    const backend = h.db.backend();
    await backend.open();
    try {
      const p = quietPublisher(backend);
      const spec = [5, 0, -1, 5, 0, -32768, 32767, -1, 0];
      const ids = [];
      for (const [i, priority] of spec.entries()) ids.push(await p.enqueue("work", { i }, priority === 0 && i === 1 ? {} : { priority }));
      expect((await backend.inspect.jobGet({ id: ids[5]! }))?.priority).toBe(-32768);
      expect((await backend.inspect.jobGet({ id: ids[1]! }))?.priority).toBe(0);
      await first.shutdown();
      const server = await h.start({
        workerCount: 1,
        handlers: { work: { handle: (_ctx: JobContext<unknown>, payload) => void order.push((payload as { i: number }).i) } },
      });
      await waitFor(() => order.length === spec.length, "every job run");
      const expected = spec
        .map((priority, i) => ({ priority, i }))
        .sort((a, b) => a.priority - b.priority || a.i - b.i)
        .map((x) => x.i);
      expect(order).toEqual(expected);
      await server.shutdown();
    } finally {
      await backend.close();
    }
  });

  it("X2: enqueueUnique keep / replace / afterActive outcomes; enqueue resolves to the standing id; the key is free after the finish", async () => {
    const h = harness();
    const gate = deferred();
    const runs: unknown[] = [];
    const started = new Set<string>();
    const server = await h.start({
      workerCount: 2,
      handlers: {
        work: {
          handle: async (ctx: JobContext<unknown>, payload) => {
            const { n } = payload as { n: number };
            runs.push(n);
            started.add(ctx.jobId);
            if (n === 1) await gate.promise;
          },
        },
      },
    });
    const p = server.publisher;
    // keep: delayed so no worker takes it while the test looks.
    const a = await p.enqueueUnique("work", { n: 0 }, { uniqueKey: "a", delayMs: 3_600_000 });
    expect(a.outcome).toBe("inserted");
    expect(await p.enqueueUnique("work", { n: 9 }, { uniqueKey: "a", delayMs: 3_600_000 })).toEqual({ id: a.id, outcome: "existing" });
    expect(await p.enqueue("work", { n: 9 }, { uniqueKey: "a" })).toBe(a.id);
    expect((await server.backend.inspect.jobGet({ id: a.id }))?.payload).toBe('{"n":0}');
    // replace (debounce): the waiting job takes the payload and the new run time: now, so it runs.
    expect(await p.enqueueUnique("work", { n: 2 }, { uniqueKey: "a", uniqueMode: "replace" })).toEqual({ id: a.id, outcome: "replaced" });
    await waitFor(() => runs.includes(2), "the replaced job run with its new payload");
    expect(runs).toEqual([2]);
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: a.id }))?.stage === "success", "the job finished");
    expect(await server.backend.inspect.jobGet({ id: a.id })).toMatchObject({ uniqueKey: "a", uniqueSlot: null });
    // Finished: the key is free.
    const b = await p.enqueueUnique("work", { n: 1 }, { uniqueKey: "a", uniqueMode: "afterActive" });
    expect(b.outcome).toBe("inserted");
    await waitFor(() => started.has(b.id), "b running");
    // While b runs: keep finds it, afterActive keeps one more after it.
    expect(await p.enqueueUnique("work", { n: 3 }, { uniqueKey: "a" })).toEqual({ id: b.id, outcome: "existing" });
    const c = await p.enqueueUnique("work", { n: 4 }, { uniqueKey: "a", uniqueMode: "afterActive" });
    expect(c.outcome).toBe("inserted");
    gate.resolve();
    await waitFor(() => started.has(c.id), "the kept job run after b");
    expect(runs).toEqual([2, 1, 4]);
  });

  it("X2 afterActive: 100 triggers while the job runs give exactly one more run afterwards, with the last payload", async () => {
    const h = harness();
    const gate = deferred();
    const runs: number[] = [];
    const server = await h.start({
      workerCount: 4,
      handlers: {
        work: {
          handle: async (_ctx: JobContext<unknown>, payload) => {
            const { n } = payload as { n: number };
            runs.push(n);
            if (n === -1) await gate.promise;
          },
        },
      },
    });
    const p = server.publisher;
    const first = await p.enqueueUnique("work", { n: -1 }, { uniqueKey: "sync", uniqueMode: "afterActive" });
    await waitFor(() => runs.length === 1, "the first run started");
    const outcomes: string[] = [];
    for (let n = 0; n < 100; n++) outcomes.push((await p.enqueueUnique("work", { n }, { uniqueKey: "sync", uniqueMode: "afterActive" })).outcome);
    expect(outcomes[0]).toBe("inserted");
    expect(new Set(outcomes.slice(1))).toEqual(new Set(["replaced"]));
    expect(runs).toEqual([-1]);
    gate.resolve();
    await waitFor(() => runs.length === 2, "the one run after");
    await waitFor(async () => (await server.backend.inspect.stageCounts()).counts.success === 2, "both finished");
    expect(runs).toEqual([-1, 99]);
    expect((await server.backend.inspect.jobGet({ id: first.id }))?.stage).toBe("success");
  });

  it("X1: the dashboard's oldest ready job is the oldest due one whatever its priority (each priority's first due entry)", async () => {
    const h = harness();
    const server = await h.start({ workerCount: 1, handlers: { unrelated: { handle: () => undefined } } });
    const backend = h.db.backend();
    await backend.open();
    try {
      const start = Date.now();
      const p = quietPublisher(backend, start);
      expect(await backend.inspect.oldestReadyAt({ nowMs: start + 1_000 })).toBeNull();
      await p.enqueue("work", {}, { priority: 5 }); // run_at start
      await p.enqueue("work", {}, { priority: -1 }); // start + 1
      await p.enqueue("work", {}, { priority: -3, delayMs: 60_000 }); // not due
      expect(await backend.inspect.oldestReadyAt({ nowMs: start + 1_000 })).toBe(start);
      expect(await backend.inspect.oldestReadyAt({ nowMs: start + 120_000 })).toBe(start);
    } finally {
      await backend.close();
      await server.shutdown();
    }
  });

  it("X1: enqueueIn stores the priority in the application's transaction; a uniqueKey there is refused", async () => {
    const h = harness();
    const server = await h.start({ workerCount: 1, handlers: { unrelated: { handle: () => undefined } } });
    const backend = h.db.backend();
    await backend.open();
    const app = h.db.appDatabase<Record<string, never>>();
    try {
      const p = quietPublisher(backend);
      const id = await app.transaction().execute((trx) => p.enqueueIn(trx as never, "work", {}, { priority: 9 }));
      expect((await backend.inspect.jobGet({ id }))?.priority).toBe(9);
      const refused = await app.transaction().execute((trx) => refusal(p.enqueueIn(trx as never, "work", {}, { uniqueKey: "k" })));
      expect([refused.code, refused.message.includes("uniqueKey")]).toEqual(["INVALID_ARGUMENT", true]);
    } finally {
      await app.destroy();
      await backend.close();
      await server.shutdown();
    }
  });

  it("X1/X2 bad input: INVALID_ARGUMENT naming the field, nothing written", async () => {
    const h = harness();
    const server = await h.start({ workerCount: 1, handlers: { unrelated: { handle: () => undefined } } });
    const backend = h.db.backend();
    await backend.open();
    try {
      const p = quietPublisher(backend);
      const bad: [unknown, string][] = [
        [{ priority: 1.5 }, "priority"],
        [{ priority: "1" }, "priority"],
        [{ priority: 32768 }, "priority"],
        [{ priority: -32769 }, "priority"],
        [{ priority: Number.NaN }, "priority"],
        [{ uniqueKey: "" }, "uniqueKey"],
        [{ uniqueKey: "x".repeat(201) }, "uniqueKey"],
        [{ uniqueKey: 7 }, "uniqueKey"],
        [{ uniqueKey: "k", uniqueMode: "debounce" }, "uniqueMode"],
        [{ uniqueMode: "keep" }, "uniqueMode"],
        [{ uniqueKey: "k", parentId: "01j0000000000000000000000" }, "uniqueKey"],
      ];
      for (const [options, field] of bad) {
        const e = await refusal(p.enqueue("work", {}, options as never));
        expect(e.code, JSON.stringify(options)).toBe("INVALID_ARGUMENT");
        expect(e.message, JSON.stringify(options)).toContain(field);
      }
      expect((await refusal(p.enqueueUnique("work", {}, {}))).message).toContain("uniqueKey");
      expect((await refusal(p.enqueueMany("work", [{}, {}], { uniqueKey: "k" }))).message).toContain("uniqueKey");
      // Partitions keep strict sequence order: a priority (or a key) there is refused, not ignored.
      const toPartition = await refusal(p.enqueueToPartition("work", {}, { topic: "orders", partition: 0 }, { priority: 1 }));
      expect([toPartition.code, toPartition.message.includes("priority")]).toEqual(["INVALID_ARGUMENT", true]);
      expect((await refusal(p.enqueueToPartition("work", {}, { topic: "orders", partition: 0 }, { uniqueKey: "k" }))).message).toContain("uniqueKey");
      expect(await jobCount(backend)).toBe(0);
      // The bounds themselves are accepted.
      await p.enqueue("work", {}, { priority: -32768 });
      await p.enqueue("work", {}, { priority: 32767, uniqueKey: "x".repeat(200) });
      expect(await jobCount(backend)).toBe(2);
    } finally {
      await backend.close();
      await server.shutdown();
    }
  });
});
