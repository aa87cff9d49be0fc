/**
 * X3: cancel from outside, on both backends: every unfinished stage ends
 * `cancelled` at once (a running attempt's signal aborts, nothing of it is
 * written), waiting continuations go with their parent, a finished job is
 * `false`, an unknown id `JOB_NOT_FOUND`, bad input `INVALID_ARGUMENT`; a
 * cancelled job retries and deletes; a cancelled partition head lets its
 * partition go on; the filter form in batches; an attempt middleware sees
 * the cancel as `next()` rejecting with `JOB_CANCELLED` (X10), and the
 * metrics label the attempt `cancelled`.
 */
import { describe, expect, it } from "vitest";
import { JobPublisher, RetryPolicy, topic, type BackgroundJobServer, type ServerEvent } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { codeOf, deferred, settled, useHarness, waitFor } from "./harness.js";

/** A publisher on the server's backend that also takes type "nobody", which no server here handles (it stays where it is stored). */
function anyTypePublisher(server: BackgroundJobServer<unknown>): JobPublisher<unknown> {
  return new JobPublisher({
    backend: server.backend,
    clock: { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) },
    defaultRetryPolicy: null,
    encoders: new Map([
      ["nobody", JSON.stringify],
      ["ok", JSON.stringify],
      ["fails", JSON.stringify],
    ]),
    topics: new Map(),
    retentionMs: 60_000,
    onCommitted: () => {},
  });
}

const actions = (events: ServerEvent[]) => events.flatMap((e) => (e.type === "job-action" ? [e] : []));

