import { describe, expect, it } from "vitest";
import { isJobId, newJobId, ParentNotFoundError, RetryPolicy } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { deferred, useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("delivery on $name", (entry) => {
  const harness = useHarness(entry);

  it("J1/J2: runs an enqueued job once with the payload it was given, and keeps the stage history", async () => {
    const h = harness();
    const seen: unknown[] = [];
    const server = await h.start({ handlers: { echo: { handle: (_ctx, p) => void seen.push(p) } } });
    const payload = { text: "héllo", n: 42, nested: { list: [1, "two", null], flag: true } };
    const id = await server.publisher.enqueue("echo", payload);
    expect(isJobId(id)).toBe(true);
    expect(id).toBe(id.toLowerCase());
    const job = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id });
      return j?.stage === "success" ? j : null;
    }, "success");
    expect(seen).toEqual([payload]);
    expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "success"]);
    const times = job.stages.map((s) => s.at);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(job.attempt).toBe(1);
  });

  it("J3: retries a throwing handler per policy and keeps the last error", async () => {
    const h = harness();
    let runs = 0;
    const server = await h.start({
      defaultRetryPolicy: RetryPolicy.fixed(2, 0),
      handlers: {
        flaky: {
          handle: () => {
            runs++;
            throw new Error(`boom ${runs}`);
          },
        },
      },
    });
    const id = await server.publisher.enqueue("flaky", {});
    const job = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id });
      return j?.stage === "failed" ? j : null;
    }, "failed");
    expect(runs).toBe(3);
    expect(job.attempt).toBe(3);
    expect(job.lastError).toBe("boom 3");
    expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "running", "requeued", "running", "failed"]);
  });

  it("J3: a job type's own policy replaces the server default; noRetries fails at once", async () => {
    const h = harness();
    let runs = 0;
    const server = await h.start({
      defaultRetryPolicy: RetryPolicy.fixed(5, 0),
      handlers: {
        once: {
          handle: () => {
            runs++;
            throw new Error("no");
          },
          retry: () => RetryPolicy.noRetries(),
        },
      },
    });
    const id = await server.publisher.enqueue("once", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id }))?.stage === "failed", "failed");
    expect(runs).toBe(1);
  });

  it("J3: the default policy is 6 retries, exponential with bounded jitter", () => {
    const p = RetryPolicy.default();
    expect(p.maxRetries).toBe(6);
    const low = [1, 2, 3, 4, 5, 6].map((n) => p.delayBeforeRetry(n, () => 0)!);
    const high = [1, 2, 3, 4, 5, 6].map((n) => p.delayBeforeRetry(n, () => 0.999999)!);
    for (let i = 1; i < 6; i++) expect(low[i]!).toBeGreaterThan(low[i - 1]!);
    for (let i = 0; i < 6; i++) {
      const base = 1000 * 2 ** i;
      expect(low[i]).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
      expect(high[i]).toBeLessThanOrEqual(Math.ceil(base * 1.2));
    }
    expect(p.delayBeforeRetry(7)).toBeNull();
    expect(RetryPolicy.fixed(3, 5000).delayBeforeRetry(2)).toBe(5000);
  });

  it("J4: a delayed job and a delayed retry never start before their time and hold no worker", async () => {
    const h = harness();
    const clock = new ManualClock();
    const started: number[] = [];
    const retriedStarts: number[] = [];
    let fail = true;
    const server = await h.start({
      clock,
      workerCount: 1,
      pollIntervalMs: 1_000,
      defaultRetryPolicy: RetryPolicy.fixed(1, 30_000),
      handlers: {
        later: { handle: () => void started.push(clock.now()) },
        retried: {
          handle: () => {
            retriedStarts.push(clock.now());
            if (fail) {
              fail = false;
              throw new Error("first");
            }
          },
        },
      },
    });
    const t0 = clock.now();
    const delayed = await server.publisher.enqueue("later", {}, { delayMs: 60_000 });
    const now = await server.publisher.enqueue("later", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: now }))?.stage === "success", "the ready job, not blocked by the delayed one");
    expect((await server.backend.inspect.jobGet({ id: delayed }))?.stage).toBe("delayed");
    clock.advance(59_999);
    const retried = await server.publisher.enqueue("retried", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: retried }))?.stage === "requeued", "requeued");
    expect((await server.backend.inspect.jobGet({ id: delayed }))?.stage).toBe("delayed");
    clock.advance(1);
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: delayed }))?.stage === "success", "delayed job after its time");
    expect(started[1]).toBeGreaterThanOrEqual(t0 + 60_000);
    // The retry failed at t0 + 59_999, so it is due at t0 + 89_999: one ms before, it must still wait.
    clock.advance(29_998);
    expect((await server.backend.inspect.jobGet({ id: retried }))?.stage).toBe("requeued");
    clock.advance(1);
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: retried }))?.stage === "success", "retry after its delay");
    expect(retriedStarts[1]! - retriedStarts[0]!).toBeGreaterThanOrEqual(30_000);
  });

  it("J4: enqueueDelayedAt with a Date", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({ clock, handlers: { at: { handle: () => undefined } } });
    const id = await server.publisher.enqueue("at", {}, { runAt: new Date(clock.now() + 5_000) });
    expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("delayed");
    // The loop has seen the delayed job before the clock moves: a delayed enqueue wakes no loop, and a claim
    // still in flight from the server's start (its snapshot without the job) would otherwise sleep a poll
    // interval from the advanced time, which this clock never reaches. A ready job is claimed only after it.
    const ready = await server.publisher.enqueue("at", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: ready }))?.stage === "success", "the ready job");
    expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("delayed");
    clock.advance(5_000);
    await waitFor(async () => (await server.backend.inspect.jobGet({ id }))?.stage === "success", "success");
  });

  it("J5: a chain of continuations runs in order, each after its parent succeeds", async () => {
    const h = harness();
    const order: string[] = [];
    const gate = deferred();
    const server = await h.start({
      workerCount: 4,
      handlers: {
        step: {
          handle: async (_c, p) => {
            const { name } = p as { name: string };
            if (name === "a") await gate.promise;
            order.push(name);
          },
        },
      },
    });
    const a = await server.publisher.enqueue("step", { name: "a" });
    const b = await server.publisher.enqueue("step", { name: "b" }, { parentId: a });
    const c = await server.publisher.enqueue("step", { name: "c" }, { parentId: b });
    expect((await server.backend.inspect.jobGet({ id: b }))?.stage).toBe("waiting");
    gate.resolve();
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: c }))?.stage === "success", "chain end");
    expect(order).toEqual(["a", "b", "c"]);
    // Parent already done: the continuation runs at once.
    const d = await server.publisher.enqueue("step", { name: "d" }, { parentId: a });
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: d }))?.stage === "success", "continuation of a finished parent");
  });

  it("J5: a parent that fails for good fails its waiting continuations down the chain, with the reason", async () => {
    const h = harness();
    const gate = deferred();
    const server = await h.start({
      handlers: {
        bad: {
          handle: async () => {
            await gate.promise;
            throw new Error("card declined");
          },
          retry: () => RetryPolicy.noRetries(),
        },
        next: { handle: () => undefined },
      },
    });
    const parent = await server.publisher.enqueue("bad", {});
    const child = await server.publisher.enqueue("next", {}, { parentId: parent });
    const grandchild = await server.publisher.enqueue("next", {}, { parentId: child });
    gate.resolve();
    const g = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id: grandchild });
      return j?.stage === "failed" ? j : null;
    }, "grandchild failed");
    const c = await server.backend.inspect.jobGet({ id: child });
    expect(c?.stage).toBe("failed");
    expect(c?.lastError).toContain(parent);
    expect(c?.lastError).toContain("card declined");
    expect(g.lastError).toContain(child);
    // A continuation of an already-failed parent fails at once.
    const late = await server.publisher.enqueue("next", {}, { parentId: parent });
    expect((await server.backend.inspect.jobGet({ id: late }))?.stage).toBe("failed");
  });

  it("J5: an unknown parent id is an error and writes nothing", async () => {
    const h = harness();
    const server = await h.start({ handlers: { next: { handle: () => undefined } } });
    const before = await server.backend.inspect.stageCounts();
    const err = await server.publisher.enqueue("next", {}, { parentId: newJobId(Date.now()) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParentNotFoundError);
    expect((err as ParentNotFoundError).code).toBe("PARENT_NOT_FOUND");
    expect(await server.backend.inspect.stageCounts()).toEqual(before);
  });

  it("J6: servers on one database and namespace share work; another namespace never sees it", async () => {
    const h = harness();
    const ranBy: Record<string, string[]> = { a: [], b: [], other: [] };
    const mk = (who: string, namespace: string) =>
      h.start({
        namespace,
        workerCount: 2,
        handlers: {
          job: {
            handle: async (ctx) => {
              ranBy[who]!.push(ctx.jobId);
              await new Promise((r) => setTimeout(r, 2));
            },
          },
        },
      });
    const a = await mk("a", "shop");
    await mk("b", "shop");
    const other = await mk("other", "elsewhere");
    const ids = await a.publisher.enqueueMany(
      "job",
      Array.from({ length: 200 }, (_, i) => ({ i })),
    );
    await waitFor(() => ranBy.a!.length + ranBy.b!.length === 200, "all jobs");
    expect(new Set([...ranBy.a!, ...ranBy.b!])).toEqual(new Set(ids));
    expect(ranBy.a!.length).toBeGreaterThan(0);
    expect(ranBy.b!.length).toBeGreaterThan(0);
    expect(ranBy.other).toEqual([]);
    expect(await other.backend.inspect.jobGet({ id: ids[0]! })).toBeNull();
  });

  it("J4: a short claim reports when the next delayed job of its types is due; a full one reads nothing more", async () => {
    const h = harness();
    const clock = new ManualClock();
    await h.start({ clock, workerCount: 1, handlers: { other: { handle: () => undefined } } });
    const backend = h.db.backend();
    await backend.open();
    const now = clock.now();
    const policy = JSON.stringify(RetryPolicy.noRetries());
    const job = (jobType: string, runAt: number) => ({ id: newJobId(now), jobType, payload: "{}", runAt, retryPolicy: policy });
    await backend.jobs.insertMany({
      jobs: [job("ghost", now), job("ghost", now), job("ghost", now + 5_000), job("ghost", now + 9_000), job("spectre", now + 1_000)],
      now,
    });
    const full = await backend.jobs.claimReady({ owner: "w1", limit: 1, now, leaseExpiresAt: now + 10, jobTypes: ["ghost"] });
    expect(full.jobs).toHaveLength(1);
    expect(full.nextRunAt).toBeUndefined();
    const short = await backend.jobs.claimReady({ owner: "w1", limit: 5, now, leaseExpiresAt: now + 10, jobTypes: ["ghost"] });
    expect(short.jobs).toHaveLength(1);
    expect(short.nextRunAt).toBe(now + 5_000); // not "spectre" (another type), not the jobs just claimed
    const none = await backend.jobs.claimReady({ owner: "w1", limit: 5, now, leaseExpiresAt: now + 10, jobTypes: ["spectre", "ghost"] });
    expect(none).toEqual({ jobs: [], nextRunAt: now + 1_000 });
    expect(await backend.jobs.claimReady({ owner: "w1", limit: 5, now, leaseExpiresAt: now + 10, jobTypes: ["other"] })).toEqual({ jobs: [], nextRunAt: null });
    await backend.close();
  });

  it("J8: a stale claim can neither run again nor overwrite a newer attempt", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({ clock, workerCount: 1, handlers: { other: { handle: () => undefined } } });
    const backend = h.db.backend();
    await backend.open();
    const now = clock.now();
    const id = newJobId(now);
    await backend.jobs.insertMany({ jobs: [{ id, jobType: "ghost", payload: "{}", runAt: now, retryPolicy: JSON.stringify(RetryPolicy.fixed(3, 0)) }], now });
    const [first] = (await backend.jobs.claimReady({ owner: "w1", limit: 5, now, leaseExpiresAt: now + 10, jobTypes: ["ghost"] })).jobs;
    expect(first?.attempt).toBe(1);
    // A duplicate delivery finds nothing to claim: the job left `enqueued`.
    expect((await backend.jobs.claimReady({ owner: "w2", limit: 5, now, leaseExpiresAt: now + 10, jobTypes: ["ghost"] })).jobs).toEqual([]);
    // The lease expires; the job is retried and claimed again (attempt 2).
    await backend.jobs.finishMany({
      finishes: [{ id, attempt: 1, outcome: { kind: "retry", runAt: now, error: "lost" } }],
      now: now + 20,
      retentionMs: 1000,
      leaseExpiredBefore: now + 20,
    });
    const [second] = (await backend.jobs.claimReady({ owner: "w2", limit: 5, now: now + 20, leaseExpiresAt: now + 1000, jobTypes: ["ghost"] })).jobs;
    expect(second?.attempt).toBe(2);
    // The stale first claim's completion is rejected; the current one applies.
    const stale = await backend.jobs.finishMany({ finishes: [{ id, attempt: 1, outcome: { kind: "success" } }], now: now + 30, retentionMs: 1000 });
    expect(stale.applied).toEqual([]);
    expect((await backend.inspect.jobGet({ id }))?.stage).toBe("running");
    const current = await backend.jobs.finishMany({ finishes: [{ id, attempt: 2, outcome: { kind: "success" } }], now: now + 30, retentionMs: 1000 });
    expect(current.applied).toEqual([{ id, attempt: 2 }]);
    await backend.close();
    expect(server.workerCount).toBe(1); // the server never claimed the "ghost" type
  });

  it("J10: enqueueIn on the application's Kysely transaction: rollback leaves nothing, commit runs", async () => {
    const h = harness();
    const ran: string[] = [];
    const server = await h.start({ handlers: { audit: { handle: (ctx) => void ran.push(ctx.jobId) } } });
    const appDb = h.db.appDatabase<{ orders: { id: number } }>();
    try {
      await appDb.schema.createTable("orders").ifNotExists().addColumn("id", "integer").execute();
      let rolledBackId = "";
      await appDb
        .transaction()
        .execute(async (trx) => {
          await trx.insertInto("orders").values({ id: 1 }).execute();
          rolledBackId = await server.publisher.enqueueIn(trx, "audit", { order: 1 });
          throw new Error("rollback");
        })
        .catch(() => undefined);
      expect(await server.backend.inspect.jobGet({ id: rolledBackId })).toBeNull();
      const committed = await appDb.transaction().execute(async (trx) => {
        await trx.insertInto("orders").values({ id: 2 }).execute();
        return server.publisher.enqueueIn(trx, "audit", { order: 2 });
      });
      await waitFor(() => ran.includes(committed), "committed job runs");
      expect(ran).toEqual([committed]);
      expect(await appDb.selectFrom("orders").select("id").execute()).toEqual([{ id: 2 }]);
    } finally {
      await appDb.destroy();
    }
  });

  it("J12: a stored payload that no longer decodes fails that job with a reason; the worker goes on", async () => {
    const h = harness();
    const ran: unknown[] = [];
    const server = await h.start({
      workerCount: 1,
      handlers: {
        typed: {
          handle: (_c, p) => void ran.push(p),
          decode: (json) => {
            const v = JSON.parse(json) as { n?: unknown };
            if (typeof v.n !== "number") throw new Error("field n must be a number");
            return v;
          },
        },
      },
    });
    const backend = h.db.backend();
    await backend.open();
    const now = Date.now();
    const policy = JSON.stringify(RetryPolicy.fixed(3, 0));
    const broken = newJobId(now);
    const wrongField = newJobId(now);
    await backend.jobs.insertMany({
      jobs: [
        { id: broken, jobType: "typed", payload: "{not json", runAt: now, retryPolicy: policy },
        { id: wrongField, jobType: "typed", payload: '{"n":"seven"}', runAt: now, retryPolicy: policy },
      ],
      now,
    });
    await backend.close();
    const good = await server.publisher.enqueue("typed", { n: 7 });
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: good }))?.stage === "success", "good job after bad ones");
    for (const id of [broken, wrongField]) {
      const j = await server.backend.inspect.jobGet({ id });
      expect(j?.stage).toBe("failed");
      expect(j?.attempt).toBe(1);
      expect(j?.lastError).toMatch(/payload of job type "typed" does not decode/);
    }
    expect((await server.backend.inspect.jobGet({ id: wrongField }))?.lastError).toContain("field n must be a number");
    expect(ran).toEqual([{ n: 7 }]);
  });

  it("bulk enqueue stores every job in one call", async () => {
    const h = harness();
    let count = 0;
    const server = await h.start({ workerCount: 4, handlers: { bulk: { handle: () => void count++ } } });
    const ids = await server.publisher.enqueueMany(
      "bulk",
      Array.from({ length: 500 }, (_, i) => ({ i })),
    );
    expect(new Set(ids).size).toBe(500);
    await waitFor(() => count === 500, "500 jobs");
    // Outcomes are written in batches after the handlers return.
    await waitFor(async () => (await server.backend.inspect.stageCounts()).counts.success === 500, "500 successes stored");
  });
});
