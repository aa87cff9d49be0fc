// inspect.oldestReadyAt (the dashboard contract): the due time of the oldest ready regular job, one probe of the
// ready index, never seeing partitioned, running or not-yet-due jobs or other namespaces (the gauge
// later_queue_oldest_ready_age_seconds reads it every 5 s).
import { describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { Backend, JobInsert } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";

describe.each(BACKENDS)("inspect.oldestReadyAt on $name", (entry) => {
  it("is the oldest due run-at of enqueued, requeued and due delayed regular jobs; null when none", async () => {
    const db = await entry.createDatabase();
    const backend: Backend = db.backend("ready");
    try {
      await backend.open();
      await backend.migrations.up();
      await backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 1 }], now: 0 });
      const now = 1_800_000_000_000;
      expect(await backend.inspect.oldestReadyAt({ nowMs: now })).toBeNull();
      const job = (runAt: number, extra: Partial<JobInsert> = {}): JobInsert => ({
        id: newJobId(now),
        jobType: "a",
        payload: "{}",
        runAt,
        retryPolicy: null,
        ...extra,
      });
      // Not ready: a partitioned job (a partition head, not the regular queue) and a job not yet due.
      await backend.jobs.insertMany({ jobs: [job(now - 90_000, { topic: "t", partition: 0 }), job(now + 60_000)], now: now - 100_000 });
      expect(await backend.inspect.oldestReadyAt({ nowMs: now })).toBeNull();
      // The delayed job is ready once due; a newer ready one does not move the answer.
      expect(await backend.inspect.oldestReadyAt({ nowMs: now + 60_000 })).toBe(now + 60_000);
      await backend.jobs.insertMany({ jobs: [job(now - 5_000), job(now - 1_000)], now });
      expect(await backend.inspect.oldestReadyAt({ nowMs: now })).toBe(now - 5_000);
      // A claimed (running) job is not ready: the next oldest is.
      const { jobs } = await backend.jobs.claimReady({ owner: "w", limit: 1, now, leaseExpiresAt: now + 30_000, jobTypes: ["a"] });
      expect(jobs.map((j) => j.runAt)).toEqual([now - 5_000]);
      expect(await backend.inspect.oldestReadyAt({ nowMs: now })).toBe(now - 1_000);
      // Other namespaces are not seen.
      const other = db.backend("elsewhere");
      await other.open();
      expect(await other.inspect.oldestReadyAt({ nowMs: now })).toBeNull();
      await other.close();
    } finally {
      await backend.close();
      await db.dispose();
    }
  });
});
