/**
 * The backend list every conformance test runs against. Each entry makes a
 * fresh, empty database per call; `backend(namespace)` opens another
 * backend on that same database (to test sharing and isolation).
 *
 * PostgreSQL: the server found by test/support/postgres-global-setup.ts, a
 * fresh schema per `createDatabase()`. When no PostgreSQL could be had the
 * entry is left out (the setup printed a loud notice; under CI=true it
 * failed the run instead).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Kysely, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import type { Backend } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { createPostgresSchema, postgresUrl } from "../support/postgres.js";

export interface TestDatabase {
  backend(namespace?: string): Backend;
  /** Location, for messages and tests that open the database themselves (SQLite: the file; PostgreSQL: the URL). */
  readonly location: string;
  /** The database as a URL (`sqlite:FILE`, `postgres://…`) and, on PostgreSQL, the schema: what `--database`/`--schema` and `backendFromUrl` take. */
  readonly url: string;
  readonly schema?: string;
  /** A Kysely of the application's own, on the same database (its tables land beside later's), for `enqueueIn`. Destroy it after use. */
  appDatabase<DB>(): Kysely<DB>;
  dispose(): Promise<void>;
}

export interface BackendEntry {
  name: string;
  createDatabase(): Promise<TestDatabase>;
}

/** Runs `run` on a fresh database of `entry`, disposed of afterwards whatever `run` does. */
export async function withDatabase(entry: BackendEntry, run: (db: TestDatabase) => Promise<void>): Promise<void> {
  const db = await entry.createDatabase();
  try {
    await run(db);
  } finally {
    await db.dispose();
  }
}

const sqliteEntry: BackendEntry = {
  name: "sqlite",
  async createDatabase() {
    const dir = mkdtempSync(join(tmpdir(), "later-conformance-"));
    const file = join(dir, "jobs.db");
    return {
      location: file,
      url: `sqlite:${file}`,
      backend: (namespace = "test") => sqlite({ file, namespace }),
      appDatabase: <DB>() => new Kysely<DB>({ dialect: new SqliteDialect({ database: new Database(file) }) }),
      dispose: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

const postgresEntry: BackendEntry = {
  name: "postgres",
  async createDatabase() {
    const db = await createPostgresSchema();
    return {
      location: db.url,
      url: db.url,
      schema: db.schema,
      // A small pool per backend: a test runs up to a few servers, and test files run in parallel.
      backend: (namespace = "test") => postgres({ connectionString: db.url, schema: db.schema, namespace, maxConnections: 4 }),
      appDatabase: <DB>() => new Kysely<DB>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: db.searchPathUrl, max: 2 }) }) }),
      dispose: db.dispose,
    };
  },
};

export const BACKENDS: BackendEntry[] = postgresUrl() === null ? [sqliteEntry] : [sqliteEntry, postgresEntry];
