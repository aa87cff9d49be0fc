/**
 * X9 per job type limits, on both backends: `concurrency` never exceeded
 * across two servers of one database, `rateLimit` windows never hold more
 * than `max` starts (on an injected clock: the waiting jobs start when the
 * claim's next-slot time comes, not a poll interval later), a finished
 * limited job starts the next at once, unlimited types are not held back,
 * the stored limits (last server started wins, a warning when they differ),
 * and bad limits refused at start. Waits are on conditions with deadlines.
 */
import { describe, expect, it } from "vitest";
import type { ServerEvent } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { codeOf, deferred, settled, useHarness, waitFor } from "./harness.js";

const limitWarnings = (events: readonly ServerEvent[]) => events.filter((e) => e.type === "warning" && e.code === "LIMITS_CHANGED");

describe.each(BACKENDS)("per job type limits (X9) on $name", (entry) => {
  const harness = useHarness(entry);

  it("X9: concurrency 2 is never exceeded by two servers of one database, and every job runs", async () => {
    const h = harness();
    let running = 0;
    let most = 0;
    let done = 0;
    const handlers = {
      limited: {
        concurrency: 2,
        handle: async () => {
          most = Math.max(most, ++running);
          // Some work, so that attempts overlap when the limit lets them.
          for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
          running--;
          done++;
        },
      },
    };
    const a = await h.start({ workerCount: 4, handlers });
    await h.start({ workerCount: 4, handlers });
    await a.publisher.enqueueMany(
      "limited",
      Array.from({ length: 30 }, (_, i) => ({ i })),
    );
    await waitFor(() => done === 30, "every limited job done", 20_000);
    expect(most).toBeLessThanOrEqual(2);
    expect(most).toBeGreaterThan(0);
  });

  it("X9: a waiting job starts as soon as a running one of its type finishes (no poll interval), and unlimited types are not held back", async () => {
    const h = harness();
    const gate = deferred();
    let limitedRuns = 0;
    const server = await h.start({
      workerCount: 4,
      // Far longer than the test's deadlines: only a wake-up on the finish can start the next job in time.
      pollIntervalMs: 600_000,
      handlers: {
        one: {
          concurrency: 1,
          handle: async () => {
            if (limitedRuns++ === 0) await gate.promise;
          },
        },
        free: { handle: () => undefined },
      },
    });
    const [first, ...rest] = await server.publisher.enqueueMany("one", [{}, {}, {}]);
    await waitFor(() => limitedRuns === 1, "the first limited job running");
    // The limit holds the others back while the first runs; an unlimited type runs meanwhile.
    const free = await server.publisher.enqueueMany("free", [{}, {}, {}]);
    for (const id of free) expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
    for (const id of rest) expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("enqueued");
    expect(limitedRuns).toBe(1);
    gate.resolve();
    for (const id of [first!, ...rest]) expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
  });

  it("X9: rateLimit 3 per 300 ms: three starts per window, the next three when the window opens (the claim's next-slot time, on an injected clock)", async () => {
    const h = harness();
    const clock = new ManualClock();
    const t0 = clock.now();
    const server = await h.start({
      clock,
      workerCount: 4,
      pollIntervalMs: 600_000,
      handlers: { paced: { rateLimit: { max: 3, perMs: 300 }, handle: () => undefined } },
    });
    const ids = await server.publisher.enqueueMany(
      "paced",
      Array.from({ length: 7 }, () => ({})),
    );
    const stages = async () => Promise.all(ids.map(async (id) => (await server.backend.inspect.jobGet({ id }))!));
    const succeeded = async (n: number) => (await stages()).filter((j) => j.stage === "success").length === n;
    await waitFor(() => succeeded(3), "the first window's three jobs");
    clock.advance(300);
    await waitFor(() => succeeded(6), "the second window's three jobs");
    clock.advance(300);
    await waitFor(() => succeeded(7), "the last job");
    // Every start (the claim's `running` entry) by window: never more than three in any 300 ms.
    const starts = (await stages()).map((j) => j.stages.find((s) => s.stage === "running")!.at - t0).sort((x, y) => x - y);
    expect(starts).toEqual([0, 0, 0, 300, 300, 300, 600]);
  });

  it("X9: the limits are stored at start, the last server started wins, and a server whose limits differ warns", async () => {
    const h = harness();
    const handle = () => undefined;
    await h.start({ handlers: { t: { concurrency: 2, handle } } });
    expect(limitWarnings(h.events)).toEqual([]);
    await h.start({ handlers: { t: { concurrency: 3, rateLimit: { max: 10, perMs: 1_000 }, handle } } });
    const [warning] = limitWarnings(h.events);
    expect(warning).toMatchObject({ jobType: "t" });
    expect(warning?.type === "warning" && warning.message).toContain("concurrency 2");
    // The same limits as stored now: no warning; then a server without a limit removes them (one more warning).
    await h.start({ handlers: { t: { concurrency: 3, rateLimit: { max: 10, perMs: 1_000 }, handle } } });
    expect(limitWarnings(h.events)).toHaveLength(1);
    await h.start({ handlers: { t: { handle } } });
    expect(limitWarnings(h.events)).toHaveLength(2);
    await h.start({ handlers: { t: { handle } } });
    expect(limitWarnings(h.events)).toHaveLength(2);
  });

  it("X9 bad input: a limit of 0, negative, non-integer, or a perMs under 1 refuses the start (INVALID_ARGUMENT naming the type and field), storing nothing", async () => {
    const h = harness();
    const handle = () => undefined;
    const bad: [object, string][] = [
      [{ concurrency: 0 }, "handlers.t.concurrency"],
      [{ concurrency: -1 }, "handlers.t.concurrency"],
      [{ concurrency: 1.5 }, "handlers.t.concurrency"],
      [{ rateLimit: { max: 0, perMs: 1_000 } }, "handlers.t.rateLimit.max"],
      [{ rateLimit: { max: 2.5, perMs: 1_000 } }, "handlers.t.rateLimit.max"],
      [{ rateLimit: { max: 5, perMs: 0 } }, "handlers.t.rateLimit.perMs"],
      [{ rateLimit: { max: 5, perMs: 0.5 } }, "handlers.t.rateLimit.perMs"],
      [{ rateLimit: { max: 5 } }, "handlers.t.rateLimit.perMs"],
      [{ rateLimit: 5 }, "handlers.t.rateLimit"],
    ];
    for (const [options, field] of bad) {
      const start = h.start({ handlers: { t: { ...options, handle } as never } });
      expect(await codeOf(start)).toBe("INVALID_ARGUMENT");
      await expect(start).rejects.toThrow(field);
    }
    // Nothing was stored: a server with a limit for the type finds none before it (no warning).
    await h.start({ handlers: { t: { concurrency: 1, handle } } });
    expect(limitWarnings(h.events)).toEqual([]);
  });
});
