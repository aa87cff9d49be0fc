/**
 * Migration 4 (stage counters) seeds the counters by a recount: jobs written
 * before it are counted once it has run, and the counters go on from there.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { newJobId, RetryPolicy, topic } from "@later/runtime";
import type { JobInsert } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";
import { migrationRewind } from "./migration-rewind.js";

/**
 * Removes what migration 4 created (and PostgreSQL's migration 5, which only
 * dropped migration 4's triggers), and the retained log's tables (a later
 * migration, applied again with the others), leaving the schema of migration 3.
 */
const UNDO_MIGRATION_4: Record<string, string[]> = {
  sqlite: [
    ...migrationRewind("sqlite", "retained-log"),
    "DROP TABLE later_stage_counts",
    "DROP TABLE later_partition_counts",
    "DELETE FROM later_migrations WHERE version >= 4",
  ],
  postgres: [
    ...migrationRewind("postgres", "retained-log"),
    ...["insert", "update", "delete"].map((t) => `DROP FUNCTION IF EXISTS later_jobs_count_${t}() CASCADE`),
    "DROP FUNCTION IF EXISTS later_counter_shard()",
    "DROP SEQUENCE IF EXISTS later_counter_shards",
    "DROP TABLE later_stage_counts",
    "DROP TABLE later_partition_counts",
    "DELETE FROM later_migrations WHERE version >= 4",
  ],
};

describe.each(BACKENDS)("stage counters migration on $name", (entry) => {
  it("a database with jobs from migration 3, migrated up: the counters equal the recount, and keep counting", async () => {
    const db = await entry.createDatabase();
    const backend = db.backend();
    try {
      await backend.open();
      await backend.migrations.up();
      const app = db.appDatabase<Record<string, never>>();

      // Jobs, then the database as migration 3 left it: plain, delayed, partitioned, one running, one finished.
      await backend.partitions.topicRegister({ topics: [topic("orders", 2)], now: Date.now() });
      const now = Date.now();
      const policy = JSON.stringify(RetryPolicy.noRetries());
      const job = (i: number, extra: Partial<JobInsert> = {}): JobInsert => ({
        id: newJobId(now + i),
        jobType: "work",
        payload: "{}",
        runAt: now,
        retryPolicy: policy,
        ...extra,
      });
      const jobs = [
        ...Array.from({ length: 6 }, (_, i) => job(i)),
        job(10, { runAt: now + 3_600_000 }),
        ...Array.from({ length: 5 }, (_, i) => job(20 + i, { topic: "orders", partition: i % 2 })),
      ];
      await backend.jobs.insertMany({ jobs, now });
      const claimed = await backend.jobs.claimReady({ owner: "o", limit: 2, now, leaseExpiresAt: now + 60_000, jobTypes: ["work"] });
      await backend.jobs.finishMany({ finishes: [{ ...claimed.jobs[0]!, outcome: { kind: "success" } }], now, retentionMs: 60_000 });

      for (const statement of UNDO_MIGRATION_4[entry.name]!) await sql.raw(statement).execute(app);
      expect((await backend.migrations.status()).current).toBe(3);

      const pending = (await backend.migrations.status()).pending.map((m) => m.version);
      expect(pending[0]).toBe(4);
      const applied = await backend.migrations.up();
      expect(applied.applied.map((m) => m.version)).toEqual(pending);
      const recount = async () =>
        Object.fromEntries(
          (await sql<{ stage: string; n: number }>`SELECT stage, count(*) AS n FROM later_jobs GROUP BY stage`.execute(app)).rows.map((r) => [
            r.stage,
            Number(r.n),
          ]),
        );
      const { counts } = await backend.inspect.stageCounts();
      expect(counts).toMatchObject(await recount());
      expect(counts).toMatchObject({ enqueued: 9, delayed: 1, running: 1, success: 1, waiting: 0 });
      expect((await backend.inspect.partitionDepth()).partitions.map((p) => p.unfinished)).toEqual([3, 2]);
      expect((await backend.inspect.topicDepth()).topics).toEqual([{ topic: "orders", partitions: 2, unfinished: 5 }]);

      // And they go on counting from there.
      await backend.jobs.finishMany({ finishes: [{ ...claimed.jobs[1]!, outcome: { kind: "fail", error: "x" } }], now, retentionMs: 0 });
      expect(await backend.jobs.deleteExpired({ now: now + 1, limit: 10 })).toBe(1);
      expect((await backend.inspect.stageCounts()).counts).toMatchObject({ ...(await recount()), failed: 0, running: 0 });
      await app.destroy();
    } finally {
      await backend.close();
      await db.dispose();
    }
  });
});
