/**
 * Backends whose statements are recorded as they are sent, for the tests that
 * EXPLAIN what a backend really runs (the limited and group claims' plans):
 * a SQLite file with better-sqlite3's `verbose` hook, and a PostgreSQL schema
 * behind a pool whose clients record every query's text and values, with
 * autovacuum off on the jobs table (a queue just filled, never analyzed).
 * Each registers its clean-up with `cleanups`, run newest first by the test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { type Backend, prepareBackend } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { createPostgresSchema } from "./postgres.js";

export type Cleanups = (() => unknown)[];

/** A migrated SQLite backend on a fresh file; `seen` gets every statement text it runs. */
export async function recordedSqlite(cleanups: Cleanups): Promise<{ backend: Backend; database: Database.Database; seen: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), "later-recorded-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const seen: string[] = [];
  const database = new Database(join(dir, "plans.db"), { verbose: (text) => seen.push(String(text)) });
  cleanups.push(() => database.close());
  const backend = sqlite({ database });
  await prepareBackend(backend, true);
  cleanups.push(() => backend.close());
  return { backend, database, seen };
}

/** A migrated PostgreSQL backend on a fresh schema, autovacuum off on its jobs table; `seen` gets every query's text and values. */
export async function recordedPostgres(
  cleanups: Cleanups,
): Promise<{ backend: Backend; url: string; table: string; seen: { text: string; values: unknown[] }[] }> {
  const db = await createPostgresSchema();
  cleanups.push(db.dispose);
  const seen: { text: string; values: unknown[] }[] = [];
  const pool = new pg.Pool({ connectionString: db.url });
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const q = args[0] as { text?: string; values?: unknown[] } | string;
      if (typeof q === "object" && q.text !== undefined) seen.push({ text: q.text, values: q.values ?? (args[1] as unknown[]) ?? [] });
      else if (typeof q === "string") seen.push({ text: q, values: (args[1] as unknown[]) ?? [] });
      return query(...args);
    };
  });
  cleanups.push(() => pool.end());
  const backend = postgres({ pool, schema: db.schema, listen: false });
  await prepareBackend(backend, true);
  cleanups.push(() => backend.close());
  const table = `${pg.escapeIdentifier(db.schema)}.later_jobs`;
  await pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  return { backend, url: db.url, table, seen };
}
