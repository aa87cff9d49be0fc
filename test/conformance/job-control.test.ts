/**
 * X7: retry and delete from outside, on both backends: by id (refusals
 * change nothing), a partitioned job retried to the end of its partition,
 * and the filter forms in batches with the counters kept exact.
 */
import { describe, expect, it } from "vitest";
import { RetryPolicy, topic, type ServerEvent } from "@later/runtime";
import { JobController } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";
import { codeOf, settled, useHarness, waitFor } from "./harness.js";

const actions = (events: ServerEvent[]) => events.flatMap((e) => (e.type === "job-action" ? [e] : []));

describe.each(BACKENDS)("job control (X7) on $name", (entry) => {
  const harness = useHarness(entry);

  it("X7: retry(id) puts a failed job back to enqueued; it runs again, its history keeps both runs", async () => {
    const h = harness();
    let runs = 0;
    const server = await h.start({
      handlers: {
        flaky: {
          handle: () => {
            if (runs++ === 0) throw new Error("first run fails");
          },
          retry: () => RetryPolicy.noRetries(),
        },
      },
    });
    const id = await server.publisher.enqueue("flaky", {});
    const child = await server.publisher.enqueue("flaky", { child: true }, { parentId: id });
    const failed = await settled(() => server.backend.inspect.jobGet({ id }));
    expect((await server.backend.inspect.jobGet({ id: child }))?.stage).toBe("failed");
    expect(failed).toMatchObject({ stage: "failed", attempt: 1, lastError: "first run fails" });
    await server.retry(id);
    const done = await settled(() => server.backend.inspect.jobGet({ id }));
    expect(done.stage).toBe("success");
    // The attempt count goes on (claims are fenced by it); the last error is kept.
    expect(done.attempt).toBe(2);
    expect(done.lastError).toBe("first run fails");
    expect(done.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "failed", "enqueued", "running", "success"]);
    expect(done.expiresAt).not.toBeNull();
    expect(actions(h.events)).toEqual([{ type: "job-action", action: "retry", jobIds: [id] }]);
    // Its continuation, failed with it, is not revived by the parent's retry.
    expect((await server.backend.inspect.jobGet({ id: child }))?.stage).toBe("failed");
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ success: 1, failed: 1, enqueued: 0 });
    // A deleted parent is gone for continuations too: enqueueing one is PARENT_NOT_FOUND, nothing written.
    await server.delete(id);
    expect(await codeOf(server.publisher.enqueue("flaky", {}, { parentId: id }))).toBe("PARENT_NOT_FOUND");
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ success: 0, failed: 1, enqueued: 0 });
  });

  it("X7/J5: a continuation that failed with its parent is not retried (refused by id, skipped by the filter); one that ran and failed is", async () => {
    const h = harness();
    const server = await h.start({
      handlers: {
        step: {
          handle: (_ctx, payload) => {
            if ((payload as { fail?: boolean }).fail) throw new Error("fails");
          },
          retry: () => RetryPolicy.noRetries(),
        },
      },
    });
    const parent = await server.publisher.enqueue("step", { fail: true });
    const orphan = await server.publisher.enqueue("step", {}, { parentId: parent });
    const ok = await server.publisher.enqueue("step", {});
    const ranAndFailed = await server.publisher.enqueue("step", { fail: true }, { parentId: ok });
    for (const id of [parent, orphan, ok, ranAndFailed]) await settled(() => server.backend.inspect.jobGet({ id }));
    const orphanBefore = await server.backend.inspect.jobGet({ id: orphan });
    expect(orphanBefore).toMatchObject({ stage: "failed", attempt: 0 });
    const refusal = await server.retry(orphan).catch((e: unknown) => e);
    expect(refusal).toMatchObject({ code: "JOB_ACTION_REFUSED" });
    expect(String((refusal as Error).message)).toMatch(/continuation of .* which has not succeeded/);
    expect(await server.backend.inspect.jobGet({ id: orphan })).toEqual(orphanBefore);
    expect(await server.backend.control.countMatching({ action: "retry", filter: { stage: "failed" } })).toBe(2);
    // The filter takes the parent and the continuation that ran, not the one that never ran.
    expect(await server.retryJobs({ stage: "failed" })).toBe(2);
    expect(
      actions(h.events)
        .flatMap((e) => e.jobIds)
        .sort(),
    ).toEqual([parent, ranAndFailed].sort());
    expect((await server.backend.inspect.jobGet({ id: orphan }))?.stage).toBe("failed");
  });

  it("X7: retry of a job that has not failed, delete of an unfinished one, or an unknown id: a typed error, nothing changed", async () => {
    const h = harness();
    const server = await h.start({ handlers: { ok: { handle: () => undefined } } });
    const delayed = await server.publisher.enqueue("ok", {}, { delayMs: 3_600_000 });
    const succeeded = await server.publisher.enqueue("ok", {});
    await settled(() => server.backend.inspect.jobGet({ id: succeeded }));
    const before = [await server.backend.inspect.jobGet({ id: delayed }), await server.backend.inspect.jobGet({ id: succeeded })];
    const countsBefore = await server.backend.inspect.stageCounts();
    expect(await codeOf(server.retry(delayed))).toBe("JOB_ACTION_REFUSED");
    expect(await codeOf(server.retry(succeeded))).toBe("JOB_ACTION_REFUSED");
    await expect(server.retry(succeeded)).rejects.toThrow(/it is success, and only failed or cancelled jobs can be retried/);
    expect(await codeOf(server.delete(delayed))).toBe("JOB_ACTION_REFUSED");
    expect(await codeOf(server.retry("01kzzzzzzzzzzzzzzzzzzzzzzz"))).toBe("JOB_NOT_FOUND");
    expect(await codeOf(server.delete("01kzzzzzzzzzzzzzzzzzzzzzzz"))).toBe("JOB_NOT_FOUND");
    expect(await codeOf(server.retry(42 as never))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.retryJobs({ stage: "success" }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.deleteJobs({ stage: "enqueued" }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.deleteJobs({}, { batchSize: 0 }))).toBe("INVALID_ARGUMENT");
    expect([await server.backend.inspect.jobGet({ id: delayed }), await server.backend.inspect.jobGet({ id: succeeded })]).toEqual(before);
    expect(await server.backend.inspect.stageCounts()).toEqual(countsBefore);
    expect(actions(h.events)).toEqual([]);
    // A finished job is deleted with its history.
    await server.delete(succeeded);
    expect(await server.backend.inspect.jobGet({ id: succeeded })).toBeNull();
    expect((await server.backend.inspect.stageCounts()).counts).toMatchObject({ success: 0, delayed: 1 });
    expect(actions(h.events)).toEqual([{ type: "job-action", action: "delete", jobIds: [succeeded] }]);
  });

  it("X7: a retried partition job goes to the end of its partition, behind what is queued there now", async () => {
    const h = harness();
    const ran: string[] = [];
    let failFirst = true;
    const server = await h.start({
      topics: [topic("orders", 2)],
      handlers: {
        order: {
          handle: (_ctx, payload) => {
            const { name } = payload as { name: string };
            ran.push(name);
            if (name === "a" && failFirst) {
              failFirst = false;
              throw new Error("a fails once");
            }
          },
          retry: () => RetryPolicy.noRetries(),
        },
      },
    });
    const p = server.publisher;
    const at = { topic: "orders", partition: 0 };
    const a = await p.enqueueToPartition("order", { name: "a" }, at);
    const b = await p.enqueueToPartition("order", { name: "b" }, at);
    await settled(() => server.backend.inspect.jobGet({ id: b }));
    expect((await server.backend.inspect.jobGet({ id: a }))?.stage).toBe("failed");
    // A head delayed by an hour blocks the partition; the retried job goes behind it.
    const head = await p.enqueueToPartition("order", { name: "head" }, at, { delayMs: 3_600_000 });
    await server.retry(a);
    const retried = (await server.backend.inspect.jobGet({ id: a }))!;
    const blocker = (await server.backend.inspect.jobGet({ id: head }))!;
    expect(retried.stage).toBe("enqueued");
    expect(retried.seq!).toBeGreaterThan(blocker.seq!);
    const part = (await server.backend.inspect.partitionList({ topic: "orders" })).partitions[0]!;
    expect(part).toMatchObject({ headJobId: head, depth: 2 });
    expect((await server.backend.inspect.partitionDepth()).partitions[0]).toMatchObject({ partition: 0, unfinished: 2 });
    // Once the head is out of the way, the retried job runs, and succeeds this time.
    expect(await p.forceFailPartitionHead(at, "skip")).toBe(head);
    const final = await settled(() => server.backend.inspect.jobGet({ id: a }));
    expect([final.stage, final.lastError, ran]).toEqual(["success", "a fails once", ["a", "b", "a"]]);
    expect((await server.backend.inspect.partitionDepth()).partitions[0]).toMatchObject({ partition: 0, unfinished: 0 });
  });

  it("X7: retryJobs and deleteJobs take every matching job in batches, skip the rest, and keep the counters exact", async () => {
    const h = harness();
    const server = await h.start({
      workerCount: 4,
      retentionMs: 3_600_000,
      handlers: {
        doomed: {
          handle: () => {
            throw new Error("never works");
          },
          retry: () => RetryPolicy.noRetries(),
        },
        other: {
          handle: () => {
            throw new Error("nor this");
          },
          retry: () => RetryPolicy.noRetries(),
        },
        ok: { handle: () => undefined },
      },
    });
    const p = server.publisher;
    await p.enqueueMany(
      "doomed",
      Array.from({ length: 11 }, (_, i) => ({ i })),
    );
    await p.enqueueMany(
      "other",
      Array.from({ length: 3 }, (_, i) => ({ i })),
    );
    await p.enqueueMany(
      "ok",
      Array.from({ length: 9 }, (_, i) => ({ i })),
    );
    const settledCounts = (failed: number, success: number) =>
      waitFor(async () => {
        const { counts } = await server.backend.inspect.stageCounts();
        return counts.failed === failed && counts.success === success && counts.enqueued + counts.running + counts.requeued === 0 ? counts : null;
      }, `${failed} failed and ${success} succeeded`);
    await settledCounts(14, 9);
    await server.shutdown({ deadlineMs: 1_000 });

    // Retried with no server running: the batches of 4 each commit, and only `doomed` jobs change.
    const backend = h.db.backend();
    await backend.open();
    const { JobPublisher } = await import("@later/runtime");
    const events: string[][] = [];
    const publisher = new JobPublisher({
      backend,
      clock: { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) },
      defaultRetryPolicy: null,
      encoders: new Map(),
      topics: new Map(),
      retentionMs: 60_000,
      onCommitted: () => {},
      onJobAction: (_action, ids) => events.push([...ids]),
    });
    try {
      const controller = new JobController(backend, { now: () => Date.now(), sleep: async () => undefined }, () => {});
      expect(await controller.countMatching("retry", { jobType: "doomed" })).toBe(11);
      expect(await controller.countMatching("delete", { stage: "success" })).toBe(9);
      expect(await controller.countMatching("delete", {})).toBe(23);
      expect(await publisher.retryJobs({ jobType: "doomed" }, { batchSize: 4 })).toBe(11);
      expect(await controller.countMatching("retry", {})).toBe(3);
      expect(events.map((e) => e.length)).toEqual([4, 4, 3]);
      expect((await backend.inspect.stageCounts()).counts).toMatchObject({ enqueued: 11, failed: 3, success: 9 });
      expect((await backend.inspect.jobList({ stage: "enqueued", limit: 100 })).every((j) => j.jobType === "doomed")).toBe(true);
      // Nothing left to take: a second call changes nothing.
      expect(await publisher.retryJobs({ jobType: "doomed" }, { batchSize: 4 })).toBe(0);
      // Delete: success only first, then every finished job; unfinished ones are skipped.
      expect(await publisher.deleteJobs({ stage: "success" }, { batchSize: 2 })).toBe(9);
      expect(await publisher.deleteJobs({}, { batchSize: 2 })).toBe(3);
      const { counts } = await backend.inspect.stageCounts();
      expect(counts).toMatchObject({ enqueued: 11, failed: 0, success: 0 });
      const all = await backend.inspect.jobList({ limit: 100 });
      expect(all.map((j) => j.stage)).toEqual(Array(11).fill("enqueued"));
    } finally {
      publisher.stop();
      await backend.close();
    }
  });
});
