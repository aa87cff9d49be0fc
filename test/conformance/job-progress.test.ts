// X8 on every backend: ctx.progress(value) stores the running attempt's progress as JSON on its
// job, each call replacing the last; it stays after the job finishes; the dashboard's job detail
// and `later jobs show` read it. A value that is not JSON, or over 16 KiB, is INVALID_ARGUMENT and
// stores nothing; an attempt that no longer holds its job (here: after it finished) is LEASE_LOST
// and stores nothing. A partition head reports progress too.
import { describe, expect, it } from "vitest";
import { topic, type JobContext } from "@later/runtime";
import { createDashboard } from "@later/runtime/dashboard";
import { BACKENDS } from "./backends.js";
import { codeOf, deferred, settled, useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("job progress on $name", (entry) => {
  const harness = useHarness(entry);

  it("X8: progress replaces the last, stays after the job ends, and shows in the dashboard's detail", async () => {
    const h = harness();
    const step = deferred();
    const reported = deferred();
    let context: JobContext<unknown> | null = null;
    const server = await h.start({
      handlers: {
        report: {
          handle: async (ctx: JobContext<unknown>) => {
            context = ctx;
            await ctx.progress({ step: 1, of: 2, note: "<b>escaped by the page</b>" });
            reported.resolve();
            await step.promise;
            expect(await codeOf(ctx.progress(() => 1))).toBe("INVALID_ARGUMENT");
            expect(await codeOf(ctx.progress({ big: "x".repeat(17_000) }))).toBe("INVALID_ARGUMENT");
            await ctx.progress({ step: 2, of: 2 });
          },
        },
      },
    });
    const id = await server.publisher.enqueue("report", {});
    await reported.promise;
    const running = await server.backend.inspect.jobGet({ id });
    expect(running?.stage).toBe("running");
    expect(JSON.parse(running!.progress!)).toEqual({ step: 1, of: 2, note: "<b>escaped by the page</b>" });
    step.resolve();
    const done = await settled(() => server.backend.inspect.jobGet({ id }));
    expect(done.stage).toBe("success");
    expect(JSON.parse(done.progress!)).toEqual({ step: 2, of: 2 });
    // The attempt is over: its context no longer holds the job, and writes nothing.
    expect(await codeOf(context!.progress({ step: 3 }))).toBe("LEASE_LOST");
    expect(JSON.parse((await server.backend.inspect.jobGet({ id }))!.progress!)).toEqual({ step: 2, of: 2 });
    const dashboard = createDashboard({ backend: server.backend });
    const detail = (await (await dashboard(new Request(`http://localhost/api/jobs/${id}`))).json()) as { progress: unknown };
    expect(detail.progress).toEqual({ step: 2, of: 2 });
    const plain = await server.publisher.enqueue("report", {}, { delayMs: 3_600_000 }); // never ran: no progress
    expect((await server.backend.inspect.jobGet({ id: plain }))?.progress).toBeNull();
  });

  it("X8: a partition head reports progress under its claim", async () => {
    const h = harness();
    const server = await h.start({
      topics: [topic("ledger", 2)],
      handlers: { post: { handle: (ctx: JobContext<unknown>, payload) => ctx.progress({ posted: (payload as { n: number }).n }) } },
    });
    const id = await server.publisher.enqueueToPartition("post", { n: 7 }, { topic: "ledger", key: "acct" });
    const done = await waitFor(async () => {
      const job = await server.backend.inspect.jobGet({ id });
      return job?.stage === "success" ? job : null;
    }, "the head to finish");
    expect(JSON.parse(done.progress!)).toEqual({ posted: 7 });
  });
});
