// docs/semantics.md J1: a history entry carries a note only where its usual reading would mislead: a job
// put back at the shutdown deadline (J9) goes back with `shutdown`, whatever stage it returns to; a
// handler's PermanentJobError (J3) fails with `permanent`. Ordinary retries, exhausted retries and
// successes stay plain `[stage, at]` pairs, for regular jobs and partition heads alike, on both dialects.
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { PermanentJobError, RetryPolicy, topic, type StageChange } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { deferred, settled, useHarness, waitFor, type Harness } from "./harness.js";

/** A job as stored, read through a backend of its own (a shut-down server's is closed). */
async function stored(h: Harness, id: string) {
  const check = h.db.backend();
  await check.open();
  try {
    return (await check.inspect.jobGet({ id }))!;
  } finally {
    await check.close();
  }
}

/** The raw `stages` column, parsed as it is (to see which entries have a third element). */
async function rawStages(h: Harness, id: string): Promise<unknown[][]> {
  const app = h.db.appDatabase<{ later_jobs: { id: string; stages: string } }>();
  try {
    // On PostgreSQL the application's connection has later's schema on its search path.
    const { rows } = await sql<{ stages: string }>`SELECT stages FROM later_jobs WHERE id = ${id}`.execute(app);
    return JSON.parse(rows[0]!.stages) as unknown[][];
  } finally {
    await app.destroy();
  }
}

const notes = (stages: StageChange[]) => stages.map((s) => (s.note === undefined ? s.stage : `${s.stage} (${s.note})`));

/** A handler that fails its first `failures` attempts with an ordinary error, then hangs (ignoring its signal) until `gate` opens. */
function hangingAfter(failures: number) {
  const gate = deferred();
  const started: number[] = [];
  return {
    gate,
    started,
    handle: async (ctx: { attempt: number }) => {
      if (ctx.attempt <= failures) throw new Error(`attempt ${ctx.attempt} failed`);
      started.push(ctx.attempt);
      await gate.promise;
    },
  };
}

describe.each(BACKENDS)("stage history notes on $name", (entry) => {
  const harness = useHarness(entry);

  it("J9: a job still running at the shutdown deadline goes back to enqueued noted `shutdown`; stored as a third element, plain entries stay pairs", async () => {
    const h = harness();
    const hanging = hangingAfter(0);
    const leaving = await h.start({ leaseMs: 60_000, workerCount: 1, handlers: { work: { handle: hanging.handle } } });
    const id = await leaving.publisher.enqueue("work", {});
    await waitFor(() => hanging.started.length === 1, "the handler to start");
    await leaving.shutdown({ deadlineMs: 0 });
    hanging.gate.resolve();

    const job = await stored(h, id);
    expect(job.stage).toBe("enqueued");
    expect(notes(job.stages)).toEqual(["enqueued", "running", "enqueued (shutdown)"]);
    const raw = await rawStages(h, id);
    expect(raw.map((e) => e.length)).toEqual([2, 2, 3]);
    expect(raw[2]).toEqual(["enqueued", job.stages[2]!.at, "shutdown"]);
  });

  it("J9: a put-back after an earlier failed attempt goes back to requeued, noted `shutdown` too; the retry before it is plain", async () => {
    const h = harness();
    const hanging = hangingAfter(1);
    const leaving = await h.start({
      leaseMs: 60_000,
      workerCount: 1,
      defaultRetryPolicy: RetryPolicy.fixed(3, 10),
      handlers: { work: { handle: hanging.handle } },
    });
    const id = await leaving.publisher.enqueue("work", {});
    await waitFor(() => hanging.started.length === 1, "the second attempt to start");
    await leaving.shutdown({ deadlineMs: 0 });
    hanging.gate.resolve();

    const job = await stored(h, id);
    expect(job).toMatchObject({ stage: "requeued", attempt: 1 });
    expect(notes(job.stages)).toEqual(["enqueued", "running", "requeued", "running", "requeued (shutdown)"]);
  });

  it("J3: a PermanentJobError fails noted `permanent`; retries spent fail plain; a retried success has no note", async () => {
    const h = harness();
    const server = await h.start({
      defaultRetryPolicy: RetryPolicy.fixed(1, 10),
      handlers: {
        permanent: {
          handle: () => {
            throw new PermanentJobError("no such mailbox");
          },
        },
        flaky: {
          handle: (ctx) => {
            if (ctx.attempt === 1) throw new Error("once");
          },
        },
        doomed: {
          handle: () => {
            throw new Error("always");
          },
        },
      },
    });
    const permanent = await server.publisher.enqueue("permanent", {});
    const flaky = await server.publisher.enqueue("flaky", {});
    const doomed = await server.publisher.enqueue("doomed", {});
    const read = (id: string) => () => server.backend.inspect.jobGet({ id });

    const p = await settled(read(permanent));
    expect(p).toMatchObject({ stage: "failed", lastError: "no such mailbox" });
    expect(notes(p.stages)).toEqual(["enqueued", "running", "failed (permanent)"]);
    expect((await rawStages(h, permanent)).at(-1)).toEqual(["failed", p.stages[2]!.at, "permanent"]);

    expect(notes((await settled(read(flaky))).stages)).toEqual(["enqueued", "running", "requeued", "running", "success"]);
    expect(notes((await settled(read(doomed))).stages)).toEqual(["enqueued", "running", "requeued", "running", "failed"]);
    expect((await rawStages(h, doomed)).every((e) => e.length === 2)).toBe(true);
  });

  it("J9/P6: a partition head still running at shutdown goes back noted `shutdown`", async () => {
    const h = harness();
    const hanging = hangingAfter(0);
    const orders = topic("orders", 1);
    const leaving = await h.start({ leaseMs: 60_000, topics: [orders], handlers: { order: { handle: hanging.handle } } });
    const head = await leaving.publisher.enqueueToPartition("order", {}, { topic: "orders", partition: 0 });
    await waitFor(() => hanging.started.length === 1, "the head to start");
    await leaving.shutdown({ deadlineMs: 0 });
    hanging.gate.resolve();

    expect(notes((await stored(h, head)).stages)).toEqual(["enqueued", "running", "enqueued (shutdown)"]);
  });

  it("J3: partition heads: a PermanentJobError fails noted `permanent`; a retried success has no note", async () => {
    const h = harness();
    const orders = topic("orders", 2);
    const server = await h.start({
      topics: [orders],
      defaultRetryPolicy: RetryPolicy.fixed(1, 10),
      handlers: {
        order: {
          handle: (ctx, payload) => {
            if ((payload as { permanent: boolean }).permanent) throw new PermanentJobError("bad order");
            if (ctx.attempt === 1) throw new Error("once");
          },
        },
      },
    });
    const permanent = await server.publisher.enqueueToPartition("order", { permanent: true }, { topic: "orders", partition: 0 });
    const flaky = await server.publisher.enqueueToPartition("order", { permanent: false }, { topic: "orders", partition: 1 });
    const read = (id: string) => () => server.backend.inspect.jobGet({ id });

    expect(notes((await settled(read(permanent))).stages)).toEqual(["enqueued", "running", "failed (permanent)"]);
    expect(notes((await settled(read(flaky))).stages)).toEqual(["enqueued", "running", "requeued", "running", "success"]);
  });
});
