/**
 * Partition runs (P3, server option `partitionRunMax`) through a real
 * server on each backend: consecutive ready jobs of a partition run one
 * after another and are written together, in order, one at a time; a failure
 * ends the run and keeps its place; a follower cancelled while it runs (X3)
 * aborts and ends the run before it; `partitionRunMax: 1` writes every job
 * on its own. The writes are observed through `partitions.headFinish`
 * (wrapped, the real one called), the stages through the job rows, and the
 * counters against a GROUP BY.
 */
import { describe, expect, it } from "vitest";
import { RetryPolicy, topic } from "@later/runtime";
import type { PartitionHeadFinishParams } from "@later/runtime/internal";
import { JOB_STAGES } from "../../packages/runtime/src/core/job-stage.js";
import { BACKENDS } from "./backends.js";
import { afterCall, codeOf, deferred, settled, StallingClock, useHarness, waitFor } from "./harness.js";
import type { Harness } from "./harness.js";
import type { BackgroundJobServer } from "@later/runtime";

const AT = { topic: "orders", partition: 0 };

describe.each(BACKENDS)("partition runs on $name", (entry) => {
  const harness = useHarness(entry);

  /** Starts a server whose first job of partition 0 waits for `gate`, so the jobs enqueued meanwhile are ready behind it. */
  async function gated(
    h: Harness,
    opts: { partitionRunMax?: number; handle?: (n: number, signal: AbortSignal) => Promise<void> | void; retry?: RetryPolicy; clock?: StallingClock },
  ): Promise<{ server: BackgroundJobServer<unknown>; gate: ReturnType<typeof deferred<void>>; finishes: PartitionHeadFinishParams[]; log: number[] }> {
    const gate = deferred();
    const finishes: PartitionHeadFinishParams[] = [];
    const log: number[] = [];
    let running = 0;
    const server = await h.start({
      topics: [topic("orders", 2)],
      workerCount: 2,
      ...(opts.partitionRunMax === undefined ? {} : { partitionRunMax: opts.partitionRunMax }),
      ...(opts.clock === undefined ? {} : { clock: opts.clock }),
      defaultRetryPolicy: opts.retry ?? RetryPolicy.fixed(1, 0),
      wrapBackend: (b) => afterCall(b, "partitions", "headFinish", (_r, [params]) => void finishes.push(params)),
      handlers: {
        order: {
          handle: async (ctx, p) => {
            const { n } = p as { n: number };
            if (running++ > 0) throw new Error("two jobs of one partition at once");
            try {
              log.push(n);
              if (n === 0) await gate.promise;
              await opts.handle?.(n, ctx.signal);
            } finally {
              running--;
            }
          },
        },
      },
    });
    return { server: server as BackgroundJobServer<unknown>, gate, finishes, log };
  }

  async function enqueue(server: BackgroundJobServer<unknown>, from: number, to: number): Promise<string[]> {
    const ids: string[] = [];
    for (let n = from; n < to; n++) ids.push(await server.publisher.enqueueToPartition("order", { n }, AT));
    return ids;
  }

  async function expectCountersMatchStored(server: { backend: BackgroundJobServer<unknown>["backend"] }): Promise<void> {
    const jobs = await server.backend.inspect.jobList({ limit: 1000 });
    const grouped = Object.fromEntries(JOB_STAGES.map((s) => [s, jobs.filter((j) => j.stage === s).length]));
    expect((await server.backend.inspect.stageCounts()).counts).toEqual(grouped);
  }

  it("P3: consecutive ready jobs run as runs (at most partitionRunMax per write), in order, one at a time; history and events as for heads", async () => {
    const h = harness();
    const { server, gate, finishes, log } = await gated(h, { partitionRunMax: 8 });
    const [first] = await enqueue(server, 0, 1);
    await waitFor(() => log.length === 1, "the first job to start");
    const ids = await enqueue(server, 1, 21);
    gate.resolve();
    await settled(() => server.backend.inspect.jobGet({ id: ids.at(-1)! }));
    expect(log).toEqual([...Array(21).keys()]);
    const sizes = finishes.map((f) => 1 + (f.followers?.length ?? 0));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(21);
    expect(Math.max(...sizes)).toBe(8);
    expect(finishes.length).toBeLessThanOrEqual(5); // 1 (the gated head) + 20 in runs of at most 8
    for (const id of [first!, ...ids]) {
      const job = (await server.backend.inspect.jobGet({ id }))!;
      expect(job).toMatchObject({ stage: "success", attempt: 1 });
      expect(job.stages.map((c) => c.stage)).toEqual(["enqueued", "running", "success"]);
      expect(job.stages[1]!.at).toBeLessThanOrEqual(job.stages[2]!.at);
    }
    await waitFor(() => h.stagesOf(ids.at(-1)!).includes("success"), "the last follower's events");
    expect(h.stagesOf(ids[3]!)).toEqual(["enqueued", "running", "success"]);
    await expectCountersMatchStored(server);
  });

  it("P3: a run starts no follower once it has run for 100 ms: its outcomes are written at least that often, however slow its jobs", async () => {
    const h = harness();
    // Every job takes 30 ms of the server's clock (its sleeps keep wall time): a run of up to 50 starts its head and
    // followers 30 ms apart, so no write carries followers started 100 ms or more after the first.
    const clock = new StallingClock();
    const { server, gate, finishes, log } = await gated(h, {
      partitionRunMax: 50,
      clock,
      handle: () => {
        clock.offset += 30;
      },
    });
    await enqueue(server, 0, 1);
    await waitFor(() => log.length === 1, "the first job to start");
    const ids = await enqueue(server, 1, 21);
    gate.resolve();
    await settled(() => server.backend.inspect.jobGet({ id: ids.at(-1)! }));
    expect(log).toEqual([...Array(21).keys()]);
    // The gated head alone, then 20 jobs in runs of at most 4 (a head and three followers: 0, 30, 60 and 90 ms in).
    expect(finishes.length).toBeGreaterThanOrEqual(6);
    for (const f of finishes) {
      const starts = (f.followers ?? []).map((x) => x.startedAt);
      expect(starts.length).toBeLessThanOrEqual(3);
      if (starts.length > 0) expect(Math.max(...starts) - Math.min(...starts)).toBeLessThan(100);
    }
    for (const id of ids) expect((await server.backend.inspect.jobGet({ id }))!).toMatchObject({ stage: "success", attempt: 1 });
    await expectCountersMatchStored(server);
  });

  it("P3: a failure in the middle of a run ends it: the failed follower keeps its place and retries, the later ones run after it", async () => {
    const h = harness();
    let failed = false;
    const { server, gate, finishes, log } = await gated(h, {
      partitionRunMax: 10,
      handle: (n) => {
        if (n === 3 && !failed) {
          failed = true;
          throw new Error("three fails once");
        }
      },
    });
    await enqueue(server, 0, 1);
    await waitFor(() => log.length === 1, "the first job to start");
    const ids = await enqueue(server, 1, 6);
    gate.resolve();
    await settled(() => server.backend.inspect.jobGet({ id: ids.at(-1)! }));
    expect(log).toEqual([0, 1, 2, 3, 3, 4, 5]);
    const three = (await server.backend.inspect.jobGet({ id: ids[2]! }))!;
    expect(three).toMatchObject({ stage: "success", attempt: 2 });
    expect(three.stages.map((c) => c.stage)).toEqual(["enqueued", "running", "requeued", "running", "success"]);
    expect((await server.backend.inspect.jobGet({ id: ids[3]! }))!).toMatchObject({ stage: "success", attempt: 1 });
    // The run that failed wrote 1, 2 and the failure of 3 together: 4 and 5 were not run then.
    const failing = finishes.find((f) => f.followers?.some((x) => x.outcome.kind === "retry"))!;
    expect(failing.followers!.map((x) => x.outcome.kind)).toEqual(["success", "retry"]);
    await expectCountersMatchStored(server);
  });

  it("P3: partitionRunMax 1 writes every job on its own, as before runs; the option is validated", async () => {
    const h = harness();
    const { server, gate, finishes, log } = await gated(h, { partitionRunMax: 1 });
    await enqueue(server, 0, 1);
    await waitFor(() => log.length === 1, "the first job to start");
    const ids = await enqueue(server, 1, 6);
    gate.resolve();
    await settled(() => server.backend.inspect.jobGet({ id: ids.at(-1)! }));
    expect(log).toEqual([0, 1, 2, 3, 4, 5]);
    expect(finishes).toHaveLength(6);
    expect(finishes.every((f) => (f.followers ?? []).length === 0)).toBe(true);
    await expectCountersMatchStored(server);
    for (const bad of [0, 1.5, -1, "8"]) {
      expect(await codeOf(h.start({ partitionRunMax: bad as number, handlers: { order: { handle: () => undefined } } }))).toBe("INVALID_CONFIG");
    }
  });

  it("J9: a run cut by the shutdown deadline writes the jobs that ran before the running one, which is never written", async () => {
    const h = harness();
    const started = deferred();
    const { server, gate, log } = await gated(h, {
      partitionRunMax: 8,
      handle: async (n, signal) => {
        if (n !== 2) return;
        started.resolve();
        await new Promise((r) => signal.addEventListener("abort", r));
      },
    });
    await enqueue(server, 0, 1);
    await waitFor(() => log.length === 1, "the first job to start");
    const ids = await enqueue(server, 1, 4);
    gate.resolve();
    await started.promise;
    await server.shutdown({ deadlineMs: 0 });
    expect(log).toEqual([0, 1, 2]);
    const check = h.db.backend(server.backend.namespace);
    await check.open();
    try {
      expect((await check.inspect.jobGet({ id: ids[0]! }))!).toMatchObject({ stage: "success", attempt: 1 });
      for (const id of ids.slice(1)) {
        const job = (await check.inspect.jobGet({ id }))!;
        expect(job).toMatchObject({ stage: "enqueued", attempt: 0 });
        expect(job.stages.map((c) => c.stage)).toEqual(["enqueued"]);
      }
      const [partition] = (await check.inspect.partitionList({ topic: "orders" })).partitions;
      expect(partition!.leaseOwner).toBeNull(); // freed at once: the next owner goes on with the one that was running
      await expectCountersMatchStored({ backend: check });
    } finally {
      await check.close();
    }
  });

  it("X3: a follower cancelled while it runs has its signal aborted; what ran before it is written, the partition goes on after it", async () => {
    const h = harness();
    const started = deferred();
    let aborted: unknown;
    const { server, gate, log } = await gated(h, {
      partitionRunMax: 8,
      handle: async (n, signal) => {
        if (n !== 2) return;
        started.resolve();
        await new Promise((r) => signal.addEventListener("abort", r));
        aborted = signal.reason;
      },
    });
    await enqueue(server, 0, 1);
    await waitFor(() => log.length === 1, "the first job to start");
    const ids = await enqueue(server, 1, 5);
    gate.resolve();
    await started.promise;
    expect(await server.cancel(ids[1]!)).toBe(true);
    await waitFor(() => aborted !== undefined, "the follower's signal to abort");
    expect(aborted).toMatchObject({ code: "JOB_CANCELLED" });
    await settled(() => server.backend.inspect.jobGet({ id: ids.at(-1)! }));
    expect(log).toEqual([0, 1, 2, 3, 4]);
    expect((await server.backend.inspect.jobGet({ id: ids[0]! }))!).toMatchObject({ stage: "success", attempt: 1 });
    const cancelled = (await server.backend.inspect.jobGet({ id: ids[1]! }))!;
    expect(cancelled.stage).toBe("cancelled");
    expect(cancelled.stages.map((c) => c.stage)).toEqual(["enqueued", "cancelled"]);
    for (const id of ids.slice(2)) expect((await server.backend.inspect.jobGet({ id }))!.stage).toBe("success");
    await expectCountersMatchStored(server);
  });
});
