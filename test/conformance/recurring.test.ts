import { describe, expect, it } from "vitest";
import { isJobId, partitionForKey, RECURRING_SEQUENTIAL_TOPIC, type BackgroundJobServer } from "@later/runtime";
import type { JobRecord } from "@later/runtime/internal";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { codeOf, deferred, useHarness, waitFor } from "./harness.js";

/** ManualClock's default start: 2026-01-01T00:00:00Z. */
const T0 = Date.UTC(2026, 0, 1);
const EVERY_10S = "*/10 * * * * *";
/** Pollers that only poll when told to (and once at start), so a test decides when occurrences are enqueued. */
const MANUAL_POLL = { recurringPollIntervalMs: 3_600_000 } as const;
const noop = { handle: () => undefined };

async function jobsOf(server: BackgroundJobServer<unknown>, jobType: string): Promise<JobRecord[]> {
  return (await server.backend.inspect.jobList({ jobType, limit: 1_000 })).sort((a, b) => a.runAt - b.runAt);
}

/** Advances the clock 1 ms per check (waking pollers that sleep 1 ms) until `condition` holds. */
function tickUntil<T>(clock: ManualClock, condition: () => T | Promise<T>, what: string): Promise<NonNullable<T>> {
  return waitFor(async () => {
    clock.advance(1);
    return condition();
  }, what);
}

