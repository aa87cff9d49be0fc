/**
 * PostgreSQL for tests: the server found by the global setup, and a fresh
 * schema per `createPostgresSchema()` call (dropped again by `dispose`),
 * so test files running at once never see each other's rows or wake-ups.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { prepareBackend } from "@later/runtime/internal";
import { type PostgresBackend, postgres } from "@later/runtime/postgres";

declare module "vitest" {
  export interface ProvidedContext {
    /** The PostgreSQL server of this run (set by postgres-global-setup.ts), or null when none could be had. */
    laterPostgresUrl: string | null;
  }
}

/** The run's PostgreSQL URL, or null when none could be had (the suites are skipped; the setup printed why). */
export function postgresUrl(): string | null {
  return inject("laterPostgresUrl") ?? null;
}

/** Runs `body` with a short-lived client (no pool left open in the test process). */
export async function withClient<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface PostgresSchema {
  url: string;
  /** A fresh schema name; the backend's first migration creates it. */
  schema: string;
  /** A URL whose connections have `search_path` set to the schema (for application tables in tests). */
  searchPathUrl: string;
  dispose(): Promise<void>;
}

let counter = 0;

export async function createPostgresSchema(): Promise<PostgresSchema> {
  const url = postgresUrl();
  if (url === null) throw new Error("no PostgreSQL for this run (see the notice at the start)");
  const schema = `later_t${process.pid}_${++counter}_${randomBytes(3).toString("hex")}`;
  const searchPath = new URL(url);
  searchPath.searchParams.set("options", `-c search_path=${schema}`);
  return {
    url,
    schema,
    searchPathUrl: searchPath.toString(),
    dispose: () => withClient(url, async (c) => void (await c.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`))),
  };
}

/** A backend on one PostgreSQL session, from {@link oneSessionBackend}. */
export interface OneSessionBackend {
  db: PostgresSchema;
  /** The backend's pool of one connection: a statement run on it sees the backend's prepared statements and plans. */
  pool: pg.Pool;
  backend: PostgresBackend;
  /** `later_jobs`, schema-qualified and quoted. */
  table: string;
}

/**
 * A backend on a fresh schema whose pool holds one connection, for tests of
 * the plans its statements get. `migrate` (default true): migrated, and
 * autovacuum turned off on `later_jobs` (so nothing but the test analyzes
 * it). Each part is closed or dropped by `cleanups`, last first.
 */
export async function oneSessionBackend(
  cleanups: (() => Promise<unknown>)[],
  options: { migrate?: boolean; idleInTransactionTimeoutMs?: number } = {},
): Promise<OneSessionBackend> {
  const db = await createPostgresSchema();
  cleanups.push(db.dispose);
  const pool = new pg.Pool({ connectionString: db.searchPathUrl, max: 1 });
  cleanups.push(() => pool.end());
  const backend = postgres({ pool, schema: db.schema, listen: false, idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs });
  const table = `${pg.escapeIdentifier(db.schema)}.later_jobs`;
  if (options.migrate !== false) {
    await prepareBackend(backend, true);
    cleanups.push(() => backend.close());
    await pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  }
  return { db, pool, backend, table };
}
