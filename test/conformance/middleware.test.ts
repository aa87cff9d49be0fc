/**
 * X10 middleware on both backends: hooks compose in array order around
 * every enqueue form and every attempt; the metadata an enqueue hook sets
 * is stored (NULL when none) and reaches the attempt; a hook that throws
 * rejects its enqueue with nothing written, or fails its attempt (retried
 * per policy); `next()` twice is MIDDLEWARE_MISUSE; a bad `middleware`
 * option is INVALID_ARGUMENT naming the index.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { BackgroundJobServer, RetryPolicy, topic, type AttemptContext, type EnqueueContext, type LaterMiddleware } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { codeOf, refusal, settled, storedMeta, useHarness, waitFor } from "./harness.js";

/** A middleware that logs `<name>>` before and `<name><` after each hook's `next()`. */
function logging(name: string, log: string[]): LaterMiddleware {
  return {
    async enqueue(_ctx, next) {
      log.push(`${name}>enqueue`);
      const ids = await next();
      log.push(`${name}<enqueue`);
      return ids;
    },
    async attempt(ctx, next) {
      log.push(`${name}>attempt ${ctx.attempt}`);
      try {
        await next();
        log.push(`${name}<attempt ok`);
      } catch (error) {
        log.push(`${name}<attempt ${(error as Error).message}`);
        throw error;
      }
    },
  };
}

