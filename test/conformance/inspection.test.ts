// Reading jobs back (what `later jobs list` and the dashboard use): cursor pages by id, newest
// or oldest first, filtered by stage and job type, and counts by stage.
import { describe, expect, it } from "vitest";
import { newJobId, RetryPolicy } from "@later/runtime";
import type { Backend, JobInsert, JobListParams } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";

describe.each(BACKENDS)("inspection on $name", (entry) => {
  it("lists cursor pages in both orders, filtered by stage and job type", async () => {
    const db = await entry.createDatabase();
    const backend: Backend = db.backend("inspect");
    try {
      await backend.open();
      await backend.migrations.up();
      const now = 1_800_000_000_000;
      const policy = JSON.stringify(RetryPolicy.default());
      const jobs: JobInsert[] = Array.from({ length: 7 }, (_, i) => ({
        id: newJobId(now + i),
        jobType: i % 2 === 0 ? "even" : "odd",
        payload: `{"i":${i}}`,
        runAt: i === 6 ? now + 60_000 : now,
        retryPolicy: policy,
      }));
      await backend.jobs.insertMany({ jobs, now });
      const ids = jobs.map((j) => j.id);
      const list = async (p: Partial<JobListParams>) => (await backend.inspect.jobList({ limit: 100, ...p })).map((j) => j.id);

      expect(await list({})).toEqual(ids);
      expect(await list({ order: "desc" })).toEqual([...ids].reverse());
      expect(await list({ limit: 3 })).toEqual(ids.slice(0, 3));
      expect(await list({ limit: 3, afterId: ids[2] })).toEqual(ids.slice(3, 6));
      expect(await list({ order: "desc", limit: 2, afterId: ids[5] })).toEqual([ids[4], ids[3]]);
      expect(await list({ jobType: "odd" })).toEqual([ids[1], ids[3], ids[5]]);
      expect(await list({ jobType: "even", order: "desc" })).toEqual([ids[6], ids[4], ids[2], ids[0]]);
      expect(await list({ stage: "delayed" })).toEqual([ids[6]]);
      expect(await list({ stage: "enqueued", jobType: "even" })).toEqual([ids[0], ids[2], ids[4]]);
      expect(await list({ jobType: "none" })).toEqual([]);
      expect((await backend.inspect.stageCounts()).counts).toMatchObject({ enqueued: 6, delayed: 1, running: 0 });
      // another namespace on the same database sees none of them
      const other = db.backend("elsewhere");
      await other.open();
      expect(await other.inspect.jobList({ limit: 10 })).toEqual([]);
      await other.close();
    } finally {
      await backend.close();
      await db.dispose();
    }
  });
});
