// What the servers record for the dashboard (docs/semantics.md D1, D5, D7): per-second throughput and
// dispatch wait, per-minute backlog samples that outlive the servers, and every live server.
import { describe, expect, it } from "vitest";
import { BackgroundJobServer, newJobId, topic, type ServerOptions } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import type { Backend } from "@later/runtime/internal";
import { hostname } from "node:os";
import { BACKENDS, type TestDatabase } from "./backends.js";
import { waitFor } from "./harness.js";

const T0 = Date.UTC(2026, 0, 1); // a whole second

describe.each(BACKENDS)("dashboard activity on $name", (entry) => {
  /** Runs `body` with a fresh database and a migrated backend on it; shuts down every server it started. */
  async function withDatabase(
    body: (ctx: { db: TestDatabase; backend: Backend; start: (o: Partial<ServerOptions<unknown>>) => Promise<BackgroundJobServer<unknown>> }) => Promise<void>,
  ) {
    const db = await entry.createDatabase();
    const backend = db.backend("dash");
    const servers: BackgroundJobServer<unknown>[] = [];
    try {
      await backend.open();
      await backend.migrations.up();
      const start = async (o: Partial<ServerOptions<unknown>>) => {
        const server = await BackgroundJobServer.start<unknown>({ backend: db.backend("dash"), context: undefined, handlers: {}, pollIntervalMs: 50, ...o });
        servers.push(server);
        return server;
      };
      await body({ db, backend, start });
    } finally {
      await Promise.all(servers.map((s) => s.shutdown({ deadlineMs: 0 })));
      await backend.close();
      await db.dispose();
    }
  }

  it("D7: a second's bucket holds the transitions into each stage and the claims' dispatch wait, regular and partitioned apart", async () => {
    await withDatabase(async ({ backend, start }) => {
      const clock = new ManualClock(T0);
      await backend.partitions.topicRegister({ topics: [topic("orders", 1)], now: T0 - 1000 });
      // The last sample before the jobs exist; the server's first sample then places everything since.
      await backend.activity.enteredSample({ now: T0 - 1000, staleAfterMs: 60_000 });
      const job = (i: number, runAt: number, partitioned = false) => ({
        id: newJobId(T0 - 2000 + i),
        jobType: "work",
        payload: "{}",
        runAt,
        retryPolicy: null,
        ...(partitioned ? { topic: "orders", partition: 0 } : {}),
      });
      // Regular jobs due 2.5 s before the server claims them (at T0, the clock does not move until all ran);
      // a partition's head due 1 s before, and the head behind it, claimed by its predecessor's finish (no wait).
      const jobs = [job(0, T0 - 2500), job(1, T0 - 2500), job(2, T0 - 2500), job(3, T0 - 1000, true), job(4, T0 - 1000, true)];
      await backend.jobs.insertMany({ jobs, now: T0 - 2500 }); // the regular ones enqueued, the partitioned ones delayed
      await start({ clock, topics: [topic("orders", 1)], handlers: { work: { handle: () => undefined } } });
      await waitFor(async () => (await backend.inspect.stageCounts()).counts.success === 5, "every job to succeed");
      expect(await backend.inspect.activityList({ sinceMs: 0 })).toEqual({ buckets: [] });

      clock.advance(1000); // the dispatch-wait flush and the activity sample of T0
      const bucket = await waitFor(async () => {
        const [b] = (await backend.inspect.activityList({ sinceMs: T0 })).buckets;
        return b && b.regular.claims + b.partitioned.claims === 5 && b.entered.success === 5 ? b : null;
      }, "the bucket of T0");
      expect(bucket).toEqual({
        at: T0,
        entered: { enqueued: 3, delayed: 2, running: 5, success: 5 },
        regular: { claims: 3, waitTotalMs: 7500, waitMaxMs: 2500 },
        partitioned: { claims: 2, waitTotalMs: 1000, waitMaxMs: 1000 },
      });
      expect((await backend.inspect.activityList({ sinceMs: T0 + 1 })).buckets).toEqual([]);
    });
  });

  it("D5: per-minute backlog samples are stored by one server per minute and outlive the servers", async () => {
    await withDatabase(async ({ backend, start }) => {
      await backend.partitions.topicRegister({ topics: [topic("orders", 2)], now: T0 });
      const job = (i: number, partition?: number) => ({
        id: newJobId(T0 + i),
        jobType: "nobody-runs-this",
        payload: "{}",
        runAt: T0,
        retryPolicy: null,
        ...(partition === undefined ? {} : { topic: "orders", partition }),
      });
      await backend.jobs.insertMany({ jobs: [job(0), job(1), job(2), job(3, 0), job(4, 1)], now: T0 });
      const clock = new ManualClock(T0 + 10_000);
      const options = { clock, topics: [topic("orders", 2)], handlers: { work: { handle: () => undefined } } };
      const servers = [await start(options), await start(options)]; // two servers: still one sample a minute
      clock.advance(60_000);
      await waitFor(async () => (await backend.inspect.queueLengthList({ sinceMs: 0 })).samples.length === 1, "the first sample");
      for (const s of servers) await s.shutdown();
      await backend.jobs.insertMany({ jobs: [job(5)], now: T0 });
      // A restart: a new server, whose clock has moved on, samples its first minute beside the stored one.
      const later = new ManualClock(T0 + 130_000);
      await start({ ...options, clock: later });
      later.advance(60_000);
      const { samples } = await waitFor(async () => {
        const list = await backend.inspect.queueLengthList({ sinceMs: 0 });
        return list.samples.length === 2 ? list : null;
      }, "the sample after the restart");
      expect(samples).toEqual([
        { at: T0 + 60_000, ready: 5, partitionBacklog: 2 },
        { at: T0 + 180_000, ready: 6, partitionBacklog: 2 },
      ]);
      expect((await backend.inspect.queueLengthList({ sinceMs: T0 + 60_001 })).samples).toHaveLength(1);
    });
  });

  it("D1: every server heartbeats (with or without topics); a stopped one leaves the list", async () => {
    await withDatabase(async ({ backend, start }) => {
      const plain = await start({ workerCount: 3, handlers: { work: { handle: () => undefined } } });
      const withTopics = await start({ workerCount: 2, topics: [topic("orders", 2)], handlers: { work: { handle: () => undefined } } });
      const listed = async () => (await backend.inspect.workerList({ nowMs: Date.now() })).workers;
      const both = await waitFor(async () => ((await listed()).length === 2 ? listed() : null), "both servers listed");
      expect(both.map((w) => w.instanceId).sort()).toEqual([plain.instanceId, withTopics.instanceId].sort());
      const p = both.find((w) => w.instanceId === plain.instanceId)!;
      expect(p).toMatchObject({ host: hostname(), pid: process.pid, workers: 3, busy: 0 });
      expect(p.lastSeenAt).toBeLessThanOrEqual(Date.now());
      expect(both.find((w) => w.instanceId === withTopics.instanceId)).toMatchObject({ workers: 2 });
      await plain.shutdown();
      expect((await listed()).map((w) => w.instanceId)).toEqual([withTopics.instanceId]);
    });
  });
});
