/**
 * The nullable-retry-policy migration (SQLite 5, PostgreSQL 6): jobs written
 * before it keep their stored policy, and jobs enqueued after it without an
 * explicit policy store NULL. The migrations after it are undone too, and applied again.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { newJobId, RetryPolicy } from "@later/runtime";
import { BACKENDS } from "./backends.js";

/**
 * The tables of the retained-log migration (SQLite 6, PostgreSQL 7), dropped with it so it applies again. SQLite's records
 * are in `later_log_batches` since its migration 10 (which dropped `later_log_records`): undone with them.
 */
const logTables = (records: string) => ["topics", "partitions", records, "group_partitions", "group_members"].map((t) => `DROP TABLE later_log_${t}`);

/** What the fan-in migration (18 on both, X5) added, dropped so it applies again (its trigger first: it reads `parents_left`). */
const FAN_IN: Record<string, string[]> = {
  sqlite: ["DROP TRIGGER later_job_parents_delete", "DROP TABLE later_job_parents", "ALTER TABLE later_jobs DROP COLUMN parents_left"],
  postgres: ["DROP FUNCTION later_job_parents_delete() CASCADE", "DROP TABLE later_job_parents", "ALTER TABLE later_jobs DROP COLUMN parents_left"],
};

/** What the dashboard migration (SQLite 7, PostgreSQL 8) added, dropped so it applies again. */
const DASHBOARD = [
  ...["activity", "activity_marks", "queue_length", "servers"].map((t) => `DROP TABLE later_${t}`),
  "DROP INDEX later_jobs_topic_list",
  "ALTER TABLE later_stage_counts DROP COLUMN entered",
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

/** Puts `retry_policy` back as the migrations before it left it (NOT NULL) and forgets the migration (and those after it). */
const UNDO: Record<string, { version: number; statements: string[] }> = {
  sqlite: {
    version: 5,
    statements: [
      ...FAN_IN.sqlite!,
      ...logTables("batches"),
      ...DASHBOARD,
      "ALTER TABLE later_jobs RENAME COLUMN retry_policy TO retry_policy_new",
      "ALTER TABLE later_jobs ADD COLUMN retry_policy TEXT NOT NULL DEFAULT ''",
      "UPDATE later_jobs SET retry_policy = retry_policy_new",
      "ALTER TABLE later_jobs DROP COLUMN retry_policy_new",
      "DELETE FROM later_migrations WHERE version >= 5",
    ],
  },
  postgres: {
    version: 6,
    statements: [
      ...FAN_IN.postgres!,
      ...logTables("records"),
      ...DASHBOARD,
      "ALTER TABLE later_jobs DROP COLUMN awaited",
      "DROP INDEX later_jobs_parent",
      "ALTER TABLE later_jobs ALTER COLUMN retry_policy SET NOT NULL",
      "DELETE FROM later_migrations WHERE version >= 6",
    ],
  },
};

describe.each(BACKENDS)("retry policy migration on $name", (entry) => {
  it("jobs stored before it keep their policy; after it a job without an explicit policy stores NULL", async () => {
    const db = await entry.createDatabase();
    const backend = db.backend();
    const app = db.appDatabase<Record<string, never>>();
    try {
      await backend.open();
      await backend.migrations.up();
      const undo = UNDO[entry.name]!;
      for (const statement of undo.statements) await sql.raw(statement).execute(app);
      const status = await backend.migrations.status();
      // From the undone one to the latest, ascending (a version number may be skipped on a branch).
      const pending = status.pending.map((m) => m.version);
      expect([pending[0], pending.at(-1)]).toEqual([undo.version, status.latest]);
      expect(pending).toEqual([...pending].sort((a, b) => a - b));

      const now = Date.now();
      const old = newJobId(now);
      const policy = JSON.stringify(RetryPolicy.fixed(2, 100));
      // Written as the code of that schema wrote it (today's statements also write the later migrations' columns).
      await sql`INSERT INTO later_jobs (id, namespace, job_type, payload, stage, attempt, retry_policy, run_at, stages, created_at, updated_at)
        VALUES (${old}, ${backend.namespace}, 'work', '{}', 'enqueued', 0, ${policy}, ${now}, ${JSON.stringify([["enqueued", now]])}, ${now}, ${now})`.execute(
        app,
      );
      await backend.migrations.up();

      const fresh = newJobId(now + 1);
      await backend.jobs.insertMany({ jobs: [{ id: fresh, jobType: "work", payload: "{}", runAt: now, retryPolicy: null }], now });
      const { jobs } = await backend.jobs.claimReady({ owner: "o", limit: 2, now, leaseExpiresAt: now + 1_000, jobTypes: ["work"] });
      expect(Object.fromEntries(jobs.map((j) => [j.id, j.retryPolicy]))).toEqual({ [old]: policy, [fresh]: null });
    } finally {
      await app.destroy();
      await backend.close();
      await db.dispose();
    }
  });
});
