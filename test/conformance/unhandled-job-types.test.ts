// Job types that nothing handles are visible: servers publish the job types they handle with
// their heartbeat; inspect.unhandledJobTypes lists the ready types no live server handles (from a
// bounded window of the claim index, never a count of the jobs); the later_queue_unhandled_jobs
// gauge and the server's UNHANDLED_JOB_TYPE warning (once per type, checked at its next
// heartbeat) follow from it.
import { describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { Backend, JobInsert } from "@later/runtime/internal";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { useHarness, waitFor } from "./harness.js";
import { openJobsPublisher } from "../codegen/schemas/shop.generated.js";

const NOW = 1_800_000_000_000;

function job(jobType: string, runAt: number, i: number, extra: Partial<JobInsert> = {}): JobInsert {
  return { id: newJobId(NOW + i), jobType, payload: "{}", runAt, retryPolicy: null, ...extra };
}

async function beat(backend: Backend, instanceId: string, jobTypes: string[], expiresAt: number): Promise<void> {
  await backend.activity.serverHeartbeat({ instanceId, host: "h", pid: 1, workers: 1, busy: 0, now: NOW, expiresAt, jobTypes });
}

describe.each(BACKENDS)("unhandled job types on $name", (entry) => {
  const harness = useHarness(entry);

  it("lists ready types no live server publishes, counted in the window of the oldest ready jobs", async () => {
    const db = await entry.createDatabase();
    const backend = db.backend("unhandled");
    try {
      await backend.open();
      await backend.migrations.up();
      await backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 2 }], now: NOW });
      await backend.jobs.insertMany({
        jobs: [
          job("resize", NOW, 0),
          job("deletePhoto", NOW - 3, 1),
          job("deletePhoto", NOW - 2, 2),
          job("deletePhoto", NOW - 1, 3),
          job("archive", NOW, 4),
          job("later", NOW + 60_000, 5), // delayed, not due: not ready
          job("partitioned", NOW, 6, { topic: "t", partition: 0 }), // partitioned jobs are not read
        ],
        now: NOW,
      });
      const unhandled = (window?: number) => backend.inspect.unhandledJobTypes({ nowMs: NOW + 1_000, window });
      // No live server: every ready type is unhandled, most jobs first.
      expect(await unhandled()).toEqual({
        jobTypes: [
          { jobType: "deletePhoto", ready: 3 },
          { jobType: "archive", ready: 1 },
          { jobType: "resize", ready: 1 },
        ],
        complete: true,
      });
      await beat(backend, "live", ["resize", "archive"], NOW + 15_000);
      await beat(backend, "expired", ["deletePhoto"], NOW + 500); // its heartbeat has expired: not live
      expect(await unhandled()).toEqual({ jobTypes: [{ jobType: "deletePhoto", ready: 3 }], complete: true });
      // A window smaller than the ready jobs: a lower bound, said so.
      expect(await unhandled(2)).toEqual({ jobTypes: [{ jobType: "deletePhoto", ready: 2 }], complete: false });
      const workers = (await backend.inspect.workerList({ nowMs: NOW + 1_000 })).workers;
      expect(workers.map((w) => [w.instanceId, w.jobTypes])).toEqual([["live", ["resize", "archive"]]]);
      await beat(backend, "live", ["resize", "archive", "deletePhoto"], NOW + 15_000);
      expect(await unhandled()).toEqual({ jobTypes: [], complete: true });
    } finally {
      await backend.close();
      await db.dispose();
    }
  });

  it("a server publishes its types, warns once per type it enqueued that no live server handles, and reports the gauge", async () => {
    const h = harness();
    // Ahead of the wall clock (ids minted from it carry its time), at half past an hour: the schedules below are
    // hourly, and the 15 s this test advances must not cross an hour, whose occurrence would add a job (a run that
    // started at 03:59:5x failed so, waiting for a count of 1 that was 2).
    const ahead = Date.now() + 3_600_000;
    const clock = new ManualClock(ahead - (ahead % 3_600_000) + 1_800_000);
    const server = await h.start({ clock, namespace: "photos", handlers: { resize: { handle: async () => {} } } });
    const gauges = async () => server.metrics();
    // Its own heartbeat at start published "resize".
    await waitFor(async () => {
      const { workers } = await server.backend.inspect.workerList({ nowMs: clock.now() });
      return workers.some((w) => w.instanceId === server.instanceId && w.jobTypes.join() === "resize");
    }, "the first heartbeat with the job types");
    // A schedule written by a process built from a newer schema: this server enqueues its occurrences.
    const now = clock.now();
    await server.backend.recurring.upsert({
      schedule: { id: "cleanup", jobType: "deletePhoto", payload: "{}", cron: "0 0 * * * *", timeZone: "UTC", sequential: false, partition: null },
      firstJob: null,
      nextRunAt: now - 1_000,
      nextJobId: null,
      now,
    });
    // The occurrence is due at the clock's time, which the server's own poller also read when it first polled at
    // start: a first poll whose read came after this upsert enqueues it itself (the two polls' compare-and-set lets
    // one through). Once a poll resolves, every occurrence due at its start is committed, once, by one of them.
    await server.pollRecurring();
    expect((await server.backend.inspect.stageCounts()).counts.enqueued).toBe(1);
    const warnings = () => h.events.filter((e) => e.type === "warning");
    expect(warnings()).toEqual([]); // checked at the next heartbeat, not on the enqueue path
    clock.advance(5_000);
    await waitFor(() => warnings().length === 1, "the warning after the heartbeat");
    expect(warnings()[0]).toMatchObject({ type: "warning", code: "UNHANDLED_JOB_TYPE", jobType: "deletePhoto" });
    expect((warnings()[0] as { message: string }).message).toContain("no live server handles");
    await waitFor(async () => /later_queue_unhandled_jobs\{queue="photos",job_type="deletePhoto"\} 1\n/.test(await gauges()), "the gauge");
    // Once per type: another occurrence, another beat, no second warning.
    await server.backend.recurring.upsert({
      schedule: { id: "cleanup-2", jobType: "deletePhoto", payload: "{}", cron: "0 0 * * * *", timeZone: "UTC", sequential: false, partition: null },
      firstJob: null,
      nextRunAt: clock.now() - 1_000,
      nextJobId: null,
      now: clock.now(),
    });
    await server.pollRecurring();
    clock.advance(5_000);
    await waitFor(async () => /later_queue_unhandled_jobs\{queue="photos",job_type="deletePhoto"\} 2\n/.test(await gauges()), "the gauge of two");
    expect(warnings()).toHaveLength(1);
    // A server that handles it starts: it runs them, and the series goes.
    await h.start({ clock, namespace: "photos", handlers: { deletePhoto: { handle: async () => {} } } });
    await waitFor(async () => (await server.backend.inspect.stageCounts()).counts.success === 2, "both run");
    clock.advance(5_000);
    await waitFor(async () => !(await gauges()).includes('later_queue_unhandled_jobs{queue="photos"'), "the series gone");
  });

  it("an enqueue-only publisher warns once per type it enqueued that no live server handles, one heartbeat interval later", async () => {
    const h = harness();
    const clock = new ManualClock(Date.now() + 3_600_000);
    // A worker that handles sendEmail only; the web process's publisher enqueues sendEmail and createAccount.
    const server = await h.start({ clock, namespace: "web", handlers: { sendEmail: { handle: async () => {} } } });
    await waitFor(async () => {
      const { workers } = await server.backend.inspect.workerList({ nowMs: clock.now() });
      return workers.some((w) => w.instanceId === server.instanceId);
    }, "the worker's first heartbeat");
    const warned: { fields: { code?: string; jobType?: string }; message: string }[] = [];
    const ignore = () => {};
    const logger = { debug: ignore, info: ignore, error: ignore, warn: (fields: object, message: string) => warned.push({ fields, message }) };
    const publisher = await openJobsPublisher({ backend: h.db.backend("web"), clock, logger });
    try {
      await publisher.jobs.sendEmail.enqueue({ address: "a", body: "b" });
      await publisher.jobs.createAccount.enqueue({ id: "acct-1", createdAt: new Date() });
      await publisher.jobs.createAccount.enqueue({ id: "acct-2", createdAt: new Date() });
      expect(warned).toEqual([]); // nothing read on the enqueue path
      clock.advance(5_000);
      await waitFor(() => warned.length > 0, "the publisher's warning");
      expect(warned.map((w) => [w.fields.code, w.fields.jobType])).toEqual([["UNHANDLED_JOB_TYPE", "createAccount"]]);
      expect(warned[0]!.message).toContain("no live server handles");
      // Once per type: more of them, another interval, no second warning (close() awaits a check in flight).
      await publisher.jobs.createAccount.enqueue({ id: "acct-3", createdAt: new Date() });
      clock.advance(5_000);
      await publisher.close();
      expect(warned).toHaveLength(1);
    } finally {
      await publisher.close();
    }
  });
});
