// X6 on every backend: a handler's resolved value is stored with its success (the success write
// itself) and returned by waitFor; no result is undefined; a result over 64 KiB of JSON, or one JSON
// cannot hold (a BigInt), fails the attempt with INVALID_RESULT, retried per policy, and the worker
// goes on. waitFor resolves at once for a job already finished, wakes on the commit, rejects past
// its timeout (WAIT_TIMEOUT), for an unknown id (JOB_NOT_FOUND) and for bad options
// (INVALID_ARGUMENT); a failed job resolves with stage failed and its error. A partition head's
// result is stored by its finish too, and the dashboard's job detail shows the result.
import { describe, expect, it } from "vitest";
import { RetryPolicy, topic } from "@later/runtime";
import { createDashboard } from "@later/runtime/dashboard";
import { BACKENDS } from "./backends.js";
import { codeOf, deferred, useHarness } from "./harness.js";

describe.each(BACKENDS)("job results and waitFor on $name", (entry) => {
  const harness = useHarness(entry);

  it("X6: the result is stored with the success and waitFor returns it; no result is undefined", async () => {
    const h = harness();
    const server = await h.start({
      handlers: {
        compute: { handle: async (_ctx, payload) => ({ doubled: (payload as { n: number }).n * 2, list: [1, "two", null] }) },
        nothing: { handle: async () => undefined },
        scalar: { handle: () => "plain text" },
      },
    });
    const id = await server.publisher.enqueue("compute", { n: 21 });
    const none = await server.publisher.enqueue("nothing", {});
    const text = await server.publisher.enqueue("scalar", {});
    const done = await server.waitFor(id, { timeoutMs: 10_000 });
    expect(done).toEqual({ stage: "success", result: { doubled: 42, list: [1, "two", null] } });
    const empty = await server.waitFor(none, { timeoutMs: 10_000 });
    expect(empty).toEqual({ stage: "success" });
    expect("result" in empty).toBe(false);
    expect(await server.publisher.waitFor(text, { timeoutMs: 10_000 })).toEqual({ stage: "success", result: "plain text" });
    const stored = await server.backend.inspect.jobGet({ id });
    expect(stored?.result).toBe('{"doubled":42,"list":[1,"two",null]}');
    expect((await server.backend.inspect.jobGet({ id: none }))?.result).toBeNull();
    const dashboard = createDashboard({ backend: server.backend });
    const detail = (await (await dashboard(new Request(`http://localhost/api/jobs/${id}`))).json()) as { result: unknown };
    expect(detail.result).toEqual({ doubled: 42, list: [1, "two", null] });
  });

  it("X6: waitFor on a job already finished resolves at once; a waiter wakes on the commit, well before its safety poll", async () => {
    const h = harness();
    const release = deferred();
    const server = await h.start({
      handlers: {
        quick: { handle: () => 1 },
        gated: {
          handle: async () => {
            await release.promise;
            return "gated";
          },
        },
      },
    });
    const quick = await server.publisher.enqueue("quick", {});
    await server.waitFor(quick, { timeoutMs: 10_000 });
    const started = Date.now();
    expect(await server.waitFor(quick, { timeoutMs: 10_000, safetyPollMs: 60_000 })).toEqual({ stage: "success", result: 1 });
    expect(Date.now() - started).toBeLessThan(5_000);
    const gated = await server.publisher.enqueue("gated", {});
    const waiting = server.waitFor(gated, { timeoutMs: 30_000, safetyPollMs: 60_000 });
    const alsoWaiting = server.waitFor(gated, { timeoutMs: 30_000, safetyPollMs: 60_000 });
    const releasedAt = Date.now();
    release.resolve();
    expect(await waiting).toEqual({ stage: "success", result: "gated" });
    expect(await alsoWaiting).toEqual({ stage: "success", result: "gated" });
    expect(Date.now() - releasedAt).toBeLessThan(20_000); // the commit woke them: the safety poll is 60 s
  });

  it("X6: a result over 64 KiB, or a BigInt, fails the attempt with INVALID_RESULT, retried per policy; the worker goes on", async () => {
    const h = harness();
    let bigCalls = 0;
    const server = await h.start({
      workerCount: 1,
      defaultRetryPolicy: RetryPolicy.fixed(2, 10),
      handlers: {
        big: {
          handle: () => {
            bigCalls++;
            return bigCalls === 1 ? { blob: "x".repeat(70_000) } : { blob: "small" };
          },
        },
        bigint: { handle: () => ({ n: 10n }) },
        cyclic: {
          handle: () => {
            const a: Record<string, unknown> = {};
            a.self = a;
            return a;
          },
        },
        fn: { handle: () => () => 1 },
        fine: { handle: () => ({ ok: true }) },
      },
    });
    const big = await server.publisher.enqueue("big", {});
    const bigint = await server.publisher.enqueue("bigint", {});
    const cyclic = await server.publisher.enqueue("cyclic", {});
    const fn = await server.publisher.enqueue("fn", {});
    const fine = await server.publisher.enqueue("fine", {});
    // Over 64 KiB at the first attempt: failed and retried; the second attempt's small result is stored.
    expect(await server.waitFor(big, { timeoutMs: 20_000 })).toEqual({ stage: "success", result: { blob: "small" } });
    const bigJob = await server.backend.inspect.jobGet({ id: big });
    expect(bigJob?.attempt).toBe(2);
    expect(bigJob?.stages.map((s) => s.stage)).toContain("requeued");
    expect(bigJob?.lastError).toMatch(/^INVALID_RESULT: .*70011 bytes, over the limit of 65536/);
    // Never storable: its retries are spent and it fails, with the reason.
    const failed = await server.waitFor(bigint, { timeoutMs: 20_000 });
    expect(failed.stage).toBe("failed");
    expect(failed.error).toMatch(/^INVALID_RESULT: the handler of "bigint" resolved to a result that cannot be stored: it is not JSON/);
    expect("result" in failed).toBe(false);
    expect((await server.backend.inspect.jobGet({ id: bigint }))?.attempt).toBe(3);
    expect((await server.waitFor(cyclic, { timeoutMs: 20_000 })).error).toMatch(/^INVALID_RESULT: .*not JSON/);
    expect((await server.waitFor(fn, { timeoutMs: 20_000 })).error).toMatch(/^INVALID_RESULT: .*turned the function into nothing/);
    // The one worker went on.
    expect(await server.waitFor(fine, { timeoutMs: 20_000 })).toEqual({ stage: "success", result: { ok: true } });
  });

  it("X6 with X10: an attempt hook's next() resolves with the handler's value; the handler's own value is stored, whatever the hooks resolve to", async () => {
    const h = harness();
    const seen: unknown[] = [];
    const server = await h.start({
      middleware: [
        // Drops the value (resolves to nothing): the result is kept all the same.
        { attempt: async (_ctx, next) => void (await next()) },
        // Sees the value, and resolves to another one: not stored.
        {
          attempt: async (_ctx, next) => {
            const value = await next();
            seen.push(value);
            return { replaced: true };
          },
        },
      ],
      handlers: { compute: { handle: () => ({ answer: 42 }) }, huge: { handle: () => "x".repeat(70_000) } },
    });
    const id = await server.publisher.enqueue("compute", {});
    expect(await server.waitFor(id, { timeoutMs: 10_000 })).toEqual({ stage: "success", result: { answer: 42 } });
    expect(seen).toEqual([{ answer: 42 }]);
    const huge = await server.publisher.enqueue("huge", {}, { retryPolicy: RetryPolicy.fixed(0, 10) });
    const failed = await server.waitFor(huge, { timeoutMs: 10_000 });
    expect(failed.stage).toBe("failed");
    expect(failed.error).toContain("INVALID_RESULT");
  });

  it("X6: a failed job resolves with stage failed and its error", async () => {
    const h = harness();
    const server = await h.start({
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: {
        boom: {
          handle: () => {
            throw new Error("boom");
          },
        },
      },
    });
    const id = await server.publisher.enqueue("boom", {});
    expect(await server.waitFor(id, { timeoutMs: 10_000 })).toEqual({ stage: "failed", error: "boom" });
  });

  it("X6: waitFor rejects past its timeout (WAIT_TIMEOUT), for an unknown id (JOB_NOT_FOUND) and for bad options (INVALID_ARGUMENT)", async () => {
    const h = harness();
    const server = await h.start({ handlers: { later: { handle: () => undefined } } });
    const id = await server.publisher.enqueue("later", {}, { delayMs: 3_600_000 });
    const started = Date.now();
    const timedOut = await server.waitFor(id, { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(timedOut).toMatchObject({ code: "WAIT_TIMEOUT", jobId: id, timeoutMs: 300 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(await codeOf(server.waitFor("01JUNKNOWNJOBID0000000000", { timeoutMs: 5_000 }))).toBe("JOB_NOT_FOUND");
    expect(await codeOf(server.waitFor(id, { timeoutMs: 0 }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.waitFor(id, { timeoutMs: 1.5 }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.waitFor(id, undefined as never))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.waitFor(id, { timeoutMs: 1_000, safetyPollMs: 10 }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.waitFor(id, { timeoutMs: 1_000, pollMs: 10 } as never))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.waitFor("" as never, { timeoutMs: 1_000 }))).toBe("INVALID_ARGUMENT");
  });

  it("X6: an awaited continuation failed with its parent wakes its waiter on that commit (the children's failure notifies too)", async () => {
    const h = harness();
    const release = deferred();
    const server = await h.start({
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: {
        parent: {
          handle: async () => {
            await release.promise;
            throw new Error("parent broke");
          },
        },
        child: { handle: () => "never runs" },
      },
    });
    const parent = await server.publisher.enqueue("parent", {});
    const child = await server.publisher.enqueue("child", {}, { parentId: parent });
    const waiting = server.waitFor(child, { timeoutMs: 30_000, safetyPollMs: 60_000 });
    const releasedAt = Date.now();
    release.resolve();
    const done = await waiting;
    expect(done.stage).toBe("failed");
    expect(done.error).toMatch(/parent broke/);
    expect(Date.now() - releasedAt).toBeLessThan(20_000);
  });

  it("X6: a wait still pending at shutdown rejects with SERVER_STOPPED", async () => {
    const h = harness();
    const server = await h.start({ handlers: { later: { handle: () => undefined } } });
    const id = await server.publisher.enqueue("later", {}, { delayMs: 3_600_000 });
    const waiting = codeOf(server.waitFor(id, { timeoutMs: 60_000 }));
    await new Promise((r) => setImmediate(r));
    await server.shutdown({ deadlineMs: 0 });
    expect(await waiting).toBe("SERVER_STOPPED");
  });

  it("X6: a job deleted while awaited is JOB_NOT_FOUND at the next read", async () => {
    const h = harness();
    const server = await h.start({ handlers: { work: { handle: () => 5 } } });
    const id = await server.publisher.enqueue("work", {});
    await server.waitFor(id, { timeoutMs: 10_000 });
    await server.publisher.delete(id);
    expect(await codeOf(server.waitFor(id, { timeoutMs: 5_000 }))).toBe("JOB_NOT_FOUND");
  });

  it("X6: a partition head's result is stored by its finish", async () => {
    const h = harness();
    const server = await h.start({
      topics: [topic("ledger", 2)],
      handlers: { post: { handle: (_ctx, payload) => ({ posted: (payload as { n: number }).n }) } },
    });
    const first = await server.publisher.enqueueToPartition("post", { n: 1 }, { topic: "ledger", key: "acct" });
    const second = await server.publisher.enqueueToPartition("post", { n: 2 }, { topic: "ledger", key: "acct" });
    expect(await server.waitFor(first, { timeoutMs: 10_000 })).toEqual({ stage: "success", result: { posted: 1 } });
    expect(await server.waitFor(second, { timeoutMs: 10_000 })).toEqual({ stage: "success", result: { posted: 2 } });
  });
});
