import { describe, expect, it } from "vitest";
import { partitionForKey, RetryPolicy, topic } from "@later/runtime";
import type { JobRecord } from "@later/runtime/internal";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { afterCall, codeOf, deferred, StallingClock, useHarness, waitFor } from "./harness.js";

/** The job once it reached a terminal stage. */
async function settled(read: () => Promise<JobRecord | null>, what = "job"): Promise<JobRecord> {
  return waitFor(async () => {
    const j = await read();
    return j && (j.stage === "success" || j.stage === "failed") ? j : null;
  }, `${what} to finish`);
}

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
    const h = harness();
    const clock = new ManualClock();
    const expiry = 3_000;
    const opts = { clock, topics: [topic("orders", 16)], partitionMemberExpiryMs: expiry, handlers: { order: { handle: () => undefined } } };
    const a = await h.start(opts);
    expect(a.ownedPartitions.length).toBe(16);
    // A member that heartbeats once and then dies (a crashed process).
    const ghost = h.db.backend();
    await ghost.open();
    const ghostExpiresAt = clock.now() + expiry;
    await ghost.partitions.memberHeartbeat({ member: "ghost", now: clock.now(), expiresAt: ghostExpiresAt });
    const b = await h.start(opts);
    const keys = (s: typeof a) => s.ownedPartitions.map((p) => `${p.topic}/${p.partition}`);
    const total = () => a.ownedPartitions.length + b.ownedPartitions.length;
    // b saw the ghost at start; a sees both at its next heartbeat (every third of the expiry). The
    // clock stops short of the ghost's expiry: stepping on while a's heartbeat is on its way (a slow
    // machine) would let the ghost expire first, and a would never see it.
    await waitFor(() => {
      if (clock.now() + 100 < ghostExpiresAt) clock.advance(100);
      return total() < 16 && a.ownedPartitions.length < 16;
    }, "a to see b and the ghost");
    expect(keys(a).filter((k) => keys(b).includes(k))).toEqual([]);
    const before = { a: keys(a), b: keys(b) };
    await waitFor(() => {
      clock.advance(100);
      return total() === 16;
    }, "the ghost's partitions to move once its heartbeat expired");
    expect(new Set([...keys(a), ...keys(b)]).size).toBe(16);
    for (const k of before.a) expect(keys(a)).toContain(k); // only the ghost's partitions moved
    for (const k of before.b) expect(keys(b)).toContain(k);
    await b.shutdown();
    // b left at once, not by expiry: its row is gone from the live members although it has not expired.
    const { members } = await ghost.partitions.memberHeartbeat({ member: "observer", now: clock.now(), expiresAt: clock.now() + 1 });
    expect(members).toContain(a.instanceId);
    expect(members).not.toContain(b.instanceId);
    await ghost.close();
    await waitFor(() => {
      clock.advance(100);
      return a.ownedPartitions.length === 16;
    }, "a to own every partition again");
  });

  it("P6: lease renewals of many heads and enqueues across every partition, side by side, never deadlock", async () => {
    const h = harness();
    const WIDE = topic("wide", 16);
    const server = await h.start({ topics: [WIDE], handlers: { other: { handle: () => undefined } } });
    await server.shutdown(); // the topic is registered; the seam is driven directly below
    const [renewer, writer] = [h.db.backend(), h.db.backend()];
    await Promise.all([renewer.open(), writer.open()]);
    try {
      const now = Date.now();
      const partitions = [...Array(16).keys()];
      const batch = (round: number) =>
        partitions.map((p) => ({ id: `job-${round}-${p}`, jobType: "x", payload: "{}", runAt: now, retryPolicy: "{}", topic: "wide", partition: p }));
      await writer.jobs.insertMany({ now, jobs: batch(0) });
      const { claimed } = await renewer.partitions.headClaim({
        owner: "A",
        partitions: partitions.map((partition) => ({ topic: "wide", partition })),
        limit: 16,
        now,
        leaseExpiresAt: now + 60_000,
        jobTypes: ["x"],
      });
      expect(claimed).toHaveLength(16);
      // Renewals list the heads in an order opposite to the enqueue's (topic, partition) order.
      const claims = claimed.map((c) => ({ id: c.id, attempt: c.attempt, topic: c.topic, partition: c.partition, epoch: c.epoch })).reverse();
      const renewals = (async () => {
        for (let i = 0; i < 200; i++)
          expect((await renewer.partitions.leaseRenew({ owner: "A", claims, leaseExpiresAt: now + 60_000 + i })).renewed).toHaveLength(16);
      })();
      // Two writers, so a renewal meets an enqueue transaction part-way through its partitions more often.
      const enqueues = (first: number) =>
        (async () => {
          for (let round = first; round < first + 100; round++) await writer.jobs.insertMany({ now, jobs: batch(round) });
        })();
      await Promise.all([renewals, enqueues(1), enqueues(101)]);
      expect((await writer.inspect.partitionDepth()).partitions.reduce((n, p) => n + p.unfinished, 0)).toBe(16 * 201);
    } finally {
      await Promise.all([renewer.close(), writer.close()]);
    }
  });

  it("P6: a claim whose lease was taken over is fenced: its finish is rejected and only the new epoch advances the head", async () => {
    const h = harness();
    const server = await h.start({ topics: [ORDERS], handlers: { other: { handle: () => undefined } } });
    await server.shutdown(); // the topic is registered; the seam is driven directly below
    const b = h.db.backend();
    await b.open();
    const now = Date.now();
    await b.jobs.insertMany({
      now,
      jobs: [1, 2].map((n) => ({
        id: `job-${n}`,
        jobType: "x",
        payload: "{}",
        runAt: now,
        retryPolicy: JSON.stringify(RetryPolicy.noRetries()),
        topic: "orders",
        partition: 0,
      })),
    });
    const claim = (owner: string, at: number) =>
      b.partitions.headClaim({ owner, partitions: [{ topic: "orders", partition: 0 }], limit: 1, now: at, leaseExpiresAt: at + 1_000, jobTypes: ["x"] });
    const first = (await claim("A", now)).claimed[0]!;
    expect(first.id).toBe("job-1");
    expect((await claim("B", now + 10)).claimed).toEqual([]); // the lease holds
    // A's lease expired: B takes the head over, without a new attempt: A's attempt 1 is lost, B records its outcome.
    const second = (await claim("B", now + 2_000)).claimed[0]!;
    expect(second.id).toBe("job-1");
    expect(second.epoch).toBeGreaterThan(first.epoch);
    expect(second).toMatchObject({ attempt: first.attempt, lostAttempt: true });
    expect(first.lostAttempt).toBeUndefined();
    const key = (c: typeof first) => ({ id: c.id, attempt: c.attempt, topic: c.topic, partition: c.partition, epoch: c.epoch });
    expect((await b.partitions.leaseRenew({ owner: "A", claims: [key(first)], leaseExpiresAt: now + 9_000 })).renewed).toEqual([]);
    const late = await b.partitions.headFinish({ owner: "A", claim: key(first), outcome: { kind: "success" }, now: now + 2_100, retentionMs: 1_000 });
    expect(late).toMatchObject({ applied: false, next: null });
    expect((await b.inspect.jobGet({ id: "job-1" }))!.stage).toBe("running");
    // The lost attempt requeued at once; the same write claims its next attempt under a new epoch.
    const retried = await b.partitions.headFinish({
      owner: "B",
      claim: key(second),
      outcome: { kind: "retry", runAt: now + 2_200, error: "worker lost" },
      now: now + 2_200,
      retentionMs: 1_000,
      claimNext: { leaseExpiresAt: now + 5_000, jobTypes: ["x"] },
    });
    expect(retried.applied).toBe(true);
    const third = retried.next!;
    expect(third).toMatchObject({ id: "job-1", attempt: 2 });
    expect(third.lostAttempt).toBeUndefined();
    expect(third.epoch).toBeGreaterThan(second.epoch);
    const done = await b.partitions.headFinish({
      owner: "B",
      claim: key(third),
      outcome: { kind: "success" },
      now: now + 2_300,
      retentionMs: 1_000,
      claimNext: { leaseExpiresAt: now + 5_000, jobTypes: ["x"] },
    });
    expect(done.applied).toBe(true);
    expect(done.next?.id).toBe("job-2");
    expect(done.next!.epoch).toBeGreaterThan(third.epoch);
    expect((await b.inspect.jobGet({ id: "job-1" }))!.stages.map((x) => x.stage)).toEqual(["enqueued", "running", "requeued", "running", "success"]);
    await b.close();
  });

  it("P6: a head claim whose lease expired before its handler could start is not run; the next claim records the lost attempt and runs the next", async () => {
    const h = harness();
    // The process stalls right after its head claim committed (as under SIGSTOP): when it resumes, its
    // clock is past the partition lease, which another owner may hold by now.
    const clock = new StallingClock();
    const leaseMs = 30_000;
    const ran: number[] = [];
    const server = await h.start({
      clock,
      leaseMs,
      topics: [ORDERS],
      defaultRetryPolicy: RetryPolicy.fixed(3, 0),
      wrapBackend: (b) =>
        afterCall(b, "partitions", "headClaim", (r) => {
          if (r.claimed.length > 0 && clock.offset === 0) clock.offset = leaseMs + 1;
        }),
      handlers: { order: { handle: (ctx) => void ran.push(ctx.attempt) } },
    });
    const id = await server.publisher.enqueueToPartition("order", {}, { topic: "orders", key: "k" });
    const skipped = await waitFor(() => h.events.find((e) => e.type === "job-skipped"), "the skipped claim's event");
    expect(skipped).toMatchObject({ jobId: id, attempt: 1 });
    const job = await settled(() => server.backend.inspect.jobGet({ id }));
    expect(ran).toEqual([2]);
    expect(job.stage).toBe("success");
    expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "running", "success"]);
    expect(job.lastError).toMatch(/worker lost: the lease of attempt 1 expired/);
    expect(h.events).toContainEqual({ type: "maintenance", task: "rescue-head", count: 1 });
  });

  it("P6/P8: forceFailPartitionHead fails a running head at once, its claim's signal aborts on renewal and its outcome is discarded; the next job runs", async () => {
    const h = harness();
    const clock = new ManualClock();
    let aborted: unknown = null;
    const started = deferred();
    const release = deferred();
    const server = await h.start({
      clock,
      topics: [ORDERS],
      workerCount: 2,
      handlers: {
        stuck: {
          handle: async (ctx) => {
            ctx.signal.addEventListener("abort", () => (aborted = ctx.signal.reason));
            started.resolve();
            await release.promise;
          },
        },
        next: { handle: () => undefined },
      },
    });
    const target = { topic: "orders", key: "poison" };
    const stuck = await server.publisher.enqueueToPartition("stuck", {}, target);
    const next = await server.publisher.enqueueToPartition("next", {}, target);
    await started.promise;
    expect(await server.publisher.forceFailPartitionHead(target, "skipped by an operator")).toBe(stuck);
    const failed = (await server.backend.inspect.jobGet({ id: stuck }))!;
    expect(failed.stage).toBe("failed");
    expect(failed.lastError).toBe("skipped by an operator");
    await server.renewPartitionLeases();
    expect(aborted).toMatchObject({ code: "LEASE_LOST" });
    expect((await settled(() => server.backend.inspect.jobGet({ id: next }))).stage).toBe("success");
    release.resolve();
    expect((await server.backend.inspect.jobGet({ id: stuck }))!.stage).toBe("failed");
    expect(await server.publisher.forceFailPartitionHead(target)).toBeNull();
  });

  it("P7: a local enqueue wakes the partition pollers at once (their poll timer never fires here)", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({ clock, topics: [ORDERS], pollIntervalMs: 60_000, handlers: { order: { handle: () => undefined } } });
    for (let n = 0; n < 3; n++) {
      const id = await server.publisher.enqueueToPartition("order", { n }, { topic: "orders", key: n });
      expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
    }
  });

  it("P8: truncatePartitionHistory keeps the newest N finished jobs of the partition", async () => {
    const h = harness();
    const server = await h.start({ topics: [ORDERS], handlers: { order: { handle: () => undefined } } });
    const target = { topic: "orders", partition: 3 };
    const ids: string[] = [];
    for (let n = 0; n < 6; n++) ids.push(await server.publisher.enqueueToPartition("order", { n }, target));
    const other = await server.publisher.enqueueToPartition("order", {}, { topic: "orders", partition: 2 });
    await settled(() => server.backend.inspect.jobGet({ id: ids[5]! }));
    await settled(() => server.backend.inspect.jobGet({ id: other }));
    expect(await server.publisher.truncatePartitionHistory(target, 2)).toBe(4);
    const left = await Promise.all(ids.map((id) => server.backend.inspect.jobGet({ id })));
    expect(left.map((j) => j !== null)).toEqual([false, false, false, false, true, true]);
    expect(await server.backend.inspect.jobGet({ id: other })).not.toBeNull();
    expect(await codeOf(server.publisher.truncatePartitionHistory(target, -1))).toBe("INVALID_ARGUMENT");
  });

  it("R3: enqueueRecurringContinue chains off the running job into its partition (a plain continuation for a plain parent)", async () => {
    const h = harness();
    const ran: string[] = [];
    const chained: string[] = [];
    const server = await h.start({
      topics: [ORDERS],
      handlers: {
        step: {
          handle: async (ctx, p) => {
            const { name } = p as { name: string };
            ran.push(name);
            if (name === "first" || name === "plain")
              chained.push(await ctx.publisher.enqueueRecurringContinue("step", ctx.jobId, { name: `${name} follow-up` }));
          },
        },
      },
    });
    const first = await server.publisher.enqueueToPartition("step", { name: "first" }, { topic: "orders", partition: 2 });
    await waitFor(() => chained.length === 1, "the follow-up");
    const follow = await settled(() => server.backend.inspect.jobGet({ id: chained[0]! }));
    const parent = (await server.backend.inspect.jobGet({ id: first }))!;
    expect(follow).toMatchObject({ stage: "success", parentId: first, topic: "orders", partition: 2 });
    expect(follow.seq).toBeGreaterThan(parent.seq!);
    const plain = await server.publisher.enqueue("step", { name: "plain" });
    await waitFor(() => chained.length === 2, "the plain follow-up");
    expect(await settled(() => server.backend.inspect.jobGet({ id: chained[1]! }))).toMatchObject({ stage: "success", parentId: plain, topic: null });
    expect(ran).toEqual(["first", "first follow-up", "plain", "plain follow-up"]);
    expect(await codeOf(server.publisher.enqueueRecurringContinue("step", "01jxxxxxxxxxxxxxxxxxxxxxxx", {}))).toBe("PARENT_NOT_FOUND");
  });
});
