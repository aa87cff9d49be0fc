/**
 * X10 with R1/R2 on both backends: recurring occurrences go through the
 * enqueue middleware as every other enqueue. A plain schedule's first
 * occurrence through the publisher's hooks at `enqueueRecurring`, each later
 * one (and a sequential schedule's first) through the hooks of the server
 * whose poller inserts it; the hooks see the schedule's id, payload and run
 * time, and the metadata they set is stored with the occurrence. A hook that
 * throws or skips leaves the occurrence due, never ending the poll for the
 * other schedules.
 */
import { describe, expect, it } from "vitest";
import { partitionForKey, RECURRING_SEQUENTIAL_TOPIC, type EnqueueContext, type JobId, type LaterMiddleware } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { storedMeta, useHarness } from "./harness.js";

/** ManualClock's default start: 2026-01-01T00:00:00Z. */
const T0 = Date.UTC(2026, 0, 1);
const EVERY_10S = "*/10 * * * * *";
/** Pollers that only poll when told to (and once at start). */
const MANUAL_POLL = { recurringPollIntervalMs: 3_600_000 } as const;
const noop = { handle: () => undefined };

/** What one enqueue hook call saw, and what its `next()` resolved to. */
interface Seen {
  jobType: string;
  scheduleId: string | undefined;
  runAt: number | undefined;
  payload: unknown;
  partition: unknown;
  ids: JobId[];
}

/** A middleware that records each enqueue and tags its job's metadata with the schedule id. */
function recording(seen: Seen[], behave: (ctx: EnqueueContext) => "pass" | "throw" | "skip" = () => "pass"): LaterMiddleware {
  return {
    async enqueue(ctx, next) {
      const how = behave(ctx);
      if (how === "throw") throw new Error(`hook refused ${ctx.scheduleId}`);
      if (how === "skip") return [];
      ctx.jobs[0]!.meta.schedule = ctx.scheduleId ?? null;
      const ids = await next();
      const { jobType, scheduleId, options, jobs } = ctx;
      seen.push({ jobType, scheduleId, runAt: options.runAt?.getTime(), payload: jobs[0]!.payload, partition: jobs[0]!.partition, ids });
      return ids;
    },
  };
}

describe.each(BACKENDS)("recurring occurrences through the middleware (X10, R2) on $name", (entry) => {
  const harness = useHarness(entry);

  it("X10/R1/R2: the first occurrence goes through the publisher's hooks, each later one through the poller's; their metadata is stored", async () => {
    const seen: Seen[] = [];
    const clock = new ManualClock();
    const server = await harness().start({
      clock,
      ...MANUAL_POLL,
      recurringSequentialPartitions: 2,
      handlers: { report: noop },
      middleware: [recording(seen)],
    });
    const first = await server.publisher.enqueueRecurring("report", "r", { v: 1 }, EVERY_10S);
    expect(seen).toEqual([{ jobType: "report", scheduleId: "r", runAt: T0 + 10_000, payload: { v: 1 }, partition: null, ids: [first] }]);
    // Registered again unchanged: the hook runs around the upsert, whose next() inserts nothing.
    expect(await server.publisher.enqueueRecurring("report", "r", { v: 2 }, EVERY_10S)).toBeNull();
    expect(seen[1]).toMatchObject({ scheduleId: "r", ids: [] });
    // A sequential schedule's upsert inserts no job: its first occurrence is the poller's.
    const reserved = await server.publisher.enqueueRecurring("report", "s", { v: 3 }, EVERY_10S, { sequential: true });
    expect(seen).toHaveLength(2);

    clock.advance(20_000);
    expect(await server.pollRecurring()).toBe(3);
    const polled = seen.slice(2);
    const partition = { topic: RECURRING_SEQUENTIAL_TOPIC, partition: partitionForKey("s", 2) };
    expect(polled.map(({ ids: _, ...s }) => s)).toEqual(
      expect.arrayContaining([
        { jobType: "report", scheduleId: "r", runAt: T0 + 20_000, payload: { v: 2 }, partition: null },
        { jobType: "report", scheduleId: "s", runAt: T0 + 10_000, payload: { v: 3 }, partition },
        { jobType: "report", scheduleId: "s", runAt: T0 + 20_000, payload: { v: 3 }, partition },
      ]),
    );
    expect(polled).toHaveLength(3);
    expect(polled.some((s) => s.ids[0] === reserved)).toBe(true);
    const meta = await storedMeta(harness().db);
    expect(meta.size).toBe(4);
    for (const s of seen) for (const id of s.ids) expect(JSON.parse(meta.get(id)!)).toEqual({ schedule: s.scheduleId });
  });

  it("X10/R2: of two servers polling one occurrence at once, one next() resolves to its id and any other to []", async () => {
    const seen: Seen[] = [];
    const clock = new ManualClock();
    const options = { clock, ...MANUAL_POLL, handlers: { report: noop }, middleware: [recording(seen)] };
    const a = await harness().start(options);
    const b = await harness().start(options);
    await a.publisher.enqueueRecurring("report", "r", {}, EVERY_10S);
    clock.advance(20_000);
    const [na, nb] = await Promise.all([a.pollRecurring(), b.pollRecurring()]);
    expect(na + nb).toBe(1);
    const polled = seen.slice(1);
    expect(polled.filter((s) => s.ids.length === 1)).toHaveLength(1);
    expect(polled.every((s) => s.ids.length <= 1 && s.runAt === T0 + 20_000)).toBe(true);
    expect((await storedMeta(harness().db)).size).toBe(2);
  });

  it("X10/R2: a hook that throws or skips next() leaves that occurrence due (an error event for the throw); other schedules are enqueued in the same poll", async () => {
    const seen: Seen[] = [];
    const clock = new ManualClock();
    const refuse = new Map<string, "throw" | "skip">();
    let calls = 0;
    const h = harness();
    const server = await h.start({
      clock,
      ...MANUAL_POLL,
      handlers: { report: noop },
      middleware: [
        recording(seen, (ctx) => {
          calls++;
          return (ctx.scheduleId !== undefined && refuse.get(ctx.scheduleId)) || "pass";
        }),
      ],
    });
    for (const id of ["a-throws", "b-skips", "c-passes"]) await server.publisher.enqueueRecurring("report", id, {}, EVERY_10S);
    refuse.set("a-throws", "throw").set("b-skips", "skip");
    clock.advance(20_000);
    calls = 0;
    expect(await server.pollRecurring()).toBe(1);
    expect(calls).toBe(3); // one offer each: a skipped occurrence is not retried within the poll
    expect(seen.at(-1)).toMatchObject({ scheduleId: "c-passes", runAt: T0 + 20_000 });
    expect(h.events).toContainEqual(
      expect.objectContaining({ type: "error", where: expect.stringContaining('"a-throws"'), error: expect.stringContaining("hook refused a-throws") }),
    );
    const next = new Map((await server.backend.recurring.list()).map((s) => [s.id, s.nextRunAt]));
    expect(Object.fromEntries(next)).toEqual({ "a-throws": T0 + 20_000, "b-skips": T0 + 20_000, "c-passes": T0 + 30_000 });

    refuse.clear();
    expect(await server.pollRecurring()).toBe(2);
    expect((await storedMeta(harness().db)).size).toBe(6);
  });
});
