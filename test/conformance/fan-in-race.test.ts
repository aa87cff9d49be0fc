/**
 * X5 under races: fan-in children enqueued while their parents are being
 * claimed and finished by two servers on one database (each parent on
 * whichever server claims it, finishes in batches of either), round after
 * round. No child may stay waiting forever, none may run before all of its
 * parents succeeded, and each runs once.
 */
import { describe, expect, it } from "vitest";
import { PermanentJobError, topic } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("fan-in continuations enqueued while their parents finish, on $name", (entry) => {
  const harness = useHarness(entry);

  it("X5: every fan-in child of parents finishing right then, on two servers, runs once and never early", async () => {
    const h = harness();
    const early: string[] = [];
    const runs = new Map<string, number>();
    const handlers = {
      step: { handle: () => undefined },
      join: {
        handle: async (ctx: { jobId: string }, p: { parents: string[] }) => {
          runs.set(ctx.jobId, (runs.get(ctx.jobId) ?? 0) + 1);
          for (const id of p.parents) {
            const parent = await first.backend.inspect.jobGet({ id });
            if (parent?.stage !== "success") early.push(`${ctx.jobId} ran while parent ${id} was ${parent?.stage}`);
          }
        },
      },
    };
    const first = await h.start({ workerCount: 3, handlers });
    const second = await h.start({ workerCount: 3, handlers });
    const children: string[] = [];
    for (let round = 0; round < 30; round++) {
      const publisher = round % 2 === 0 ? first.publisher : second.publisher;
      const parents: string[] = [];
      for (let i = 0; i < 3; i++) parents.push(await publisher.enqueue("step", { round, i }));
      // Some parents are running or finishing now, some done, some not claimed yet.
      children.push(await publisher.enqueue("join", { parents }, { parentId: parents }));
    }
    await waitFor(
      async () => {
        const jobs = await Promise.all(children.map((id) => first.backend.inspect.jobGet({ id })));
        return jobs.every((j) => j?.stage === "success");
      },
      "every fan-in child to succeed",
      20_000,
    );
    expect(early).toEqual([]);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(runs.size).toBe(children.length);
  });

  it("X5: fan-in children of partitioned parents (partition heads of two servers, each finished in its own transaction) and regular ones", async () => {
    const h = harness();
    const early: string[] = [];
    const ORDERS = topic("orders", 4);
    const handlers = {
      step: { handle: () => undefined },
      join: {
        handle: async (ctx: { jobId: string }, p: { parents: string[] }) => {
          for (const id of p.parents) {
            const parent = await first.backend.inspect.jobGet({ id });
            if (parent?.stage !== "success") early.push(`${ctx.jobId} ran while parent ${id} was ${parent?.stage}`);
          }
        },
      },
    };
    const first = await h.start({ workerCount: 3, topics: [ORDERS], handlers });
    await h.start({ workerCount: 3, topics: [ORDERS], handlers });
    const children: string[] = [];
    for (let round = 0; round < 20; round++) {
      const parents = [
        await first.publisher.enqueueToPartition("step", { round }, { topic: "orders", partition: round % 4 }),
        await first.publisher.enqueueToPartition("step", { round }, { topic: "orders", partition: (round + 1) % 4 }),
        await first.publisher.enqueue("step", { round }),
      ];
      children.push(await first.publisher.enqueue("join", { parents }, { parentId: parents }));
    }
    await waitFor(
      async () => (await Promise.all(children.map((id) => first.backend.inspect.jobGet({ id })))).every((j) => j?.stage === "success"),
      "every fan-in child to succeed",
      20_000,
    );
    expect(early).toEqual([]);
  });

  it("X5: a parent failing while its fan-in children are enqueued fails every one of them", async () => {
    const h = harness();
    const handlers = {
      step: { handle: () => undefined },
      boom: { handle: () => Promise.reject(new PermanentJobError("boom")) },
      join: { handle: () => undefined },
    };
    const first = await h.start({ workerCount: 3, handlers });
    await h.start({ workerCount: 3, handlers });
    const children: string[] = [];
    for (let round = 0; round < 20; round++) {
      const ok = await first.publisher.enqueue("step", { round });
      const bad = await first.publisher.enqueue("boom", { round });
      children.push(await first.publisher.enqueue("join", { round }, { parentId: [ok, bad] }));
    }
    const settledChildren = await waitFor(
      async () => {
        const jobs = await Promise.all(children.map((id) => first.backend.inspect.jobGet({ id })));
        return jobs.every((j) => j?.stage === "failed") ? jobs : null;
      },
      "every fan-in child to fail",
      20_000,
    );
    for (const j of settledChildren) expect(j?.lastError).toMatch(/^parent job \w+ failed: boom$/);
    for (const j of settledChildren) expect(j?.attempt).toBe(0);
  });
});
