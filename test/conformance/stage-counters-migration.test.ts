/**
 * Migration 4 (stage counters) seeds the counters by a recount: jobs written
 * before it are counted once it has run, and the counters go on from there.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { newJobId, RetryPolicy, topic } from "@later/runtime";
import type { JobInsert } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";

/**
 * Removes what migration 4 created (and PostgreSQL's migration 5, which only
 * dropped migration 4's triggers), and the retained log's tables (a later
 * migration, applied again with the others), leaving the schema of migration 3.
 */
/**
 * The tables of the retained-log migration (SQLite 6, PostgreSQL 7), dropped so it applies again. SQLite's records
 * are in `later_log_batches` since its migration 10 (which dropped `later_log_records`): undone with them.
 */
const logTables = (records: string) => ["topics", "partitions", records, "group_partitions", "group_members"].map((t) => `DROP TABLE later_log_${t}`);

/** What the fan-in migration (18 on both, X5) added, dropped so it applies again (its trigger first: it reads `parents_left`). */
const FAN_IN: Record<string, string[]> = {
  sqlite: ["DROP TRIGGER later_job_parents_delete", "DROP TABLE later_job_parents", "ALTER TABLE later_jobs DROP COLUMN parents_left"],
  postgres: ["DROP FUNCTION later_job_parents_delete() CASCADE", "DROP TABLE later_job_parents", "ALTER TABLE later_jobs DROP COLUMN parents_left"],
};

/** The tables and indexes of the dashboard migration (SQLite 7, PostgreSQL 8), dropped so it applies again (its `entered` column goes with later_stage_counts). */
const DASHBOARD = [
  ...["activity", "activity_marks", "queue_length", "servers"].map((t) => `DROP TABLE later_${t}`),
  "DROP INDEX later_jobs_topic_list",
  // The job-progress migration (SQLite 9, PostgreSQL 9).
  "ALTER TABLE later_jobs DROP COLUMN progress",
  // The job-timeout migration (SQLite 12, PostgreSQL 12).
  "ALTER TABLE later_jobs DROP COLUMN timeout_ms",
  // The job-result migration (SQLite 17, PostgreSQL 17; PostgreSQL's `awaited` is dropped in its own list).
  "ALTER TABLE later_jobs DROP COLUMN result",
  // The cancelled-stage migration (SQLite 16, PostgreSQL 16; X3) rebuilds indexes and (PostgreSQL) a CHECK: it applies again as it is.
  // The priority-unique migration (SQLite 15, PostgreSQL 15; X1, X2): the ready index back to (namespace, run_at).
  "DROP INDEX later_jobs_unique",
  "DROP INDEX later_jobs_ready",
  "CREATE INDEX later_jobs_ready ON later_jobs (namespace, run_at) WHERE stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL",
  "ALTER TABLE later_jobs DROP COLUMN priority",
  "ALTER TABLE later_jobs DROP COLUMN unique_key",
  "ALTER TABLE later_jobs DROP COLUMN unique_slot",
  // The job-meta migration (SQLite 14, PostgreSQL 14; X10).
  "ALTER TABLE later_jobs DROP COLUMN meta",
  // The paused migration (SQLite 13, PostgreSQL 13; X4).
  "DROP TABLE later_paused",
];

const UNDO_MIGRATION_4: Record<string, string[]> = {
  sqlite: [
    ...FAN_IN.sqlite!,
    ...logTables("batches"),
    ...DASHBOARD,
    "DROP TABLE later_stage_counts",
    "DROP TABLE later_partition_counts",
    "DELETE FROM later_migrations WHERE version >= 4",
  ],
  postgres: [
    ...FAN_IN.postgres!,
    ...logTables("records"),
    ...DASHBOARD,
    "ALTER TABLE later_jobs DROP COLUMN awaited",
    "DROP INDEX later_jobs_parent",
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