describe.each(BACKENDS)("cancel (X3) on $name", (entry) => {
  const harness = useHarness(entry);

  it("X3: enqueued, delayed, waiting and requeued jobs end cancelled at once, the reason noted; their waiting continuations down the chain too", async () => {
    const h = harness();
    const server = await h.start({
      handlers: {
        fails: { handle: () => Promise.reject(new Error("try later")), retry: () => RetryPolicy.fixed(3, 3_600_000) },
      },
    });
    const p = server.publisher;
    const get = (id: string) => server.backend.inspect.jobGet({ id });
    // A type no server here handles stays enqueued.
    const any = anyTypePublisher(server as BackgroundJobServer<unknown>);
    const enqueued = await any.enqueue("nobody", {});
    const delayed = await p.enqueue("fails", {}, { delayMs: 3_600_000 });
    const child = await any.enqueue("nobody", { child: 1 }, { parentId: delayed });
    const grandchild = await any.enqueue("nobody", { child: 2 }, { parentId: child });
    const requeued = await p.enqueue("fails", {});
    await waitFor(async () => (await get(requeued))?.stage === "requeued", "the job to be requeued");
    expect((await get(child))?.stage).toBe("waiting");

    expect(await server.cancel(enqueued)).toBe(true);
    expect(await server.cancel(requeued, "not needed any more")).toBe(true);
    expect(await server.cancel(child, "its branch is dropped")).toBe(true);
    const cancelled = (await get(child))!;
    expect(cancelled.stage).toBe("cancelled");
    expect(cancelled.stages.at(-1)).toMatchObject({ stage: "cancelled", note: "its branch is dropped" });
    expect(cancelled.expiresAt).not.toBeNull();
    // The grandchild, waiting on it, goes with it; the delayed parent stays.
    expect((await get(grandchild))?.stage).toBe("cancelled");
    expect((await get(delayed))?.stage).toBe("delayed");
    expect(await server.cancel(delayed)).toBe(true);
    const req = (await get(requeued))!;
    expect([req.stage, req.attempt, req.lastError]).toEqual(["cancelled", 1, "try later"]);
    expect(req.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "cancelled"]);
    expect((await get(enqueued))!.stages.at(-1)).toEqual({ stage: "cancelled", at: expect.any(Number) });
    expect(actions(h.events).map((a) => a.jobIds)).toEqual([[enqueued], [requeued], [child], [delayed]]);
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ cancelled: 5, enqueued: 0, delayed: 0, waiting: 0, requeued: 0 });

    // Finished: false, nothing changed. Unknown: JOB_NOT_FOUND. Bad input: INVALID_ARGUMENT.
    const before = await get(enqueued);
    expect(await server.cancel(enqueued, "again")).toBe(false);
    expect(await get(enqueued)).toEqual(before);
    expect(await codeOf(server.cancel("01J00000000000000000000000"))).toBe("JOB_NOT_FOUND");
    expect(await codeOf(server.cancel(""))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.cancel(42 as never))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.cancel(enqueued, 7 as never))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.cancel(enqueued, "x".repeat(1_001)))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.cancelJobs({ stage: "success" }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.cancelJobs({}, { batchSize: 0 }))).toBe("INVALID_ARGUMENT");

    // A continuation of a cancelled job is stored cancelled (it could never run), terminal.
    const late = (await get(await any.enqueue("nobody", {}, { parentId: delayed })))!;
    expect([late.stage, late.expiresAt !== null]).toEqual(["cancelled", true]);
    // A cancelled job is finished: deleted like one.
    await server.delete(enqueued);
    expect(await get(enqueued)).toBeNull();
  });

  it("X3: a running job's signal aborts with JOB_CANCELLED; it ends cancelled whatever its handler does, not retried, not failed", async () => {
    const h = harness();
    const started = deferred();
    const release = deferred();
    const finished = deferred();
    let signalReason: unknown;
    let runs = 0;
    const server = await h.start({
      leaseMs: 60_000,
      handlers: {
        slow: {
          handle: async (ctx) => {
            runs++;
            ctx.signal.addEventListener("abort", () => (signalReason = ctx.signal.reason));
            started.resolve();
            try {
              await release.promise; // ignores the signal for a while
              throw new Error("fails after the cancel");
            } finally {
              finished.resolve();
            }
          },
          retry: () => RetryPolicy.fixed(3, 0),
        },
      },
    });
    const id = await server.publisher.enqueue("slow", {});
    const child = await server.publisher.enqueue("slow", {}, { parentId: id });
    await started.promise;
    expect(await server.cancel(id, "operator said so")).toBe(true);
    expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("cancelled");
    expect((await server.backend.inspect.jobGet({ id: child }))?.stage).toBe("cancelled");
    await waitFor(() => signalReason !== undefined, "the signal to abort");
    expect(signalReason).toMatchObject({ code: "JOB_CANCELLED", jobId: id, reason: "operator said so" });
    await waitFor(() => h.events.some((e) => e.type === "job-cancelled" && e.jobId === id), "the job-cancelled event");
    release.resolve();
    // Its throw is not written: no retry, no failure.
    await finished.promise;
    const stored = await settled(() => server.backend.inspect.jobGet({ id }));
    expect(h.events.filter((e) => e.type === "error")).toEqual([]);
    expect(stored.stage).toBe("cancelled");
    expect((await server.backend.inspect.jobGet({ id }))?.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "cancelled"]);
    expect(runs).toBe(1);
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ cancelled: 2, running: 0, requeued: 0, failed: 0 });
  });

  it("X3/X10: an attempt middleware sees next() reject with JOB_CANCELLED while the handler still ignores its signal; nothing written; metrics say cancelled, not failed", async () => {
    const h = harness();
    const started = deferred();
    const release = deferred();
    const seen = deferred<unknown>();
    const server = await h.start({
      leaseMs: 60_000,
      jobTimeoutMs: null, // no watchdog: the hook alone makes next() reject
      middleware: [
        {
          attempt: async (_ctx, next) => {
            try {
              return await next();
            } catch (error) {
              seen.resolve(error);
              throw error;
            }
          },
        },
      ],
      handlers: {
        slow: {
          handle: async () => {
            started.resolve();
            await release.promise; // ignores its signal
          },
        },
      },
    });
    const id = await server.publisher.enqueue("slow", {});
    await started.promise;
    expect(await server.cancel(id, "stop it")).toBe(true);
    expect(await seen.promise).toMatchObject({ code: "JOB_CANCELLED", jobId: id, reason: "stop it" });
    const sample = (text: string, name: string, outcome: string) =>
      [...text.matchAll(new RegExp(`^${name}\\{[^}]*outcome="${outcome}"[^}]*\\} (\\S+)$`, "gm"))].reduce((n, m) => n + Number(m[1]), 0);
    await waitFor(async () => sample(await server.metrics(), "later_job_handler_duration_seconds_count", "cancelled") === 1, "the cancelled attempt's metrics");
    const text = await server.metrics();
    expect([sample(text, "later_worker_commands_total", "discarded"), sample(text, "later_worker_commands_total", "failed")]).toEqual([1, 0]);
    expect(sample(text, "later_job_handler_duration_seconds_count", "failed")).toBe(0);
    release.resolve();
    const stored = await settled(() => server.backend.inspect.jobGet({ id }));
    expect(stored.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "cancelled"]);
    expect(h.events.filter((e) => e.type === "error")).toEqual([]);
  });

  it("X3: a cancelled job retries: back to enqueued, runs again; a cancelled continuation whose parent has not succeeded is refused", async () => {
    const h = harness();
    const server = await h.start({ handlers: { ok: { handle: () => undefined } } });
    const p = server.publisher;
    const id = await p.enqueue("ok", {}, { delayMs: 3_600_000 });
    const child = await p.enqueue("ok", {}, { parentId: id });
    expect(await server.cancel(id)).toBe(true);
    expect(await codeOf(server.retry(child))).toBe("JOB_ACTION_REFUSED");
    await server.retry(id);
    const done = await settled(() => server.backend.inspect.jobGet({ id }));
    expect(done.stage).toBe("success");
    expect(done.stages.map((s) => s.stage)).toEqual(["delayed", "cancelled", "enqueued", "running", "success"]);
    expect((await server.backend.inspect.jobGet({ id: child }))?.stage).toBe("cancelled");
  });

  it("X3: a cancelled partition head, running or blocking, lets its partition go on to the next job", async () => {
    const h = harness();
    const started = deferred();
    const ran: string[] = [];
    let aborted: unknown;
    const server = await h.start({
      topics: [topic("orders", 1)],
      leaseMs: 60_000,
      handlers: {
        order: {
          handle: async (ctx, payload) => {
            const { name } = payload as { name: string };
            ran.push(name);
            if (name === "hangs") {
              started.resolve();
              await new Promise((r) => ctx.signal.addEventListener("abort", r));
              aborted = ctx.signal.reason;
            }
          },
        },
      },
    });
    const p = server.publisher;
    const at = { topic: "orders", partition: 0 };
    const hangs = await p.enqueueToPartition("order", { name: "hangs" }, at);
    const next = await p.enqueueToPartition("order", { name: "next" }, at);
    await started.promise;
    expect(await server.cancel(hangs)).toBe(true);
    expect((await settled(() => server.backend.inspect.jobGet({ id: next }))).stage).toBe("success");
    await waitFor(() => aborted !== undefined, "the head's signal to abort");
    expect(aborted).toMatchObject({ code: "JOB_CANCELLED" });
    expect((await server.backend.inspect.jobGet({ id: hangs }))?.stage).toBe("cancelled");
    // A delayed head blocks the partition; cancelled, the job behind it runs.
    const blocker = await p.enqueueToPartition("order", { name: "blocker" }, at, { delayMs: 3_600_000 });
    const behind = await p.enqueueToPartition("order", { name: "behind" }, at);
    expect(await server.cancel(blocker)).toBe(true);
    expect((await settled(() => server.backend.inspect.jobGet({ id: behind }))).stage).toBe("success");
    expect(ran).toEqual(["hangs", "next", "behind"]);
    await waitFor(async () => (await server.backend.inspect.partitionDepth()).partitions[0]?.unfinished === 0, "partition drained");
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ cancelled: 2, success: 2, running: 0 });
  });

  it("X3: cancelJobs takes every unfinished job matching the filter in batches; countMatching says how many first", async () => {
    const h = harness();
    const server = await h.start({ handlers: { ok: { handle: () => undefined } } });
    const p = server.publisher;
    const delayed = await p.enqueueMany(
      "ok",
      Array.from({ length: 5 }, (_, i) => ({ i })),
      { delayMs: 3_600_000 },
    );
    const any = anyTypePublisher(server as BackgroundJobServer<unknown>);
    const others = await any.enqueueMany(
      "nobody",
      Array.from({ length: 4 }, (_, i) => ({ i })),
    );
    await any.enqueue("nobody", {}, { parentId: others[0]! });
    expect(await server.backend.control.countMatching({ action: "cancel", filter: { stage: "delayed" } })).toBe(5);
    expect(await server.backend.control.countMatching({ action: "cancel", filter: { jobType: "nobody" } })).toBe(5);
    expect(await server.cancelJobs({ stage: "delayed" }, { batchSize: 2, reason: "bulk" })).toBe(5);
    expect(actions(h.events).map((a) => a.jobIds.length)).toEqual([2, 2, 1]);
    for (const id of delayed) expect((await server.backend.inspect.jobGet({ id }))?.stages.at(-1)?.note).toBe("bulk");
    // The waiting continuation goes with its parent (counted by the filter only as a match of its own).
    expect(await server.cancelJobs({ jobType: "nobody", stage: "enqueued" })).toBe(4);
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ cancelled: 10, delayed: 0, enqueued: 0, waiting: 0 });
    expect(await server.cancelJobs({})).toBe(0);
  });
});