describe.each(BACKENDS)("recurring schedules on $name", (entry) => {
  const harness = useHarness(entry);

  it("R1: a new id stores its first occurrence delayed at the first cron time and returns its job id", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({ clock, ...MANUAL_POLL, handlers: { report: noop } });
    const id = await server.publisher.enqueueRecurring("report", "daily-report", { n: 1 }, "0 0 6 * * *");
    expect(isJobId(id)).toBe(true);
    expect(await server.backend.inspect.jobGet({ id: id! })).toMatchObject({
      stage: "delayed",
      runAt: Date.UTC(2026, 0, 1, 6),
      jobType: "report",
      payload: JSON.stringify({ n: 1 }),
      topic: null,
    });
    expect(await server.backend.recurring.list()).toEqual([
      expect.objectContaining({
        id: "daily-report",
        jobType: "report",
        cron: "0 0 6 * * *",
        timeZone: "UTC",
        sequential: false,
        partition: null,
        nextRunAt: Date.UTC(2026, 0, 2, 6),
        nextJobId: null,
        lastJobId: id,
        lastRunAt: Date.UTC(2026, 0, 1, 6),
      }),
    ]);
  });

  it("R1: the same id and cron returns null and updates the payload, which the next occurrences carry", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({ clock, ...MANUAL_POLL, handlers: { report: noop } });
    const first = await server.publisher.enqueueRecurring("report", "r", { v: 1 }, EVERY_10S);
    expect(await server.publisher.enqueueRecurring("report", "r", { v: 2 }, ` ${EVERY_10S.replaceAll(" ", "  ")} `)).toBeNull();
    expect((await jobsOf(server, "report")).map((j) => j.id)).toEqual([first]);
    clock.advance(20_000);
    expect(await server.pollRecurring()).toBe(1);
    const jobs = await jobsOf(server, "report");
    expect(jobs.map((j) => [j.runAt, JSON.parse(j.payload)])).toEqual([
      [T0 + 10_000, { v: 1 }],
      [T0 + 20_000, { v: 2 }],
    ]);
    expect((await server.backend.recurring.list())[0]).toMatchObject({ nextRunAt: T0 + 30_000, lastJobId: jobs[1]!.id, lastRunAt: T0 + 20_000 });
  });

  it("R1: registering on every start-up, even on three servers at once, creates one schedule and one first job; a new cron returns a new job id", async () => {
    const h = harness();
    const clock = new ManualClock();
    const options = { clock, ...MANUAL_POLL, handlers: { report: noop } };
    const first = await h.start(options);
    const id = await first.publisher.enqueueRecurring("report", "nightly", { v: 1 }, "0 0 6 * * *");
    await first.shutdown({ deadlineMs: 0 });
    const servers = await Promise.all([h.start(options), h.start(options), h.start(options)]);
    const again = await Promise.all(servers.map((s) => s.publisher.enqueueRecurring("report", "nightly", { v: 1 }, "0 0 6 * * *")));
    expect(again).toEqual([null, null, null]);
    const fresh = await Promise.all(servers.map((s) => s.publisher.enqueueRecurring("report", "fresh", {}, "0 0 6 * * *")));
    expect(fresh.filter((x) => x !== null)).toHaveLength(1);
    expect((await jobsOf(servers[0]!, "report")).map((j) => j.id).sort()).toEqual([id, fresh.find((x) => x !== null)].sort());

    const changed = await servers[0]!.publisher.enqueueRecurring("report", "nightly", { v: 1 }, "0 30 6 * * *");
    expect(isJobId(changed)).toBe(true);
    expect(changed).not.toBe(id);
    expect(await servers[0]!.backend.inspect.jobGet({ id: changed! })).toMatchObject({ stage: "delayed", runAt: Date.UTC(2026, 0, 1, 6, 30) });
    // A job enqueued under the old cron is an ordinary job: it stays.
    expect(await servers[0]!.backend.inspect.jobGet({ id: id! })).toMatchObject({ stage: "delayed", runAt: Date.UTC(2026, 0, 1, 6) });
    const nightly = (await servers[0]!.backend.recurring.list()).find((s) => s.id === "nightly");
    expect(nightly).toMatchObject({ cron: "0 30 6 * * *", nextRunAt: Date.UTC(2026, 0, 2, 6, 30), lastJobId: changed });
    expect(await servers[1]!.publisher.enqueueRecurring("report", "nightly", { v: 1 }, "0 30 6 * * *")).toBeNull();
  });

  it("R2: three servers enqueue every occurrence exactly once, whether or not the earlier ones finished", async () => {
    const h = harness();
    const clock = new ManualClock();
    const release = deferred();
    const runs: string[] = [];
    let first: string | null = null;
    const options = {
      clock,
      recurringPollIntervalMs: 1,
      handlers: {
        tick: {
          handle: async (ctx: { jobId: string }) => {
            runs.push(ctx.jobId);
            if (ctx.jobId === first) await release.promise; // the first occurrence runs until the end of the test
          },
        },
      },
    };
    const servers = [await h.start(options), await h.start(options), await h.start(options)];
    first = await servers[1]!.publisher.enqueueRecurring("tick", "ticker", {}, EVERY_10S);
    // Every advance wakes the three pollers at once; explicit polls race them too.
    for (let k = 1; k <= 5; k++) {
      clock.advance(10_000);
      await Promise.all(servers.map((s) => s.pollRecurring()));
      expect((await jobsOf(servers[0]!, "tick")).map((j) => j.runAt)).toEqual(Array.from({ length: k }, (_, i) => T0 + 10_000 * (i + 1)));
    }
    // The pollers' own loops, with no explicit poll.
    for (let k = 6; k <= 8; k++) {
      clock.advance(10_000);
      await tickUntil(clock, async () => (await jobsOf(servers[0]!, "tick")).length === k, `occurrence ${k}`);
    }
    const jobs = await jobsOf(servers[2]!, "tick");
    expect(jobs[0]!.id).toBe(first);
    expect(new Set(jobs.map((j) => j.runAt)).size).toBe(8);
    expect(jobs.map((j) => j.runAt)).toEqual(Array.from({ length: 8 }, (_, i) => T0 + 10_000 * (i + 1)));
    // Every one ran, once, while the first is still running.
    await waitFor(async () => (await jobsOf(servers[0]!, "tick")).filter((j) => j.stage === "success").length === 7, "the later occurrences to succeed");
    expect((await servers[0]!.backend.inspect.jobGet({ id: first! }))!.stage).toBe("running");
    expect(new Set(runs)).toEqual(new Set(jobs.map((j) => j.id)));
    release.resolve();
    await waitFor(async () => (await jobsOf(servers[0]!, "tick")).every((j) => j.stage === "success"), "every occurrence to succeed");
    expect(runs).toHaveLength(8);
  });

  it("R2: occurrences missed while no server ran collapse into one; a short delay enqueues each", async () => {
    const h = harness();
    const clock = new ManualClock();
    // Polls every 5 s: an occurrence more than a minute late counts as missed.
    const options = { clock, recurringPollIntervalMs: 5_000, handlers: { tick: noop } };
    const server = await h.start(options);
    await server.publisher.enqueueRecurring("tick", "ticker", {}, EVERY_10S);
    clock.advance(30_000); // late by less than a minute: T0+20s and T0+30s are each enqueued
    await server.pollRecurring();
    expect((await jobsOf(server, "tick")).map((j) => j.runAt)).toEqual([T0 + 10_000, T0 + 20_000, T0 + 30_000]);
    await server.shutdown({ deadlineMs: 0 });
    clock.advance(3_600_000 + 5_000); // no server for an hour
    const next = await h.start(options); // polls at start
    await waitFor(async () => (await next.backend.recurring.list())[0]!.nextRunAt > clock.now(), "the catch-up poll");
    expect((await jobsOf(next, "tick")).map((j) => j.runAt)).toEqual([T0 + 10_000, T0 + 20_000, T0 + 30_000, T0 + 3_630_000]);
    expect((await next.backend.recurring.list())[0]!.nextRunAt).toBe(T0 + 3_640_000);
    expect(await next.pollRecurring()).toBe(0);
  });

  it("R1: the cron is read in the schedule's time zone (default UTC)", async () => {
    const h = harness();
    const winter = await h.start({ clock: new ManualClock(), ...MANUAL_POLL, handlers: { report: noop } });
    // Another namespace: a poller at another time would find the winter schedules due.
    const summer = await h.start({ namespace: "summer", clock: new ManualClock(Date.UTC(2026, 6, 1)), ...MANUAL_POLL, handlers: { report: noop } });
    const paris = { timeZone: "Europe/Paris" };
    const w = await winter.publisher.enqueueRecurring("report", "paris-winter", {}, "0 0 9 * * *", paris);
    const s = await summer.publisher.enqueueRecurring("report", "paris-summer", {}, "0 0 9 * * *", paris);
    const u = await winter.publisher.enqueueRecurring("report", "utc", {}, "0 0 9 * * *");
    expect((await winter.backend.inspect.jobGet({ id: w! }))!.runAt).toBe(Date.UTC(2026, 0, 1, 8));
    expect((await summer.backend.inspect.jobGet({ id: s! }))!.runAt).toBe(Date.UTC(2026, 6, 1, 7));
    expect((await winter.backend.inspect.jobGet({ id: u! }))!.runAt).toBe(Date.UTC(2026, 0, 1, 9));
    const byId = new Map((await winter.backend.recurring.list()).map((x) => [x.id, x]));
    expect(byId.get("paris-winter")).toMatchObject({ timeZone: "Europe/Paris", nextRunAt: Date.UTC(2026, 0, 2, 8) });
    expect(byId.get("utc")).toMatchObject({ timeZone: "UTC", nextRunAt: Date.UTC(2026, 0, 2, 9) });
    // Another zone is another schedule definition: a fresh first occurrence.
    expect(isJobId(await winter.publisher.enqueueRecurring("report", "utc", {}, "0 0 9 * * *", { timeZone: "America/New_York" }))).toBe(true);
  });

  it("R2: an invalid cron or time zone is INVALID_CRON naming the field, and nothing is written", async () => {
    const h = harness();
    const server = await h.start({ clock: new ManualClock(), ...MANUAL_POLL, handlers: { report: noop } });
    const message = async (p: Promise<unknown>) =>
      p.then(
        () => "resolved",
        (e: Error & { code?: string }) => `${e.code}: ${e.message}`,
      );
    expect(await message(server.publisher.enqueueRecurring("report", "r", {}, "0 0 25 * * *"))).toMatch(/^INVALID_CRON: invalid cron hour field/);
    expect(await message(server.publisher.enqueueRecurring("report", "r", {}, "0 61 * * * *"))).toMatch(/^INVALID_CRON: invalid cron minutes field/);
    expect(await message(server.publisher.enqueueRecurring("report", "r", {}, "0 6 * * *"))).toMatch(/^INVALID_CRON: invalid cron: .*5 fields/);
    expect(await message(server.publisher.enqueueRecurring("report", "r", {}, "0 0 6 * * *", { timeZone: "Mars/Olympus" }))).toMatch(
      /^INVALID_CRON: invalid time zone: "Mars\/Olympus"/,
    );
    expect(await codeOf(server.publisher.enqueueRecurring("nope", "r", {}, "0 0 6 * * *"))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.publisher.enqueueRecurring("report", "", {}, "0 0 6 * * *"))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.publisher.enqueueRecurring("report", "r", {}, "0 0 6 * * *", { zone: "UTC" } as never))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.publisher.enqueueRecurring("report", "r", { big: 1n }, "0 0 6 * * *"))).toBe("INVALID_ARGUMENT");
    expect(await server.backend.recurring.list()).toEqual([]);
    expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
  });

  it("R3: sequential occurrences, and the jobs chained off them, never overlap when the handler is slower than the schedule", async () => {
    const h = harness();
    const clock = new ManualClock();
    const gates = [deferred(), deferred(), deferred()];
    const log: string[] = [];
    let active = 0;
    let overlap = false;
    let occurrences = 0;
    const enter = (what: string) => {
      if (active++ > 0) overlap = true;
      log.push(what);
    };
    const server = await h.start({
      clock,
      ...MANUAL_POLL,
      workerCount: 4,
      recurringSequentialPartitions: 2,
      handlers: {
        report: {
          handle: async (ctx) => {
            const n = ++occurrences;
            enter(`report ${n}`);
            await ctx.publisher.enqueueRecurringContinue("step", ctx.jobId, { n });
            await gates[n - 1]!.promise;
            active--;
          },
        },
        step: {
          handle: (_ctx, p) => {
            enter(`step ${(p as { n: number }).n}`);
            active--;
          },
        },
        probe: noop,
      },
    });
    const first = await server.publisher.enqueueRecurring("report", "nightly", {}, EVERY_10S, { sequential: true });
    expect(isJobId(first)).toBe(true);
    const partition = partitionForKey("nightly", 2);
    expect((await server.backend.recurring.list())[0]).toMatchObject({ sequential: true, partition, nextRunAt: T0 + 10_000, nextJobId: first });
    expect(await server.backend.inspect.jobGet({ id: first! })).toBeNull(); // reserved: a delayed head would block its partition until then

    clock.advance(10_000);
    expect(await server.pollRecurring()).toBe(1);
    expect(await server.backend.inspect.jobGet({ id: first! })).toMatchObject({ topic: RECURRING_SEQUENTIAL_TOPIC, partition });
    await waitFor(async () => (await jobsOf(server, "step")).length === 1, "the chained step of occurrence 1");
    for (let k = 2; k <= 3; k++) {
      clock.advance(10_000);
      expect(await server.pollRecurring()).toBe(1);
    }
    // Free workers poll (the probe ran), yet occurrences 2 and 3 wait behind the running one.
    const probe = await server.publisher.enqueue("probe", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: probe }))?.stage === "success", "the probe job to run");
    const reports = await jobsOf(server, "report");
    expect(reports.map((j) => [j.stage, j.partition])).toEqual([
      ["running", partition],
      ["enqueued", partition],
      ["enqueued", partition],
    ]);
    expect(reports[1]!.seq).toBeGreaterThan(reports[0]!.seq!);
    expect(log).toEqual(["report 1"]);

    for (const gate of gates) gate.resolve();
    await waitFor(async () => {
      const all = [...(await jobsOf(server, "report")), ...(await jobsOf(server, "step"))];
      return all.length === 6 && all.every((j) => j.stage === "success");
    }, "every occurrence and step to succeed");
    expect(overlap).toBe(false);
    // Steps run right after their occurrence unless the next occurrence was already queued (the handler was slower than the schedule).
    expect(log).toEqual(["report 1", "step 1", "report 2", "report 3", "step 2", "step 3"]);
  });

  it("R3: sequential needs recurringSequentialPartitions; without it nothing is written", async () => {
    const h = harness();
    const server = await h.start({ clock: new ManualClock(), ...MANUAL_POLL, handlers: { report: noop } });
    const error = await server.publisher.enqueueRecurring("report", "nightly", {}, EVERY_10S, { sequential: true }).catch((e: Error) => e);
    expect(error).toMatchObject({ code: "INVALID_CONFIG", message: expect.stringMatching(/needs the option recurringSequentialPartitions/) });
    expect(await server.backend.recurring.list()).toEqual([]);
    expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
  });

  it("deleteRecurring removes the schedule; its enqueued jobs stay", async () => {
    const h = harness();
    const clock = new ManualClock();
    const server = await h.start({ clock, ...MANUAL_POLL, handlers: { report: noop } });
    const id = await server.publisher.enqueueRecurring("report", "r", {}, EVERY_10S);
    expect(await server.publisher.deleteRecurring("r")).toBe(true);
    expect(await server.publisher.deleteRecurring("r")).toBe(false);
    clock.advance(20_000);
    expect(await server.pollRecurring()).toBe(0);
    expect((await jobsOf(server, "report")).map((j) => j.id)).toEqual([id]);
  });
});
