// The dashboard's reads of the seam (docs/semantics.md D1-D3, D5, D7): the job list's topic, partition and
// search filters with cursor paging, a job's children, the oldest ready job, the database size,
// and the activity, backlog and server rows the servers write.
import { describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { Backend, JobInsert, JobListParams } from "@later/runtime/internal";
import { BACKENDS, type TestDatabase } from "./backends.js";

const NOW = 1_800_000_000_000;

async function opened(db: TestDatabase, namespace: string): Promise<Backend> {
  const backend = db.backend(namespace);
  await backend.open();
  await backend.migrations.up();
  return backend;
}

describe.each(BACKENDS)("dashboard reads on $name", (entry) => {
  it("filters the job list by topic, partition and search, a page at a time", async () => {
    const db = await entry.createDatabase();
    const backend = await opened(db, "dash-list");
    try {
      await backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 4 }], now: NOW });
      const jobs: JobInsert[] = Array.from({ length: 12 }, (_, i) => ({
        id: newJobId(NOW + i),
        jobType: i % 3 === 0 ? "sendEmail" : i % 3 === 1 ? "sendSms" : "resize",
        payload: "{}",
        runAt: NOW,
        retryPolicy: null,
        ...(i >= 4 ? { topic: "orders", partition: i % 2 } : {}),
      }));
      await backend.jobs.insertMany({ jobs, now: NOW });
      const ids = jobs.map((j) => j.id);
      const list = async (p: Partial<JobListParams>) => (await backend.inspect.jobList({ limit: 100, ...p })).map((j) => j.id);

      expect(await list({ topic: "orders" })).toEqual(ids.slice(4));
      expect(await list({ topic: "orders", partition: 1 })).toEqual([ids[5], ids[7], ids[9], ids[11]]);
      expect(await list({ partition: 0 })).toEqual([ids[4], ids[6], ids[8], ids[10]]);
      expect(await list({ topic: "none" })).toEqual([]);
      // cursor pages under a filter, both orders
      expect(await list({ topic: "orders", limit: 3 })).toEqual(ids.slice(4, 7));
      expect(await list({ topic: "orders", limit: 3, afterId: ids[6] })).toEqual(ids.slice(7, 10));
      expect(await list({ topic: "orders", partition: 0, order: "desc", limit: 2, afterId: ids[10] })).toEqual([ids[8], ids[6]]);
      // search: a job-type prefix, or an id prefix (the whole id, or all but its last characters)
      expect(await list({ q: "send" })).toEqual(ids.filter((_, i) => i % 3 !== 2));
      expect(await list({ q: "sendS" })).toEqual(ids.filter((_, i) => i % 3 === 1));
      expect(await list({ q: ids[3]! })).toEqual([ids[3]]);
      const prefix = ids[3]!.slice(0, 20);
      expect(await list({ q: prefix })).toEqual(ids.filter((id) => id.startsWith(prefix)));
      expect(await list({ q: "resize", topic: "orders", limit: 1 })).toEqual([ids[5]]);
      expect(await list({ q: "%" })).toEqual([]);
      expect(await list({ q: "zzz" })).toEqual([]);
    } finally {
      await backend.close();
      await db.dispose();
    }
  });

  it("lists a job's children up to a limit, the oldest ready job, and the database size", async () => {
    const db = await entry.createDatabase();
    const backend = await opened(db, "dash-children");
    try {
      expect(await backend.inspect.oldestReadyAt({ nowMs: NOW })).toBeNull();
      const parent = newJobId(NOW);
      const children = Array.from({ length: 5 }, (_, i) => newJobId(NOW + 1 + i));
      await backend.jobs.insertMany({ jobs: [{ id: parent, jobType: "parent", payload: "{}", runAt: NOW - 500, retryPolicy: null }], now: NOW - 1000 });
      await backend.jobs.insertMany({
        jobs: [
          ...children.map((id, i) => ({ id, jobType: `child${i}`, payload: "{}", runAt: NOW, retryPolicy: null, parentId: parent })),
          { id: newJobId(NOW + 10), jobType: "later", payload: "{}", runAt: NOW + 60_000, retryPolicy: null },
        ],
        now: NOW - 1000,
      });
      const got = await backend.inspect.jobChildren({ id: parent, limit: 3 });
      expect(got).toEqual(children.slice(0, 3).map((id, i) => ({ id, jobType: `child${i}`, stage: "waiting" })));
      expect(await backend.inspect.jobChildren({ id: children[0]!, limit: 25 })).toEqual([]);
      // the parent (due 500 ms ago) is the oldest ready job; the delayed one is not due
      expect(await backend.inspect.oldestReadyAt({ nowMs: NOW })).toBe(NOW - 500);
      expect(await backend.inspect.oldestReadyAt({ nowMs: NOW - 600 })).toBeNull();
      expect(await backend.inspect.databaseBytes()).toBeGreaterThan(0);
    } finally {
      await backend.close();
      await db.dispose();
    }
  });
});

