// J11 on every backend: retention per job type and stage (`retention: { successMs, failedMs, cancelledMs }`).
// `successMs: 0` deletes a success in the write that records it: no row is left, the stage counters still
// equal a GROUP BY over the stored jobs while their cumulative `entered` (throughput) counts the success,
// continuations of the deleted job (single-parent and fan-in) run, a `waitFor` already waiting resolves
// from the commit's wake-up and a later one is JOB_NOT_FOUND. Per-type `failedMs`, `successMs > 0` and
// `cancelledMs` are the expiry the sweep applies (injected clock). A bad retention is INVALID_ARGUMENT at
// start, naming the job type and field.
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { JOB_STAGES, PermanentJobError } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import type { TestDatabase } from "./backends.js";
import { BACKENDS } from "./backends.js";
import { afterCall, codeOf, deferred, refusal, settled, useHarness, waitFor } from "./harness.js";

/** Jobs per stage of `namespace` counted over the stored rows, and the counters' cumulative moves into `success`. */
async function stored(db: TestDatabase, namespace = "test"): Promise<{ stages: Record<string, number>; enteredSuccess: number }> {
  const app = db.appDatabase<Record<string, never>>();
  try {
    const rows = await sql<{ stage: string; n: number }>`SELECT stage, count(*) AS n FROM later_jobs WHERE namespace = ${namespace} GROUP BY stage`.execute(
      app,
    );
    const entered = await sql<{ n: number | null }>`SELECT sum(entered) AS n FROM later_stage_counts
      WHERE namespace = ${namespace} AND stage = 'success'`.execute(app);
    return {
      stages: Object.fromEntries(JOB_STAGES.map((s) => [s, Number(rows.rows.find((r) => r.stage === s)?.n ?? 0)])),
      enteredSuccess: Number(entered.rows[0]?.n ?? 0),
    };
  } finally {
    await app.destroy();
  }
}

