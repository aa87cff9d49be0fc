import { describe, expect, it } from "vitest";
import { RetryPolicy, topic } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { afterCall, codeOf, deferred, settled, StallingClock, useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("partition leases, fencing and history on $name", (entry) => {
  const harness = useHarness(entry);
  const ORDERS = topic("orders", 4);

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
    expect(h.events.filter((e) => e.type === "job-lease-lost")).toEqual([
      { type: "job-lease-lost", jobId: stuck, jobType: "stuck", attempt: 1, reason: expect.stringMatching(/lease of job .* was lost/) },
    ]);
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
