/**
 * Group commit of plain enqueues (docs/semantics.md J15), on every backend:
 * many callers enqueuing at once are written in a few inserts, each caller
 * gets its own id once its job committed, every job is stored once and runs
 * once, and the stage counters stay equal to the jobs. Jobs that are not
 * plain (a continuation, a partitioned job) and calls inside a caller's
 * transaction are written alone, as before. The batching rules themselves
 * are in test/unit/insert-coalescer.test.ts. Unique enqueues (X2) are
 * written together too, each seeing the ones before it.
 */
import { describe, expect, it } from "vitest";
import { RetryPolicy } from "@later/runtime";
import type { JobInsertManyParams, JobInsertUniqueManyParams } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";
import { afterCall, deferred, useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("J15: enqueues coalesced on $name", (entry) => {
  const harness = useHarness(entry);

  it("200 concurrent enqueues: a few inserts, 200 distinct ids, each job stored once and run once, counters equal", async () => {
    const h = harness();
    const inserts: number[] = [];
    const ran: number[] = [];
    const server = await h.start({
      workerCount: 4,
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: { noop: { handle: async (_ctx, p) => void ran.push((p as { i: number }).i) } },
      wrapBackend: (b) => afterCall(b, "jobs", "insertMany", (_r, [params]) => inserts.push((params as JobInsertManyParams).jobs.length)),
    });
    const ids = await Promise.all(Array.from({ length: 200 }, (_, i) => server.publisher.enqueue("noop", { i })));
    expect(new Set(ids).size).toBe(200);
    expect(inserts.reduce((a, b) => a + b, 0)).toBe(200);
    // The first caller of the tick is written with every other caller of it: far fewer inserts than callers.
    expect(inserts.length).toBeLessThan(20);
    await waitFor(async () => (await server.backend.inspect.stageCounts()).counts.success === 200, "every job to succeed");
    expect([...ran].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    for (const id of [ids[0]!, ids[199]!]) expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("success");
    const { counts } = await server.backend.inspect.stageCounts();
    expect(counts.enqueued ?? 0).toBe(0);
  });

  it("a continuation or a call inside a caller's own batch is written alone; plain enqueues beside it still share", async () => {
    const h = harness();
    const inserts: string[][] = [];
    const release = deferred();
    const server = await h.start({
      workerCount: 1,
      // The parent stays running, so its continuation stays waiting.
      handlers: { noop: { handle: () => release.promise } },
      wrapBackend: (b) => afterCall(b, "jobs", "insertMany", (_r, [params]) => inserts.push((params as JobInsertManyParams).jobs.map((j) => j.id))),
    });
    const parent = await server.publisher.enqueue("noop", {});
    inserts.length = 0;
    const [child, a, b] = await Promise.all([
      server.publisher.enqueue("noop", {}, { parentId: parent }),
      server.publisher.enqueue("noop", {}),
      server.publisher.enqueue("noop", {}),
    ]);
    expect(inserts).toContainEqual([child]);
    expect(inserts).toContainEqual([a, b]);
    expect((await server.backend.inspect.jobGet({ id: child! }))?.stage).toBe("waiting");
    release.resolve();
  });

  it("X2: 60 concurrent unique enqueues over 20 keys: a few transactions, one job per key, each caller told what happened to it", async () => {
    const h = harness();
    const batches: number[] = [];
    const server = await h.start({
      workerCount: 1,
      handlers: { noop: { handle: () => undefined } },
      // Paused (X4): nothing starts, so every key stays held by its first job while the others arrive.
      wrapBackend: (b) => afterCall(b, "jobs", "insertUniqueMany", (_r, [params]) => batches.push((params as JobInsertUniqueManyParams).inserts.length)),
    });
    await server.publisher.pause({ jobType: "noop" });
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => server.publisher.enqueueUnique("noop", { i }, { uniqueKey: `k${i % 20}`, uniqueMode: "replace" })),
    );
    expect(batches.reduce((a, b) => a + b, 0)).toBe(60);
    expect(batches.length).toBeLessThan(10);
    // Per key, in call order: the first inserted, the next two replaced its payload; the same job stands for all three.
    for (let k = 0; k < 20; k++) {
      const own = [results[k]!, results[k + 20]!, results[k + 40]!];
      expect(own.map((r) => r.outcome)).toEqual(["inserted", "replaced", "replaced"]);
      expect(new Set(own.map((r) => r.id)).size).toBe(1);
      expect((await server.backend.inspect.jobGet({ id: own[0]!.id }))?.payload).toBe(JSON.stringify({ i: k + 40 }));
    }
    expect((await server.backend.inspect.stageCounts()).counts.enqueued).toBe(20);
  });
});
