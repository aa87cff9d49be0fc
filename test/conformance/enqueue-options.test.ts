// The one options form of every enqueue method ({ delayMs | runAt, parentId }): a delayed continuation
// keeps its delay when its parent finishes (plain and partitioned), and bad options write nothing.
import { describe, expect, it } from "vitest";
import { ENQUEUE_OPTION_KEYS, topic } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { deferred, useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("enqueue options on $name", (entry) => {
  const harness = useHarness(entry);

  it("a delayed continuation released by its parent's success waits for its own time, then runs", async () => {
    const h = harness();
    const clock = new ManualClock();
    const gate = deferred();
    const started: number[] = [];
    const server = await h.start({
      clock,
      workerCount: 2,
      handlers: { parent: { handle: () => gate.promise }, child: { handle: () => void started.push(clock.now()) } },
    });
    const t0 = clock.now();
    const parent = await server.publisher.enqueue("parent", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: parent }))?.stage === "running", "the parent to run");
    const child = await server.publisher.enqueue("child", {}, { parentId: parent, delayMs: 60_000 });
    expect((await server.backend.inspect.jobGet({ id: child }))?.stage).toBe("waiting");
    gate.resolve();
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: parent }))?.stage === "success", "the parent to succeed");
    // Released in the parent's own commit: still delayed, not runnable.
    const released = await server.backend.inspect.jobGet({ id: child });
    expect(released?.stage).toBe("delayed");
    expect(released?.stages.map((s) => s.stage)).toEqual(["waiting", "delayed"]);
    // The stage counters moved with it: waiting → delayed.
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ waiting: 0, delayed: 1, enqueued: 0, success: 1 });
    clock.advance(59_999);
    expect((await server.backend.inspect.jobGet({ id: child }))?.stage).toBe("delayed");
    clock.advance(1);
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: child }))?.stage === "success", "the child after its delay");
    expect(started[0]).toBeGreaterThanOrEqual(t0 + 60_000);
  });

  it("a delayed continuation of a parent that already succeeded is delayed, not run at once", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({ clock, handlers: { parent: { handle: () => undefined }, child: { handle: () => undefined } } });
    const parent = await server.publisher.enqueue("parent", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: parent }))?.stage === "success", "the parent to succeed");
    const child = await server.publisher.enqueue("child", {}, { parentId: parent, runAt: new Date(clock.now() + 5_000) });
    expect((await server.backend.inspect.jobGet({ id: child }))?.stage).toBe("delayed");
    clock.advance(5_000);
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: child }))?.stage === "success", "the child at its time");
  });

  it("a delayed continuation at a partition's head keeps its delay once released, and blocks the partition meanwhile", async () => {
    const h = harness();
    const clock = new ManualClock();
    const gate = deferred();
    const order: string[] = [];
    const server = await h.start({
      clock,
      workerCount: 2,
      topics: [topic("ledger", 2)],
      handlers: { parent: { handle: () => gate.promise }, entry: { handle: (_ctx, p) => void order.push((p as { n: string }).n) } },
    });
    const parent = await server.publisher.enqueue("parent", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: parent }))?.stage === "running", "the parent to run");
    const target = { topic: "ledger", key: "acct-1" };
    const head = await server.publisher.enqueueToPartition("entry", { n: "head" }, target, { parentId: parent, delayMs: 30_000 });
    const behind = await server.publisher.enqueueToPartition("entry", { n: "behind" }, target);
    gate.resolve();
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: parent }))?.stage === "success", "the parent to succeed");
    expect((await server.backend.inspect.jobGet({ id: head }))?.stage).toBe("delayed");
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ waiting: 0, delayed: 1, enqueued: 1, success: 1 });
    clock.advance(29_999);
    expect((await server.backend.inspect.jobGet({ id: head }))?.stage).toBe("delayed");
    expect((await server.backend.inspect.jobGet({ id: behind }))?.stage).toBe("enqueued");
    clock.advance(1);
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: behind }))?.stage === "success", "the partition to drain");
    expect(order).toEqual(["head", "behind"]);
  });

  it("refuses an unknown option (named), delayMs with runAt, and a bad value, writing nothing", async () => {
    const h = harness();
    const server = await h.start({ topics: [topic("ledger", 2)], handlers: { job: { handle: () => undefined } } });
    expect(ENQUEUE_OPTION_KEYS).toEqual(["delayMs", "runAt", "parentId", "retryPolicy", "timeoutMs", "priority", "uniqueKey", "uniqueMode", "group"]);
    const bad: [unknown, RegExp][] = [
      [{ delayMS: 1_000 }, /unknown option "delayMS"; the options are delayMs, runAt, parentId, retryPolicy, timeoutMs/],
      [{ delayMs: 1, runAt: new Date() }, /give delayMs or runAt, not both/],
      [{ delayMs: -1 }, /delayMs must be a finite number/],
      [{ runAt: "tomorrow" }, /runAt must be a valid Date/],
      [{ parentId: 7 }, /parentId must be a non-empty job id/],
      ["soon", /options must be an object/],
    ];
    for (const [options, message] of bad) {
      await expect(server.publisher.enqueue("job", {}, options as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message });
      await expect(server.publisher.enqueueToPartition("job", {}, { topic: "ledger", key: 1 }, options as never)).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message,
      });
    }
    expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
  });
});
