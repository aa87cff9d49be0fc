/**
 * X5 fan-in continuations on both backends: one child of several parents
 * runs once every parent succeeded (never earlier), fails with the reason of
 * a parent that fails for good, and is refused, with nothing written, for bad
 * parent lists.
 */
import { describe, expect, it } from "vitest";
import { PermanentJobError, topic } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { deferred, refusal, settled, useHarness, waitFor } from "./harness.js";

type Gate = ReturnType<typeof deferred<void>>;

describe.each(BACKENDS)("fan-in continuations (X5) on $name", (entry) => {
  const harness = useHarness(entry);
  const ORDERS = topic("orders", 4);

  /** A server whose `gate` jobs wait for the test to open their gate (by name) and whose `join` jobs record whether every parent had succeeded. */
  async function gatedServer(workerCount = 4) {
    const h = harness();
    const gates = new Map<string, Gate>();
    const gate = (name: string) => {
      let g = gates.get(name);
      if (!g) gates.set(name, (g = deferred<void>()));
      return g;
    };
    const early: string[] = [];
    const server = await h.start({
      workerCount,
      topics: [ORDERS],
      handlers: {
        gate: {
          handle: async (_ctx, p: { name: string; fail?: boolean }) => {
            await gate(p.name).promise;
            if (p.fail) throw new PermanentJobError(`${p.name} broke`);
          },
        },
        join: {
          handle: async (ctx, p: { parents: string[] }) => {
            for (const id of p.parents) {
              const parent = await server.backend.inspect.jobGet({ id });
              if (parent?.stage !== "success") early.push(`${ctx.jobId} ran before ${id} succeeded (${parent?.stage})`);
            }
          },
        },
      },
    });
    const stageOf = async (id: string) => (await server.backend.inspect.jobGet({ id }))?.stage;
    return { h, server, gate, early, stageOf };
  }

  for (const order of [
    [0, 1, 2],
    [2, 0, 1],
    [1, 2, 0],
  ]) {
    it(`X5: the child runs only after all three parents succeed, parents finishing one batch at a time in order ${order.join(",")}`, async () => {
      const { server, gate, early, stageOf } = await gatedServer();
      const parents: string[] = [];
      for (let i = 0; i < 3; i++) parents.push(await server.publisher.enqueue("gate", { name: `p${i}` }));
      const child = await server.publisher.enqueue("join", { parents }, { parentId: parents });
      expect(await stageOf(child)).toBe("waiting");
      for (const [k, i] of order.entries()) {
        gate(`p${i}`).resolve();
        await waitFor(async () => (await stageOf(parents[i]!)) === "success", `p${i} to succeed`);
        if (k < 2) expect(await stageOf(child)).toBe("waiting");
      }
      const done = await settled(() => server.backend.inspect.jobGet({ id: child }), "child");
      expect(done.stage).toBe("success");
      expect(early).toEqual([]);
      expect(done.stages.map((s) => s.stage)).toEqual(["waiting", "enqueued", "running", "success"]);
    });
  }

  it("X5: parents finishing in one batch release the child once", async () => {
    const { server, gate, early, stageOf } = await gatedServer(8);
    const parents: string[] = [];
    for (let i = 0; i < 6; i++) parents.push(await server.publisher.enqueue("gate", { name: "all" }));
    const child = await server.publisher.enqueue("join", { parents }, { parentId: parents });
    await waitFor(async () => (await Promise.all(parents.map(stageOf))).every((s) => s === "running"), "parents running");
    gate("all").resolve();
    const done = await settled(() => server.backend.inspect.jobGet({ id: child }), "child");
    expect(done.stage).toBe("success");
    expect(done.attempt).toBe(1);
    expect(early).toEqual([]);
  });

  it("X5: the typed-handle form and repeated ids (folded) give one child; a single distinct id is a plain continuation", async () => {
    const { server, gate, stageOf } = await gatedServer();
    const a = await server.publisher.enqueue("gate", { name: "a" });
    const b = await server.publisher.enqueue("gate", { name: "b" });
    const child = await server.publisher.enqueue("join", { parents: [a, b] }, { parentId: [b, a, b, a] });
    const single = await server.publisher.enqueue("join", { parents: [a] }, { parentId: [a, a] });
    expect((await server.backend.inspect.jobGet({ id: single }))?.parentId).toBe(a);
    gate("a").resolve();
    await waitFor(async () => (await stageOf(single)) === "success", "single-parent child");
    expect(await stageOf(child)).toBe("waiting");
    gate("b").resolve();
    expect((await settled(() => server.backend.inspect.jobGet({ id: child }), "child")).stage).toBe("success");
  });

  it("X5: a parent failing for good fails the child with that parent's reason, and the child's own continuation too", async () => {
    const { server, gate, stageOf } = await gatedServer();
    const ok = await server.publisher.enqueue("gate", { name: "ok" });
    const bad = await server.publisher.enqueue("gate", { name: "bad", fail: true });
    const late = await server.publisher.enqueue("gate", { name: "late" });
    const child = await server.publisher.enqueue("join", { parents: [ok, bad, late] }, { parentId: [ok, bad, late] });
    const grandchild = await server.publisher.enqueue("join", { parents: [child] }, { parentId: child });
    gate("ok").resolve();
    gate("bad").resolve();
    const failed = await settled(() => server.backend.inspect.jobGet({ id: child }), "child");
    expect(failed.stage).toBe("failed");
    expect(failed.attempt).toBe(0);
    expect(failed.lastError).toBe(`parent job ${bad} failed: bad broke`);
    expect(failed.stages.map((s) => s.stage)).toEqual(["waiting", "failed"]);
    expect(await stageOf(grandchild)).toBe("failed");
    // The last parent's success later changes nothing.
    gate("late").resolve();
    await waitFor(async () => (await stageOf(late)) === "success", "late parent");
    expect((await server.backend.inspect.jobGet({ id: child }))?.stage).toBe("failed");
  });

  it("X5: parents in different partitions and one regular parent", async () => {
    const { server, gate, early, stageOf } = await gatedServer();
    const p0 = await server.publisher.enqueueToPartition("gate", { name: "p0" }, { topic: "orders", partition: 0 });
    const p3 = await server.publisher.enqueueToPartition("gate", { name: "p3" }, { topic: "orders", partition: 3 });
    const regular = await server.publisher.enqueue("gate", { name: "r" });
    const child = await server.publisher.enqueue("join", { parents: [p0, p3, regular] }, { parentId: [p0, p3, regular] });
    gate("p3").resolve();
    gate("r").resolve();
    await waitFor(async () => (await stageOf(p3)) === "success" && (await stageOf(regular)) === "success", "two parents");
    expect(await stageOf(child)).toBe("waiting");
    gate("p0").resolve();
    expect((await settled(() => server.backend.inspect.jobGet({ id: child }), "child")).stage).toBe("success");
    expect(early).toEqual([]);
  });

  it("X5: a partitioned fan-in child waits as its partition's head for every parent", async () => {
    const { server, gate, stageOf } = await gatedServer();
    const a = await server.publisher.enqueue("gate", { name: "a" });
    const b = await server.publisher.enqueueToPartition("gate", { name: "b" }, { topic: "orders", partition: 1 });
    const child = await server.publisher.enqueueToPartition("join", { parents: [a, b] }, { topic: "orders", partition: 2 }, { parentId: [a, b] });
    gate("a").resolve();
    await waitFor(async () => (await stageOf(a)) === "success", "a");
    expect(await stageOf(child)).toBe("waiting");
    gate("b").resolve();
    expect((await settled(() => server.backend.inspect.jobGet({ id: child }), "child")).stage).toBe("success");
  });

  it("X5: parents already succeeded or already failed at enqueue decide the child's stage at once", async () => {
    const { server, gate, stageOf } = await gatedServer();
    const a = await server.publisher.enqueue("gate", { name: "a" });
    const b = await server.publisher.enqueue("gate", { name: "b" });
    const bad = await server.publisher.enqueue("gate", { name: "bad", fail: true });
    const pending = await server.publisher.enqueue("gate", { name: "pending" });
    gate("a").resolve();
    gate("b").resolve();
    gate("bad").resolve();
    for (const id of [a, b, bad]) await settled(() => server.backend.inspect.jobGet({ id }));
    // All succeeded: runs at once.
    const now = await server.publisher.enqueue("join", { parents: [a, b] }, { parentId: [a, b] });
    expect((await settled(() => server.backend.inspect.jobGet({ id: now }), "released child")).stage).toBe("success");
    // One succeeded, one pending: waits for the pending one only.
    const half = await server.publisher.enqueue("join", { parents: [a, pending] }, { parentId: [a, pending] });
    expect(await stageOf(half)).toBe("waiting");
    // One failed: stored failed with its reason, never run.
    const doomed = await server.publisher.enqueue("join", { parents: [a, bad, pending] }, { parentId: [a, bad, pending] });
    const failed = await server.backend.inspect.jobGet({ id: doomed });
    expect(failed?.stage).toBe("failed");
    expect(failed?.lastError).toBe(`parent job ${bad} failed: bad broke`);
    expect(failed?.expiresAt).not.toBeNull();
    gate("pending").resolve();
    expect((await settled(() => server.backend.inspect.jobGet({ id: half }), "half child")).stage).toBe("success");
    expect(await stageOf(doomed)).toBe("failed");
  });

  it("X5: a delayed fan-in child runs once its parents succeeded and its time came", async () => {
    const { server, gate, stageOf } = await gatedServer();
    const a = await server.publisher.enqueue("gate", { name: "a" });
    const b = await server.publisher.enqueue("gate", { name: "b" });
    gate("a").resolve();
    gate("b").resolve();
    for (const id of [a, b]) await settled(() => server.backend.inspect.jobGet({ id }));
    const child = await server.publisher.enqueue("join", { parents: [a, b] }, { parentId: [a, b], delayMs: 60_000 });
    expect(await stageOf(child)).toBe("delayed");
  });

  it("X5: bad parent lists are refused naming parentId, unknown parents with PARENT_NOT_FOUND; nothing is written", async () => {
    const { server, stageOf } = await gatedServer();
    const a = await server.publisher.enqueue("gate", { name: "a" });
    await waitFor(async () => (await stageOf(a)) === "running", "a running");
    const before = (await server.backend.inspect.stageCounts()).counts;
    const tooMany = Array.from({ length: 1001 }, () => a);
    for (const parentId of [[], tooMany, [a, 7], [a, ""]]) {
      const error = await refusal(server.publisher.enqueue("join", { parents: [] }, { parentId: parentId as string[] }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toContain("parentId");
    }
    const missing = "01J00000000000000000000000";
    const error = await refusal(server.publisher.enqueue("join", { parents: [] }, { parentId: [a, missing] }));
    expect(error.code).toBe("PARENT_NOT_FOUND");
    expect((error as unknown as { parentId: string }).parentId).toBe(missing);
    expect((await server.backend.inspect.stageCounts()).counts).toEqual(before);
    const listed = await server.backend.inspect.jobList({ limit: 100 });
    expect(listed.map((j) => j.id)).toEqual([a]);
  });

  it("X5/X7: a fan-in child failed by its parent is not retryable; deleting jobs removes a child's edges with it and keeps a child's lookup", async () => {
    const { h, server, gate } = await gatedServer();
    const ok = await server.publisher.enqueue("gate", { name: "ok" });
    const bad = await server.publisher.enqueue("gate", { name: "bad", fail: true });
    const doomed = await server.publisher.enqueue("join", { parents: [ok, bad] }, { parentId: [ok, bad] });
    const fine = await server.publisher.enqueue("join", { parents: [ok] }, { parentId: [ok, ok] });
    gate("ok").resolve();
    gate("bad").resolve();
    expect((await settled(() => server.backend.inspect.jobGet({ id: doomed }), "doomed child")).stage).toBe("failed");
    await settled(() => server.backend.inspect.jobGet({ id: fine }), "single child");
    expect((await refusal(server.publisher.retry(doomed))).code).toBe("JOB_ACTION_REFUSED");
    const app = h.db.appDatabase<{ later_job_parents: { child_id: string } }>();
    try {
      const edges = async () => (await app.selectFrom("later_job_parents").select("child_id").execute()).map((r) => r.child_id);
      expect(await edges()).toEqual([doomed, doomed]);
      // A parent deleted: the child is still read as it was.
      await server.publisher.delete(ok);
      expect((await server.backend.inspect.jobGet({ id: doomed }))?.stage).toBe("failed");
      // The child deleted: its edges go with it.
      await server.publisher.delete(doomed);
      expect(await edges()).toEqual([]);
    } finally {
      await app.destroy();
    }
  });
});
