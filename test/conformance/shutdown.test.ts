// J9: shutdown hands work back. A handler still running at the shutdown deadline has its signal
// aborted and its job put back at once (ready for another server now, the attempt not counted, no
// lease), with a `job-released` event; a partition head likewise, with its partition freed. Whatever
// the abandoned handler does afterwards is not written.
import { describe, expect, it } from "vitest";
import { topic, type ServerEvent } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { deferred, useHarness, waitFor, type Harness } from "./harness.js";

/** A handler that ignores its signal until the test opens `gate`, and what it saw. */
function stubbornHandler() {
  const gate = deferred();
  const seen = { signals: [] as AbortSignal[], finished: 0 };
  return {
    gate,
    seen,
    handle: async (ctx: { signal: AbortSignal }) => {
      seen.signals.push(ctx.signal);
      await gate.promise;
      seen.finished++;
      return "late result";
    },
  };
}

/** A job as stored, read through a backend of its own (the shut-down server's is closed). */
async function stored(h: Harness, id: string) {
  const check = h.db.backend();
  await check.open();
  try {
    return (await check.inspect.jobGet({ id }))!;
  } finally {
    await check.close();
  }
}

const released = (h: Harness, jobId: string) =>
  h.events.find((e): e is Extract<ServerEvent, { type: "job-released" }> => e.type === "job-released" && e.jobId === jobId);

describe.each(BACKENDS)("shutdown on $name", (entry) => {
  const harness = useHarness(entry);

  it("J9: a job still running at the deadline is put back at once: signal aborted, job-released, enqueued, attempt not counted, no lease; another server runs it now", async () => {
    const h = harness();
    const stubborn = stubbornHandler();
    // A long lease: the job must come back through the put-back, not through lease recovery.
    const leaving = await h.start({ leaseMs: 60_000, workerCount: 1, handlers: { work: { handle: stubborn.handle } } });
    const id = await leaving.publisher.enqueue("work", {});
    await waitFor(() => stubborn.seen.signals.length === 1, "the handler to start");

    await leaving.shutdown({ deadlineMs: 200 });
    expect(stubborn.seen.signals[0]!.aborted).toBe(true);
    expect(released(h, id)).toMatchObject({ type: "job-released", jobId: id, jobType: "work", attempt: 1 });
    const back = await stored(h, id);
    expect(back).toMatchObject({ stage: "enqueued", attempt: 0, leaseOwner: null, leaseExpiresAt: null });
    expect(back.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "enqueued"]);

    // The abandoned handler finishing late changes nothing.
    stubborn.gate.resolve();
    await waitFor(() => stubborn.seen.finished === 1, "the abandoned handler to finish");
    expect((await stored(h, id)).stage).toBe("enqueued");

    // Another server takes it at once (well inside the 60 s lease), as attempt 1.
    const attempts: number[] = [];
    const staying = await h.start({ handlers: { work: { handle: (ctx) => void attempts.push(ctx.attempt) } } });
    await waitFor(async () => (await staying.backend.inspect.jobGet({ id }))?.stage === "success", "the other server to run it");
    expect(attempts).toEqual([1]);
  });

  it("J9/P6: a partition head still running at shutdown({ deadlineMs: 0 }) is put back and its partition freed: the next owner runs it at once", async () => {
    const h = harness();
    const stubborn = stubbornHandler();
    const orders = topic("orders", 1);
    const leaving = await h.start({ leaseMs: 60_000, topics: [orders], handlers: { order: { handle: stubborn.handle } } });
    const head = await leaving.publisher.enqueueToPartition("order", { n: 1 }, { topic: "orders", partition: 0 });
    const next = await leaving.publisher.enqueueToPartition("order", { n: 2 }, { topic: "orders", partition: 0 });
    await waitFor(() => stubborn.seen.signals.length === 1, "the head to start");

    await leaving.shutdown({ deadlineMs: 0 });
    expect(stubborn.seen.signals[0]!.aborted).toBe(true);
    expect(released(h, head)).toMatchObject({ type: "job-released", jobId: head, jobType: "order", attempt: 1 });
    expect(await stored(h, head)).toMatchObject({ stage: "enqueued", attempt: 0, leaseOwner: null, leaseExpiresAt: null });
    stubborn.gate.resolve();
    await waitFor(() => stubborn.seen.finished === 1, "the abandoned handler to finish");
    expect((await stored(h, head)).stage).toBe("enqueued");

    // The partition's next owner claims the same head at once, as attempt 1, then the job behind it.
    const ran: [number, number][] = [];
    const staying = await h.start({
      topics: [orders],
      handlers: { order: { handle: (ctx, p) => void ran.push([(p as { n: number }).n, ctx.attempt]) } },
    });
    await waitFor(async () => (await staying.backend.inspect.jobGet({ id: next }))?.stage === "success", "the partition to drain");
    expect(ran).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });
});