describe.each(BACKENDS)("retention per job type on $name", (entry) => {
  const harness = useHarness(entry);

  it("J11: successMs 0 deletes the success in its own write; counters and throughput count it; its continuations run", async () => {
    const h = harness();
    const gate = deferred();
    let running = 0;
    const server = await h.start({
      handlers: {
        brief: {
          handle: async () => {
            running++;
            await gate.promise;
            return { lost: true };
          },
          retention: { successMs: 0 },
        },
        kept: { handle: () => undefined },
        next: { handle: () => undefined },
      },
    });
    const a = await server.publisher.enqueue("brief", {});
    const b = await server.publisher.enqueue("brief", {});
    const k = await server.publisher.enqueue("kept", {});
    await settled(() => server.backend.inspect.jobGet({ id: k }));
    await waitFor(() => running === 2, "both brief jobs running");
    const child = await server.publisher.enqueue("next", {}, { parentId: a });
    const fanIn = await server.publisher.enqueue("next", {}, { parentId: [b, k] });
    gate.resolve();
    expect((await settled(() => server.backend.inspect.jobGet({ id: child }), "the continuation")).stage).toBe("success");
    expect((await settled(() => server.backend.inspect.jobGet({ id: fanIn }), "the fan-in continuation")).stage).toBe("success");
    expect(await server.backend.inspect.jobGet({ id: a })).toBeNull();
    expect(await server.backend.inspect.jobGet({ id: b })).toBeNull();
    expect(h.stagesOf(a)).toContain("success");
    const after = await stored(h.db);
    expect(after.stages).toMatchObject({ success: 3, running: 0, waiting: 0 });
    expect((await server.backend.inspect.stageCounts()).counts).toEqual(after.stages);
    expect(after.enteredSuccess).toBe(5);
  });

  it("J11: a waitFor already waiting resolves from the commit's wake-up; one after the delete is JOB_NOT_FOUND", async () => {
    const h = harness();
    const gate = deferred();
    const started = deferred();
    const firstRead = deferred();
    const server = await h.start({
      handlers: {
        brief: {
          handle: async () => {
            started.resolve();
            await gate.promise;
            return 7;
          },
          retention: { successMs: 0 },
        },
      },
      wrapBackend: (backend) =>
        afterCall(backend, "jobs", "readOutcomes", (_rows, [params]) => {
          if (params.markAwaited) firstRead.resolve();
        }),
    });
    const id = await server.publisher.enqueue("brief", {});
    await started.promise;
    // The safety poll is far off: only the done wake-up can settle the wait.
    const waiting = server.waitFor(id, { timeoutMs: 30_000, safetyPollMs: 60_000 });
    await firstRead.promise;
    gate.resolve();
    expect(await waiting).toEqual({ stage: "success" });
    expect(await server.backend.inspect.jobGet({ id })).toBeNull();
    expect(await codeOf(server.waitFor(id, { timeoutMs: 5_000 }))).toBe("JOB_NOT_FOUND");
  });

  it("J11: per-type failedMs, successMs and cancelledMs are the expiry the sweep applies; other types keep retentionMs", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({
      clock,
      retentionMs: 86_400_000,
      sweepIntervalMs: 1_000_000_000,
      handlers: {
        shortFail: {
          handle: () => {
            throw new PermanentJobError("no");
          },
          retention: { failedMs: 1_000 },
        },
        longFail: {
          handle: () => {
            throw new PermanentJobError("no");
          },
        },
        tidy: { handle: () => undefined, retention: { successMs: 5_000, cancelledMs: 0 } },
      },
    });
    const shortFail = await server.publisher.enqueue("shortFail", {});
    const longFail = await server.publisher.enqueue("longFail", {});
    const tidy = await server.publisher.enqueue("tidy", {});
    const cancelled = await server.publisher.enqueue("tidy", {}, { delayMs: 3_600_000 });
    for (const id of [shortFail, longFail, tidy]) await settled(() => server.backend.inspect.jobGet({ id }));
    expect(await server.cancel(cancelled)).toBe(true);
    const now = clock.now();
    expect((await server.backend.inspect.jobGet({ id: shortFail }))?.expiresAt).toBeLessThanOrEqual(now + 1_000);
    expect((await server.backend.inspect.jobGet({ id: cancelled }))?.expiresAt).toBe(now);
    clock.advance(1);
    expect(await server.sweepExpiredJobs()).toBe(1); // the cancelled tidy job (cancelledMs 0)
    clock.advance(1_000);
    expect(await server.sweepExpiredJobs()).toBe(1); // shortFail
    expect(await server.backend.inspect.jobGet({ id: shortFail })).toBeNull();
    expect(await server.backend.inspect.jobGet({ id: tidy })).not.toBeNull();
    clock.advance(4_000);
    expect(await server.sweepExpiredJobs()).toBe(1); // tidy
    expect(await server.backend.inspect.jobGet({ id: tidy })).toBeNull();
    expect((await server.backend.inspect.jobGet({ id: longFail }))?.stage).toBe("failed");
    clock.advance(86_400_000);
    expect(await server.sweepExpiredJobs()).toBe(1);
    expect((await server.backend.inspect.stageCounts()).counts).toEqual((await stored(h.db)).stages);
  });

  it("J11: a negative, fractional or non-finite retention, or an unknown field, is INVALID_ARGUMENT at start naming the type and field", async () => {
    const h = harness();
    const bad: [unknown, string][] = [
      [{ successMs: -1 }, "successMs"],
      [{ failedMs: 1.5 }, "failedMs"],
      [{ cancelledMs: Number.POSITIVE_INFINITY }, "cancelledMs"],
      [{ successMs: Number.NaN }, "successMs"],
      [{ successMs: "0" }, "successMs"],
      [{ keepMs: 1 }, "keepMs"],
      [5, "retention"],
    ];
    for (const [retention, field] of bad) {
      const error = await refusal(h.start({ handlers: { sendEmail: { handle: () => undefined, retention: retention as never } } }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toContain("sendEmail");
      expect(error.message).toContain(field);
    }
  });
});
