// X9 visible, on both backends: `inspect.limitList` reads each limited job type's running jobs
// against its `concurrency`, its starts in the current rate window against `rateLimit.max`, and
// the ready jobs the limit holds back (from the stored limits, the running index and a bounded
// window of the claim index); the dashboard's `GET api/limits` and overview serve it, and the
// `later_limit_running` / `later_limit_waiting` gauges follow it, refreshed on the injected clock.
import { describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { JobInsert } from "@later/runtime/internal";
import { createDashboard, type Overview } from "@later/runtime/dashboard";
import { ManualClock } from "@later/runtime/testing";
import { call } from "../dashboard/dashboard-client.js";
import { BACKENDS } from "./backends.js";
import { deferred, useHarness, waitFor } from "./harness.js";

const NOW = 1_800_000_000_000;

function job(jobType: string, i: number, runAt = NOW, group: string | null = null): JobInsert {
  return { id: newJobId(NOW + i), jobType, payload: "{}", runAt, retryPolicy: null, group };
}

/** `name{job_type="type"}`'s value in a Prometheus text scrape; null when absent. */
function gauge(text: string, name: string, jobType: string): number | null {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(`job_type="${jobType}"`));
  return line === undefined ? null : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe.each(BACKENDS)("limits visible (X9) on $name", (entry) => {
  const harness = useHarness(entry);

  it("limitList: running against concurrency, starts in the window against max, and the ready jobs beyond the free slots", async () => {
    const db = await entry.createDatabase();
    const backend = db.backend("limits-seen");
    try {
      await backend.open();
      await backend.migrations.up();
      expect(await backend.inspect.limitList({ nowMs: NOW })).toEqual({ limits: [], complete: true });
      await backend.jobs.limitsSet({
        jobTypes: ["held", "paced", "free"],
        limits: [
          { jobType: "held", concurrency: 2, rateLimit: null, groupConcurrency: null },
          { jobType: "paced", concurrency: null, rateLimit: { max: 3, perMs: 1_000 }, groupConcurrency: null },
        ],
        now: NOW,
      });
      const jobs = [0, 1, 2, 3, 4].map((i) => job("held", i));
      jobs.push(...[5, 6, 7, 8].map((i) => job("paced", i)), job("free", 9), job("held", 10, NOW + 60_000));
      await backend.jobs.insertMany({ jobs, now: NOW });
      // Nothing running yet: 2 of the 5 ready "held" jobs fit the limit (they wait for a worker), 3 are held back; the delayed one is not ready.
      const before = await backend.inspect.limitList({ nowMs: NOW });
      expect(before).toEqual({
        complete: true,
        limits: [
          { jobType: "held", concurrency: 2, groupConcurrency: null, rateLimit: null, running: 0, startsInWindow: 0, ready: 5, waiting: 3 },
          {
            jobType: "paced",
            concurrency: null,
            groupConcurrency: null,
            rateLimit: { max: 3, perMs: 1_000 },
            running: 0,
            startsInWindow: 0,
            ready: 4,
            waiting: 1,
          },
        ],
      });
      const claim = { owner: "s1", limit: 10, now: NOW, leaseExpiresAt: NOW + 60_000, jobTypes: ["free"], limitedTypes: ["held", "paced"] };
      const claimed = await backend.jobs.claimReady(claim);
      expect(claimed.jobs).toHaveLength(6); // 2 held, 3 paced, 1 free
      const after = await backend.inspect.limitList({ nowMs: NOW + 500 });
      expect(after.limits).toEqual([
        { jobType: "held", concurrency: 2, groupConcurrency: null, rateLimit: null, running: 2, startsInWindow: 0, ready: 3, waiting: 3 },
        // The three paced jobs are running, started in the window: the fourth is held back.
        {
          jobType: "paced",
          concurrency: null,
          groupConcurrency: null,
          rateLimit: { max: 3, perMs: 1_000 },
          running: 3,
          startsInWindow: 3,
          ready: 1,
          waiting: 1,
        },
      ]);
      // The window has moved past the three starts: the fourth paced job may start, so it waits for a worker, not the limit.
      const later = await backend.inspect.limitList({ nowMs: NOW + 1_000 });
      expect(later.limits[1]).toMatchObject({ startsInWindow: 0, ready: 1, waiting: 0 });
      // A window of 2 of the oldest ready jobs: a lower bound, said so.
      const windowed = await backend.inspect.limitList({ nowMs: NOW + 500, window: 2 });
      expect(windowed.complete).toBe(false);
      expect(windowed.limits.reduce((n, l) => n + l.ready, 0)).toBeLessThanOrEqual(2);
    } finally {
      await backend.close();
      await db.dispose();
    }
  });

  it("groupList: the busiest groups of a type by running plus waiting, the ungrouped and the not yet due left out, bounded by the limit", async () => {
    const db = await entry.createDatabase();
    const backend = db.backend("groups-seen");
    try {
      await backend.open();
      await backend.migrations.up();
      expect(await backend.inspect.groupList({ jobType: "tenant", nowMs: NOW })).toEqual({ groups: [], complete: true });
      await backend.jobs.limitsSet({
        jobTypes: ["tenant"],
        limits: [{ jobType: "tenant", concurrency: null, rateLimit: null, groupConcurrency: 2 }],
        now: NOW,
      });
      let i = 0;
      const jobs: JobInsert[] = [];
      const add = (group: string | null, n: number, runAt = NOW, jobType = "tenant") => {
        for (let k = 0; k < n; k++) jobs.push(job(jobType, i++, runAt, group));
      };
      add("big", 7);
      add("mid", 4);
      add("small", 1);
      add("later", 3, NOW + 60_000); // not due: not waiting
      add(null, 9); // ungrouped: no group to list
      add("big", 5, NOW, "other"); // another type's group
      await backend.jobs.insertMany({ jobs, now: NOW });
      const before = await backend.inspect.groupList({ jobType: "tenant", nowMs: NOW });
      expect(before).toEqual({
        complete: true,
        groups: [
          { group: "big", running: 0, waiting: 7 },
          { group: "mid", running: 0, waiting: 4 },
          { group: "small", running: 0, waiting: 1 },
          { group: "later", running: 0, waiting: 0 },
        ],
      });
      // The limited claim starts 2 per group (the ungrouped are one group of their own): running moves from waiting.
      const claimed = await backend.jobs.claimReady({
        owner: "s1",
        limit: 100,
        now: NOW,
        leaseExpiresAt: NOW + 60_000,
        jobTypes: [],
        limitedTypes: ["tenant"],
      });
      expect(claimed.jobs).toHaveLength(7); // big 2, mid 2, small 1, ungrouped 2
      const after = await backend.inspect.groupList({ jobType: "tenant", nowMs: NOW, limit: 2 });
      expect(after).toEqual({
        complete: true,
        groups: [
          { group: "big", running: 2, waiting: 5 },
          { group: "mid", running: 2, waiting: 2 },
        ],
      });
      // A group with only running jobs (none ready) is still listed; the later group's jobs become due.
      const due = await backend.inspect.groupList({ jobType: "tenant", nowMs: NOW + 60_000, limit: 10 });
      expect(due.groups).toEqual([
        { group: "big", running: 2, waiting: 5 },
        { group: "mid", running: 2, waiting: 2 },
        { group: "later", running: 0, waiting: 3 },
        { group: "small", running: 1, waiting: 0 },
      ]);
      const limits = await backend.inspect.limitList({ nowMs: NOW });
      expect(limits.limits.map((l) => [l.jobType, l.groupConcurrency])).toEqual([["tenant", 2]]);
    } finally {
      await backend.close();
      await db.dispose();
    }
  });

  it("the dashboard's api/limits and overview, and the later_limit_running / later_limit_waiting gauges, show a limit reached", async () => {
    const h = harness();
    const clock = new ManualClock();
    const gate = deferred();
    let started = 0;
    const server = await h.start({
      clock,
      workerCount: 4,
      handlers: {
        held: {
          concurrency: 2,
          handle: async () => {
            started++;
            await gate.promise;
          },
        },
        free: { handle: () => undefined },
      },
    });
    await server.publisher.enqueueMany("held", [{}, {}, {}, {}, {}]);
    await waitFor(() => started === 2, "two held jobs running");
    const dashboard = createDashboard({ backend: server.backend, clock });
    const { status, body } = await call<{ at: number; limits: unknown[]; complete: boolean }>(dashboard, "/api/limits");
    expect(status).toBe(200);
    expect(body).toEqual({
      at: clock.now(),
      complete: true,
      limits: [{ jobType: "held", concurrency: 2, groupConcurrency: null, rateLimit: null, running: 2, startsInWindow: 0, ready: 3, waiting: 3 }],
    });
    const overview = await call<Overview>(dashboard, "/api/overview");
    expect(overview.body.limits).toEqual(body.limits);
    // The refresher reads every 5 s on the server's clock.
    clock.advance(5_000);
    const text = await waitFor(async () => {
      const t = await server.metrics();
      // Both gauges of one reading: the reading at start may have run between the enqueue and the first
      // claim (3 waiting, none running), so waiting alone does not tell the tick's reading from it.
      return gauge(t, "later_limit_waiting", "held") === 3 && gauge(t, "later_limit_running", "held") === 2 ? t : null;
    }, "the gauges after the tick");
    expect(gauge(text, "later_limit_running", "held")).toBe(2);
    expect(gauge(text, "later_limit_running", "free")).toBeNull(); // no limit, no series
    gate.resolve();
    await waitFor(async () => (await server.backend.inspect.stageCounts()).counts.success === 5, "every held job done");
    clock.advance(5_000);
    await waitFor(async () => {
      const t = await server.metrics();
      return gauge(t, "later_limit_running", "held") === 0 && gauge(t, "later_limit_waiting", "held") === 0;
    }, "the gauges back to 0");
  });
});
