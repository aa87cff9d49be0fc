/**
 * PostgreSQL migrations: numbered, forward-only, each applied once and
 * recorded in `<schema>.later_migrations`. Never edit a shipped migration;
 * add the next number (at the end of postgres-job-control-migrations.ts).
 *
 * Concurrency: `migrationUp` runs in one transaction that first takes
 * `pg_advisory_xact_lock` on a key derived from the schema name, so two
 * servers starting at once with `autoMigrate` serialise: the second waits,
 * then finds the work done and applies nothing. DDL is transactional in
 * PostgreSQL, so a failed migration leaves nothing half-applied.
 */
import type pg from "pg";
import type * as B from "../backend.js";
import { POSTGRES_QUEUE_MIGRATIONS } from "./postgres-queue-migrations.js";
import { POSTGRES_JOB_CONTROL_MIGRATIONS } from "./postgres-job-control-migrations.js";

/** Every migration in order: the queue's (1-14), then job control's (15 on). */
export const POSTGRES_MIGRATIONS = [...POSTGRES_QUEUE_MIGRATIONS, ...POSTGRES_JOB_CONTROL_MIGRATIONS];

/** Advisory-lock class id for migrations ("LATR"); the object id is `hashtext(schema)`. */
const MIGRATION_LOCK_CLASS = 0x4c415452;

/** Applied and pending migrations; a schema without `later_migrations` is version 0. */
export async function readMigrationStatus(pool: pg.Pool, quoted: string): Promise<B.MigrationStatusResult> {
  const exists = await pool.query<{ t: string | null }>("SELECT to_regclass($1) AS t", [`${quoted}.later_migrations`]);
  const rows = exists.rows[0]?.t
    ? (
        await pool.query<{ version: number; name: string; applied_at: string }>(
          `SELECT version, name, applied_at FROM ${quoted}.later_migrations ORDER BY version`,
        )
      ).rows
    : [];
  const applied = rows.map((r) => ({ version: Number(r.version), name: String(r.name), appliedAt: Number(r.applied_at) }));
  const current = applied.reduce((m, r) => Math.max(m, r.version), 0);
  const latest = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;
  const pending = POSTGRES_MIGRATIONS.filter((m) => m.version > current).map(({ version, name }) => ({ version, name }));
  return { current, latest, applied, pending };
}

/** Applies pending migrations in one transaction under the schema's advisory lock. */
export async function applyMigrations(pool: pg.Pool, schema: string, quoted: string): Promise<{ version: number; name: string }[]> {
  const client = await pool.connect();
  const applied: { version: number; name: string }[] = [];
  let broken: unknown;
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [MIGRATION_LOCK_CLASS, schema]);
    // Look before creating: CREATE SCHEMA IF NOT EXISTS needs the CREATE
    // privilege on the database even when the schema is already there.
    const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${quoted}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${quoted}.later_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`);
    const row = await client.query<{ v: number }>(`SELECT coalesce(max(version), 0) AS v FROM ${quoted}.later_migrations`);
    const current = Number(row.rows[0]?.v ?? 0);
    for (const m of POSTGRES_MIGRATIONS) {
      if (m.version <= current) continue;
      await client.query(m.sql.replaceAll("{schema}", quoted));
      await client.query(`INSERT INTO ${quoted}.later_migrations (version, name, applied_at) VALUES ($1, $2, $3)`, [m.version, m.name, Date.now()]);
      applied.push({ version: m.version, name: m.name });
    }
    await client.query("COMMIT");
    return applied;
  } catch (error) {
    broken = error;
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release(broken instanceof Error ? broken : undefined);
  }
}
