import { describe, expect, it } from "vitest";
import { partitionForKey, RetryPolicy, topic } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { ManualClock } from "@later/runtime/testing";
import { ownedPartitions } from "../../packages/runtime/src/core/partition/rendezvous.js";
import { BACKENDS } from "./backends.js";
import { afterCall, codeOf, deferred, settled, useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("topics and partitions on $name", (entry) => {
  const harness = useHarness(entry);
  const ORDERS = topic("orders", 4);

  it("P1: enqueue to an unregistered topic is refused before anything is written", async () => {
    const h = harness();
    const server = await h.start({ topics: [ORDERS], handlers: { order: { handle: () => undefined } } });
    expect(await codeOf(server.publisher.enqueueToPartition("order", {}, { topic: "payments", key: "k" }))).toBe("UNKNOWN_TOPIC");
    expect(await codeOf(server.publisher.enqueueToPartition("order", {}, { topic: "orders", partition: 4 }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.publisher.enqueueToPartition("order", {}, { topic: "orders", key: 1.5 }))).toBe("INVALID_ARGUMENT");
    expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
  });

  it("P1: a server started with another partition count for a stored topic refuses to start", async () => {
    const h = harness();
    await h.start({ topics: [ORDERS], handlers: { order: { handle: () => undefined } } });
    expect(await codeOf(h.start({ topics: [topic("orders", 8)], handlers: { order: { handle: () => undefined } } }))).toBe("PARTITION_COUNT_MISMATCH");
    expect(await codeOf(() => topic("__later_x", 2))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => topic("t", 0))).toBe("INVALID_CONFIG");
  });

  it("P2/P3: a job lands on partitionForKey's partition with the next sequence, and one key runs strictly in order, one at a time", async () => {
    const h = harness();
    const order: number[] = [];
    let running = 0;
    let overlap = false;
    const server = await h.start({
      topics: [ORDERS],
      workerCount: 4,
      handlers: {
        order: {
          handle: async (_ctx, p) => {
            if (running++ > 0) overlap = true;
            await new Promise((r) => setImmediate(r));
            order.push((p as { n: number }).n);
            running--;
          },
        },
      },
    });
    const ids: string[] = [];
    for (let n = 0; n < 20; n++) ids.push(await server.publisher.enqueueToPartition("order", { n }, { topic: "orders", key: "customer-42" }));
    const last = await settled(() => server.backend.inspect.jobGet({ id: ids[19]! }));
    expect(last.stage).toBe("success");
    expect(order).toEqual([...Array(20).keys()]);
    expect(overlap).toBe(false);
    const first = (await server.backend.inspect.jobGet({ id: ids[0]! }))!;
    expect(first.topic).toBe("orders");
    expect(first.partition).toBe(partitionForKey("customer-42", 4));
    expect(last.seq! - first.seq!).toBe(19);
  });

  it("P3: a retrying head keeps its place; terminal failure releases the next", async () => {
    const h = harness();
    const log: string[] = [];
    let fails = 0;
    const server = await h.start({
      topics: [ORDERS],
      workerCount: 3,
      defaultRetryPolicy: RetryPolicy.fixed(1, 0),
      handlers: {
        order: {
          handle: (_ctx, p) => {
            const { n, fail } = p as { n: number; fail: number };
            log.push(`start ${n}`);
            if (fail > 0 && (n === 0 ? fails++ < fail : true)) throw new Error(`no ${n}`);
          },
        },
      },
    });
    const target = { topic: "orders", partition: 1 };
    const a = await server.publisher.enqueueToPartition("order", { n: 0, fail: 1 }, target); // fails once, then succeeds
    const b = await server.publisher.enqueueToPartition("order", { n: 1, fail: 5 }, target); // fails for good (1 retry)
    const c = await server.publisher.enqueueToPartition("order", { n: 2, fail: 0 }, target);
    expect((await settled(() => server.backend.inspect.jobGet({ id: c }))).stage).toBe("success");
    expect((await server.backend.inspect.jobGet({ id: a }))!.stage).toBe("success");
    expect((await server.backend.inspect.jobGet({ id: b }))!.stage).toBe("failed");
    expect(log).toEqual(["start 0", "start 0", "start 1", "start 1", "start 2"]);
  });

  it("P3: a delayed head blocks its partition until its time", async () => {
    const h = harness();
    const clock = new ManualClock();
    const ran: string[] = [];
    const server = await h.start({ clock, topics: [ORDERS], handlers: { order: { handle: (_ctx, p) => void ran.push((p as { n: string }).n) } } });
    const target = { topic: "orders", partition: 2 };
    const late = await server.publisher.enqueueToPartition("order", { n: "late" }, target, { delayMs: 5_000 });
    const next = await server.publisher.enqueueToPartition("order", { n: "next" }, target);
    const other = await server.publisher.enqueueToPartition("order", { n: "other" }, { topic: "orders", partition: 3 });
    await settled(() => server.backend.inspect.jobGet({ id: other }));
    expect(ran).toEqual(["other"]);
    expect((await server.backend.inspect.jobGet({ id: next }))!.stage).toBe("enqueued");
    clock.advance(5_000);
    await settled(() => server.backend.inspect.jobGet({ id: next }));
    expect(ran).toEqual(["other", "late", "next"]);
    expect((await server.backend.inspect.jobGet({ id: late }))!.stage).toBe("success");
  });

  it("P3: a waiting continuation head blocks until its parent elsewhere succeeds; a failed parent fails it and frees the partition", async () => {
    const h = harness();
    const gate = deferred();
    const ran: string[] = [];
    const server = await h.start({
      topics: [ORDERS],
      workerCount: 2,
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: {
        parent: {
          handle: async (_ctx, p) => {
            await gate.promise;
            if ((p as { fail: boolean }).fail) throw new Error("parent broke");
          },
        },
        order: { handle: (_ctx, p) => void ran.push((p as { n: string }).n) },
      },
    });
    const target = { topic: "orders", partition: 0 };
    const parent = await server.publisher.enqueue("parent", { fail: false });
    const child = await server.publisher.enqueueToPartition("order", { n: "child" }, target, { parentId: parent });
    const after = await server.publisher.enqueueToPartition("order", { n: "after" }, target);
    const elsewhere = await server.publisher.enqueueToPartition("order", { n: "elsewhere" }, { topic: "orders", partition: 1 });
    await settled(() => server.backend.inspect.jobGet({ id: elsewhere }));
    expect((await server.backend.inspect.jobGet({ id: child }))!.stage).toBe("waiting");
    expect((await server.backend.inspect.jobGet({ id: after }))!.stage).toBe("enqueued");
    gate.resolve();
    await settled(() => server.backend.inspect.jobGet({ id: after }));
    expect(ran).toEqual(["elsewhere", "child", "after"]);

    const failing = await server.publisher.enqueue("parent", { fail: true });
    const doomed = await server.publisher.enqueueToPartition("order", { n: "doomed" }, target, { parentId: failing });
    const freed = await server.publisher.enqueueToPartition("order", { n: "freed" }, target);
    expect((await settled(() => server.backend.inspect.jobGet({ id: freed }))).stage).toBe("success");
    const d = (await server.backend.inspect.jobGet({ id: doomed }))!;
    expect(d.stage).toBe("failed");
    expect(d.lastError).toMatch(/parent broke/);
  });

  it("P4: partitions and topics never block each other, even with the same partition number", async () => {
    const h = harness();
    const gate = deferred();
    const server = await h.start({
      topics: [ORDERS, topic("payments", 4)],
      workerCount: 3,
      handlers: { slow: { handle: () => gate.promise }, quick: { handle: () => undefined } },
    });
    const blocked = await server.publisher.enqueueToPartition("slow", {}, { topic: "orders", partition: 0 });
    const sameTopic = await server.publisher.enqueueToPartition("quick", {}, { topic: "orders", partition: 1 });
    const otherTopic = await server.publisher.enqueueToPartition("quick", {}, { topic: "payments", partition: 0 });
    const plain = await server.publisher.enqueue("quick", {});
    for (const id of [sameTopic, otherTopic, plain]) expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
    expect((await server.backend.inspect.jobGet({ id: blocked }))!.stage).toBe("running");
    gate.resolve();
    await settled(() => server.backend.inspect.jobGet({ id: blocked }));
  });

  it("P5: ownership is rendezvous over live members: two servers split the partitions; a dead member's move after its heartbeat expires; shutdown deregisters at once", async () => {
    // The clock moves in lock-step with the servers' membership heartbeats (every third of the expiry):
    // one period at a time, and only once every live server has heartbeat at the current time. Moved
    // blindly (a step per poll), a loaded machine let the clock run past a member's whole expiry between
    // two of its heartbeats, so members expired and came back, ownership flapped and the waits timed out.
    const h = harness();
    const clock = new ManualClock();
    const expiry = 3_000;
    const period = expiry / 3;
    const orders = topic("orders", 16);
    const beats = new Map<string, number>(); // member -> `now` of its last completed heartbeat
    const opts = {
      clock,
      topics: [orders],
      partitionMemberExpiryMs: expiry,
      wrapBackend: (backend: Backend) => afterCall(backend, "partitions", "memberHeartbeat", (_r, [p]) => void beats.set(p.member, p.now)),
      handlers: { order: { handle: () => undefined } },
    };
    const key = (p: { topic: string; partition: number }) => `${p.topic}/${p.partition}`;
    const keys = (s: { ownedPartitions: readonly { topic: string; partition: number }[] }) => s.ownedPartitions.map(key).sort();
    const share = (self: string, members: string[]) => ownedPartitions(self, members, [orders]).map(key).sort();
    /** One heartbeat period on; returns once each of `servers` has heartbeat at the new time (and so re-computed its ownership). */
    const step = async (...servers: { instanceId: string }[]) => {
      clock.advance(period);
      const at = clock.now();
      await waitFor(() => servers.every((s) => beats.get(s.instanceId) === at), "every server's heartbeat at the new time");
    };
    const a = await h.start(opts);
    expect(a.ownedPartitions.length).toBe(16);
    const b = await h.start(opts);
    // A member that heartbeats once and then dies (a crashed process). Its id is picked so that it owns at
    // least one partition among the three (rendezvous leaves a given member none with odds (2/3)^16).
    const ghostId = [...Array(100).keys()].map((i) => `ghost-${i}`).find((id) => share(id, [a.instanceId, b.instanceId, id]).length > 0)!;
    const three = [a.instanceId, b.instanceId, ghostId];
    const ghost = h.db.backend();
    await ghost.open();
    const born = clock.now();
    await ghost.partitions.memberHeartbeat({ member: ghostId, now: born, expiresAt: born + expiry });
    // Every heartbeat while the ghost lives (before born + expiry) sees the three members: a and b hold
    // their rendezvous shares, disjoint, and the ghost's share is held by no one.
    await step(a, b);
    expect(keys(a)).toEqual(share(a.instanceId, three));
    expect(keys(b)).toEqual(share(b.instanceId, three));
    expect(keys(a).filter((k) => keys(b).includes(k))).toEqual([]);
    expect(a.ownedPartitions.length + b.ownedPartitions.length).toBe(16 - share(ghostId, three).length);
    const before = { a: keys(a), b: keys(b) };
    await step(a, b);
    expect({ a: keys(a), b: keys(b) }).toEqual(before);
    // The first heartbeat at or after the ghost's expiry no longer sees it: its partitions, and only those, move.
    await step(a, b);
    expect(clock.now()).toBe(born + expiry);
    const two = [a.instanceId, b.instanceId];
    expect(keys(a)).toEqual(share(a.instanceId, two));
    expect(keys(b)).toEqual(share(b.instanceId, two));
    expect(new Set([...keys(a), ...keys(b)]).size).toBe(16);
    for (const k of before.a) expect(keys(a)).toContain(k);
    for (const k of before.b) expect(keys(b)).toContain(k);
    await b.shutdown();
    // b left at once, not by expiry: its row is gone from the live members although it has not expired.
    const { members } = await ghost.partitions.memberHeartbeat({ member: "observer", now: clock.now(), expiresAt: clock.now() + 1 });
    expect(members).toContain(a.instanceId);
    expect(members).not.toContain(b.instanceId);
    await ghost.close();
    await step(a);
    expect(a.ownedPartitions.length).toBe(16);
  });
});
