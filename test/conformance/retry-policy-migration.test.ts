/**
 * The nullable-retry-policy migration (SQLite 5, PostgreSQL 6): jobs written
 * before it keep their stored policy, and jobs enqueued after it without an
 * explicit policy store NULL. The migrations after it are undone too, and applied again.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { newJobId, RetryPolicy } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { migrationRewind } from "./migration-rewind.js";

/** Puts `retry_policy` back as the migrations before it left it (NOT NULL) and forgets the migration (and those after it). */
const UNDO: Record<string, { version: number; statements: string[] }> = {
  sqlite: {
    version: 5,
    statements: [
      ...migrationRewind("sqlite", "retained-log"),
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
      ...migrationRewind("postgres", "retained-log"),
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
