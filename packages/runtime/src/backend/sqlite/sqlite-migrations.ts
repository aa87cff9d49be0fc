/**
 * SQLite migrations: numbered, forward-only, each applied once and recorded
 * in `later_migrations`. Never edit a shipped migration; add the next number
 * (at the end of sqlite-job-control-migrations.ts). So their stage lists stay
 * literal, as shipped, instead of following the stage sets of
 * `core/job-stage.ts`; the statements that must match an index's predicate
 * render the same list from those sets.
 */
import type * as B from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { SQLITE_QUEUE_MIGRATIONS } from "./sqlite-queue-migrations.js";
import { SQLITE_JOB_CONTROL_MIGRATIONS } from "./sqlite-job-control-migrations.js";

/** Every migration in order: the queue's (1-14), then job control's (15 on). */
export const SQLITE_MIGRATIONS = [...SQLITE_QUEUE_MIGRATIONS, ...SQLITE_JOB_CONTROL_MIGRATIONS];

/** Applied and pending migrations (`later_migrations` is created by {@link SqliteConnection.open}). */
export function readSqliteMigrationStatus(c: SqliteConnection): B.MigrationStatusResult {
  const rows = c.all("SELECT version, name, applied_at FROM later_migrations ORDER BY version");
  const applied = rows.map((r) => ({ version: Number(r.version), name: String(r.name), appliedAt: Number(r.applied_at) }));
  const current = applied.reduce((m, r) => Math.max(m, r.version), 0);
  const latest = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]!.version;
  const pending = SQLITE_MIGRATIONS.filter((m) => m.version > current).map(({ version, name }) => ({ version, name }));
  return { current, latest, applied, pending };
}

/** Applies pending migrations in one `BEGIN IMMEDIATE`: a second process starting at once waits, then sees the work done. */
export function applySqliteMigrations(c: SqliteConnection): { version: number; name: string }[] {
  const applied: { version: number; name: string }[] = [];
  c.immediate(() => {
    const current = Number((c.db.prepare("SELECT coalesce(max(version), 0) AS v FROM later_migrations").get() as Row).v);
    for (const m of SQLITE_MIGRATIONS) {
      if (m.version <= current) continue;
      c.db.exec(m.sql);
      c.db.prepare("INSERT INTO later_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(m.version, m.name, Date.now());
      applied.push({ version: m.version, name: m.name });
    }
  });
  return applied;
}
