// The dashboard's reads of the seam (DESIGN D1-D3, D5, D7): the job list's topic, partition and
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