describe.each(BACKENDS)("dashboard activity rows on $name", (entry) => {
  it("an activity sample places the transitions since a fresh last sample, in the second before it", async () => {
    const db = await entry.createDatabase();
    const backend = await opened(db, "dash-sample");
    try {
      const sample = (now: number) => backend.activity.enteredSample({ now, staleAfterMs: 60_000 });
      const insert = (n: number, at: number) =>
        backend.jobs.insertMany({
          jobs: Array.from({ length: n }, (_, i) => ({ id: newJobId(at + i), jobType: "w", payload: "{}", runAt: at + 3_600_000, retryPolicy: null })),
          now: at,
        });
      await insert(2, NOW - 5000);
      expect(await sample(NOW)).toBe(0); // the first sample only marks
      await insert(3, NOW);
      expect(await sample(NOW + 1000)).toBe(3);
      expect(await sample(NOW + 2000)).toBe(0);
      await insert(4, NOW + 2000);
      expect(await sample(NOW + 200_000)).toBe(0); // a stale mark: the 4 cannot be placed in a second
      const claimed = await backend.jobs.claimReady({ owner: "o", limit: 10, now: NOW + 3_700_000, leaseExpiresAt: NOW + 3_800_000, jobTypes: ["w"] });
      expect(claimed.jobs).toHaveLength(9);
      expect(claimed.jobs.every((j) => j.runAt >= NOW - 5000 + 3_600_000)).toBe(true);
      expect(await sample(NOW + 201_000)).toBe(9);
      expect((await backend.inspect.activityList({ sinceMs: 0 })).buckets).toEqual([
        { at: NOW, entered: { delayed: 3 }, regular: none(), partitioned: none() },
        { at: NOW + 200_000, entered: { running: 9 }, regular: none(), partitioned: none() },
      ]);
    } finally {
      await backend.close();
      await db.dispose();
    }
  });

  it("samplers of several servers at once place each transition once", async () => {
    const db = await entry.createDatabase();
    const backends = [await opened(db, "dash-many"), await opened(db, "dash-many"), await opened(db, "dash-many")];
    try {
      const [first] = backends;
      await first!.activity.enteredSample({ now: NOW, staleAfterMs: 60_000 });
      for (let round = 1; round <= 3; round++) {
        const at = NOW + round * 1000;
        const jobs = Array.from({ length: 10 }, (_, i) => ({ id: newJobId(at + i), jobType: "w", payload: "{}", runAt: at, retryPolicy: null }));
        await first!.jobs.insertMany({ jobs, now: at });
        const placed = await Promise.all(backends.map((b) => b.activity.enteredSample({ now: at + 1000, staleAfterMs: 60_000 })));
        expect(placed.reduce((a, b) => a + b, 0)).toBe(10);
      }
      const { buckets } = await first!.inspect.activityList({ sinceMs: 0 });
      expect(buckets.map((b) => [b.at, b.entered])).toEqual([1, 2, 3].map((r) => [NOW + r * 1000, { enqueued: 10 }]));
    } finally {
      for (const b of backends) await b.close();
      await db.dispose();
    }
  });

  it("dispatch waits of several servers add up in one bucket (the maximum the larger); sweeps keep what is young enough", async () => {
    const db = await entry.createDatabase();
    const backend = await opened(db, "dash-wait");
    try {
      const w = (claims: number, waitTotalMs: number, waitMaxMs: number) => ({ claims, waitTotalMs, waitMaxMs });
      await backend.activity.dispatchWaitAdd({ at: NOW, regular: w(2, 300, 200), partitioned: none() });
      await backend.activity.dispatchWaitAdd({ at: NOW, regular: w(1, 150, 150), partitioned: w(1, 40, 40) });
      await backend.activity.dispatchWaitAdd({ at: NOW + 5000, regular: w(1, 900, 900), partitioned: none() });
      const { buckets } = await backend.inspect.activityList({ sinceMs: NOW });
      expect(buckets).toEqual([
        { at: NOW, entered: {}, regular: w(3, 450, 200), partitioned: w(1, 40, 40) },
        { at: NOW + 5000, entered: {}, regular: w(1, 900, 900), partitioned: none() },
      ]);
      for (let m = 0; m < 5; m++) await backend.activity.queueLengthAdd({ at: NOW + m * 60_000, ready: m, partitionBacklog: 0 });
      await backend.activity.queueLengthAdd({ at: NOW, ready: 99, partitionBacklog: 99 }); // the minute's first sample stays
      await backend.activity.serverHeartbeat({ instanceId: "gone", host: "h", pid: 1, workers: 1, busy: 0, now: NOW, expiresAt: NOW + 100, jobTypes: [] });
      expect((await backend.inspect.workerList({ nowMs: NOW + 50 })).workers.map((x) => x.instanceId)).toEqual(["gone"]);
      expect((await backend.inspect.workerList({ nowMs: NOW + 100 })).workers).toEqual([]);
      // activity before NOW + 1 s, samples before the third minute; a span of one minute per statement
      const deleted = await backend.activity.activitySweep({
        activityBefore: NOW + 1000,
        queueLengthBefore: NOW + 120_000,
        serversBefore: NOW + 200,
        spanMs: 60_000,
      });
      expect(deleted).toBe(2 + 2);
      expect((await backend.inspect.activityList({ sinceMs: 0 })).buckets.map((b) => b.at)).toEqual([NOW + 5000]);
      expect((await backend.inspect.queueLengthList({ sinceMs: 0 })).samples).toEqual(
        [2, 3, 4].map((m) => ({ at: NOW + m * 60_000, ready: m, partitionBacklog: 0 })),
      );
      await backend.activity.serverHeartbeat({ instanceId: "gone", host: "h", pid: 1, workers: 1, busy: 0, now: NOW, expiresAt: NOW + 1000, jobTypes: [] });
      expect((await backend.inspect.workerList({ nowMs: NOW })).workers).toHaveLength(1); // the sweep had deleted the row; the beat wrote it again
    } finally {
      await backend.close();
      await db.dispose();
    }
  });
});

function none() {
  return { claims: 0, waitTotalMs: 0, waitMaxMs: 0 };
}