describe.each(BACKENDS)("middleware (X10) on $name", (entry) => {
  const harness = useHarness(entry);

  it("X10: hooks compose in array order (the first outermost) around the enqueue and around the attempt", async () => {
    const log: string[] = [];
    const server = await harness().start({
      handlers: { a: { handle: () => void log.push("handler") } },
      middleware: [logging("1", log), logging("2", log), { attempt: (_ctx, next) => next() }],
      workerCount: 1,
    });
    const id = await server.publisher.enqueue("a", {});
    await settled(() => server.backend.inspect.jobGet({ id }));
    await waitFor(() => log.length === 9, "the attempt's hooks to return");
    // The job may start before the enqueue's hooks have returned (the commit wakes the worker): each order on its own.
    expect(log.filter((l) => l.includes("enqueue"))).toEqual(["1>enqueue", "2>enqueue", "2<enqueue", "1<enqueue"]);
    expect(log.filter((l) => !l.includes("enqueue"))).toEqual(["1>attempt 1", "2>attempt 1", "handler", "2<attempt ok", "1<attempt ok"]);
  });

  it("X10: every enqueue form goes through the enqueue hook; its metadata is stored (NULL when left empty) and handed to the attempt", async () => {
    const enqueues: EnqueueContext[] = [];
    const attempts = new Map<string, AttemptContext>();
    const server = await harness().start({
      handlers: { a: { handle: () => undefined } },
      topics: [topic("orders", 2)],
      middleware: [
        {
          async enqueue(ctx, next) {
            enqueues.push(ctx);
            ctx.jobs.forEach((job, i) => {
              if ((job.payload as { tag?: boolean }).tag) job.meta.tag = `${ctx.jobType}-${i}`;
            });
            return next();
          },
          async attempt(ctx, next) {
            attempts.set(ctx.jobId, ctx);
            await next();
          },
        },
      ],
    });
    const p = server.publisher;
    const single = await p.enqueue("a", { tag: true });
    const [m0, m1] = await p.enqueueMany("a", [{ tag: true }, {}]);
    const delayed = await p.enqueue("a", { tag: true }, { delayMs: 1 });
    const continuation = await p.enqueue("a", { tag: true }, { parentId: single });
    const partitioned = await p.enqueueToPartition("a", { tag: true }, { topic: "orders", partition: 1 });
    const [pm] = await p.enqueueManyToPartition("a", [{ payload: { tag: true }, target: { topic: "orders", key: "k" } }]);
    const app = harness().db.appDatabase();
    let inTrx: string;
    let partitionInTrx: string;
    try {
      inTrx = await app.transaction().execute((trx) => p.enqueueIn(trx as never, "a", { tag: true }));
      partitionInTrx = await app.transaction().execute((trx) => p.enqueueToPartitionIn(trx as never, "a", { tag: true }, { topic: "orders", partition: 0 }));
    } finally {
      await app.destroy();
    }
    expect(enqueues.map((c) => [c.jobs.length, c.inTransaction])).toEqual([
      [1, false],
      [2, false],
      [1, false],
      [1, false],
      [1, false],
      [1, false],
      [1, true],
      [1, true],
    ]);
    expect(enqueues[7]!.jobs[0]!.partition).toEqual({ topic: "orders", partition: 0 });
    expect(enqueues[2]!.options).toEqual({ delayMs: 1 });
    expect(enqueues[3]!.options).toEqual({ parentId: single });
    expect(enqueues[4]!.jobs[0]!.partition).toEqual({ topic: "orders", partition: 1 });
    expect(enqueues[1]!.jobs.map((j) => j.payload)).toEqual([{ tag: true }, {}]);

    const all = [single, m0!, m1!, delayed, continuation, partitioned, pm!, inTrx, partitionInTrx];
    for (const id of all) await settled(() => server.backend.inspect.jobGet({ id }));
    const stored = await storedMeta(harness().db);
    expect(stored.get(m1!)).toBeNull();
    expect(JSON.parse(stored.get(m0!)!)).toEqual({ tag: "a-0" });
    expect(JSON.parse(stored.get(single)!)).toEqual({ tag: "a-0" });
    await waitFor(() => all.every((id) => attempts.has(id)), "every attempt's hook");
    expect(attempts.get(m1!)!.meta).toEqual({});
    expect(attempts.get(m0!)!.meta).toEqual({ tag: "a-0" });
    for (const id of [single, delayed, continuation, partitioned, pm!, inTrx, partitionInTrx]) expect(attempts.get(id)!.meta).toEqual({ tag: "a-0" });
    expect(attempts.get(partitioned)).toMatchObject({ jobType: "a", attempt: 1, partition: { topic: "orders", partition: 1 }, payload: { tag: true } });
    expect(attempts.get(single)).toMatchObject({ jobId: single, partition: null, payload: { tag: true } });
    expect(attempts.get(single)!.signal).toBeInstanceOf(AbortSignal);
  });

  it("X5/X10: a fan-in enqueue goes through the enqueue hook with its parentId array as given; the child keeps its metadata until its attempt; a throwing hook writes no child and no edge", async () => {
    const enqueues: EnqueueContext[] = [];
    const attempts = new Map<string, AttemptContext>();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const server = await harness().start({
      handlers: { parent: { handle: () => gate }, child: { handle: () => undefined } },
      topics: [topic("orders", 2)],
      middleware: [
        {
          async enqueue(ctx, next) {
            enqueues.push(ctx);
            if ((ctx.jobs[0]!.payload as { fail?: boolean }).fail) throw new Error("refused by middleware");
            for (const job of ctx.jobs) job.meta.tag = ctx.jobType;
            return next();
          },
          async attempt(ctx, next) {
            attempts.set(ctx.jobId, ctx);
            await next();
          },
        },
      ],
    });
    const p = server.publisher;
    const [a, b] = await p.enqueueMany("parent", [{}, {}]);
    const child = await p.enqueue("child", {}, { parentId: [b!, a!, b!] });
    const partitioned = await p.enqueueToPartition("child", {}, { topic: "orders", partition: 1 }, { parentId: [a!, b!] });
    await expect(p.enqueue("child", { fail: true }, { parentId: [a!, b!] })).rejects.toThrow("refused by middleware");
    expect(enqueues.slice(1).map((c) => c.options)).toEqual([{ parentId: [b, a, b] }, { parentId: [a, b] }, { parentId: [a, b] }]);
    expect((await server.backend.inspect.jobGet({ id: child }))!.stage).toBe("waiting");
    open();
    for (const id of [child, partitioned]) expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
    await waitFor(() => attempts.has(child) && attempts.has(partitioned), "the children's attempt hooks");
    expect(attempts.get(child)!.meta).toEqual({ tag: "child" });
    expect(attempts.get(partitioned)).toMatchObject({ meta: { tag: "child" }, partition: { topic: "orders", partition: 1 } });
    const app = harness().db.appDatabase();
    try {
      const edges = await sql<{ child_id: string }>`SELECT child_id FROM later_job_parents ORDER BY child_id`.execute(app);
      expect(edges.rows.map((r) => r.child_id)).toEqual([child, child, partitioned, partitioned].sort());
    } finally {
      await app.destroy();
    }
    expect(await server.backend.inspect.jobList({ limit: 10 })).toHaveLength(4);
  });

  it("X2/X10: a unique enqueue goes through the enqueue hook: its metadata is stored by the insert and by a replace; a hook skipping next() writes nothing", async () => {
    const enqueues: EnqueueContext[] = [];
    let skip = false;
    const server = await harness().start({
      handlers: { a: { handle: () => undefined } },
      middleware: [
        {
          async enqueue(ctx, next) {
            enqueues.push(ctx);
            if (skip) return ["skipped"];
            ctx.jobs[0]!.meta.n = enqueues.length;
            return next();
          },
        },
      ],
    });
    const p = server.publisher;
    const first = await p.enqueueUnique("a", { v: 1 }, { uniqueKey: "k", uniqueMode: "replace", delayMs: 60_000 });
    expect(first.outcome).toBe("inserted");
    expect(JSON.parse((await storedMeta(harness().db)).get(first.id)!)).toEqual({ n: 1 });
    const again = await p.enqueue("a", { v: 2 }, { uniqueKey: "k", uniqueMode: "replace", delayMs: 60_000 });
    expect(again).toBe(first.id);
    expect(JSON.parse((await storedMeta(harness().db)).get(first.id)!)).toEqual({ n: 2 });
    expect(enqueues.map((c) => [c.jobType, c.jobs.length, c.inTransaction, c.options.uniqueKey])).toEqual([
      ["a", 1, false, "k"],
      ["a", 1, false, "k"],
    ]);
    skip = true;
    expect(await p.enqueueUnique("a", { v: 3 }, { uniqueKey: "other" })).toEqual({ id: "skipped", outcome: "existing" });
    expect((await storedMeta(harness().db)).size).toBe(1);
  });

  it("X10: an enqueue hook that throws rejects the enqueue with its error and nothing is written; metadata over 8 KiB or not JSON is INVALID_ARGUMENT", async () => {
    const boom = new Error("refused by middleware");
    let mode: "throw" | "big" | "bigint" = "throw";
    const server = await harness().start({
      handlers: { a: { handle: () => undefined } },
      topics: [topic("orders", 2)],
      middleware: [
        {
          enqueue(ctx, next) {
            if (mode === "throw") throw boom;
            ctx.jobs[0]!.meta.value = mode === "big" ? "x".repeat(8_200) : 1n;
            return next();
          },
        },
      ],
    });
    const p = server.publisher;
    const app = harness().db.appDatabase();
    try {
      const calls = [
        () => p.enqueue("a", {}),
        () => p.enqueueMany("a", [{}, {}]),
        () => p.enqueue("a", {}, { delayMs: 10 }),
        () => p.enqueueToPartition("a", {}, { topic: "orders", key: "k" }),
        () => app.transaction().execute((trx) => p.enqueueIn(trx as never, "a", {})),
        () => app.transaction().execute((trx) => p.enqueueToPartitionIn(trx as never, "a", {}, { topic: "orders", key: "k" })),
      ];
      for (const call of calls) await expect(call()).rejects.toBe(boom);
      for (const m of ["big", "bigint"] as const) {
        mode = m;
        for (const call of calls) {
          const error = await refusal(call());
          expect(error.code).toBe("INVALID_ARGUMENT");
          expect(error.message).toMatch(/metadata of a "a" job/);
        }
      }
    } finally {
      await app.destroy();
    }
    expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ enqueued: 0, delayed: 0 });
  });

  it("X10: an attempt hook that throws fails the attempt (retried per policy, never a crashed worker); next() twice is MIDDLEWARE_MISUSE", async () => {
    let handled = 0;
    const server = await harness().start({
      handlers: {
        a: { handle: () => void handled++, retry: () => RetryPolicy.fixed(2, 1) },
        twice: { handle: () => void handled++, retry: () => RetryPolicy.noRetries() },
      },
      workerCount: 1,
      middleware: [
        {
          async attempt(ctx, next) {
            if (ctx.jobType === "twice") {
              await next();
              await next();
              return;
            }
            if (ctx.attempt === 1) throw new Error("middleware failed attempt 1");
            if (ctx.attempt === 2) return Promise.reject(new Error("middleware failed attempt 2"));
            await next();
          },
        },
      ],
    });
    const id = await server.publisher.enqueue("a", {});
    const done = await settled(() => server.backend.inspect.jobGet({ id }));
    expect(done).toMatchObject({ stage: "success", attempt: 3, lastError: "middleware failed attempt 2" });
    expect(handled).toBe(1);
    const twice = await server.publisher.enqueue("twice", {});
    const failed = await settled(() => server.backend.inspect.jobGet({ id: twice }));
    expect(failed.stage).toBe("failed");
    expect(failed.lastError).toMatch(/called next\(\) twice/);
    expect(handled).toBe(2); // the handler ran once
    // The worker is still there: another job runs.
    const after = await server.publisher.enqueue("a", {});
    expect((await settled(() => server.backend.inspect.jobGet({ id: after }))).stage).toBe("success");
  });

  it("X10: next() twice at enqueue rejects with MIDDLEWARE_MISUSE; a timed-out attempt's next() rejects with JOB_TIMEOUT at the timeout", async () => {
    const seen: string[] = [];
    const server = await harness().start({
      handlers: {
        a: { handle: () => undefined },
        hang: { handle: () => new Promise<void>(() => {}), timeoutMs: 50, retry: () => RetryPolicy.noRetries() },
      },
      middleware: [
        {
          async enqueue(ctx, next) {
            if (ctx.jobType === "a") await next();
            return next();
          },
          async attempt(_ctx, next) {
            try {
              await next();
            } catch (error) {
              seen.push((error as { code?: string }).code ?? "none");
              throw error;
            }
          },
        },
      ],
    });
    expect(await codeOf(server.publisher.enqueue("a", {}))).toBe("MIDDLEWARE_MISUSE");
    const id = await server.publisher.enqueue("hang", {});
    const failed = await settled(() => server.backend.inspect.jobGet({ id }));
    expect(failed.lastError).toMatch(/^JOB_TIMEOUT/);
    await waitFor(() => seen.length > 0, "the hook to see the timeout");
    expect(seen).toEqual(["JOB_TIMEOUT"]);
  });

  it("X10: a middleware option that is not an array of objects with functions is INVALID_ARGUMENT naming the index", async () => {
    const h = harness();
    const bad: [unknown, RegExp][] = [
      [{}, /middleware must be an array/],
      [[{ attempt: () => undefined }, null], /middleware\[1\] must be an object/],
      [[{ enqueue: "no" }], /middleware\[0\]\.enqueue must be a function/],
      [[{}], /middleware\[0\] has neither/],
    ];
    await h.start({ handlers: { a: { handle: () => undefined } } }); // creates the database
    for (const [middleware, message] of bad) {
      const error = await refusal(
        BackgroundJobServer.start({
          context: undefined,
          backend: h.db.backend(),
          handlers: { a: { handle: () => undefined } },
          middleware: middleware as never,
        }),
      );
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toMatch(message);
    }
  });
});
