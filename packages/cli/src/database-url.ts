/**
 * `--database URL` → a backend. The one place that knows which URL schemes
 * exist and which backend factory each one maps to; a new backend is one
 * case in {@link backendForDatabase}.
 *
 * | URL | backend |
 * | --- | --- |
 * | `sqlite:PATH` | SQLite file at PATH, relative to the working directory or absolute (`sqlite:later.db`, `sqlite:/var/lib/app/later.db`) |
 * | `sqlite:///ABS/PATH` | SQLite file at the absolute path `/ABS/PATH` (URL form, percent-decoded) |
 * | `postgres://...`, `postgresql://...` | PostgreSQL, the URL handed to `pg` as is; `--schema` picks the schema (default `later`) |
 *
 * Each backend is imported (`@later/runtime/sqlite`, `/postgres`) only for
 * a URL of its scheme, so an application on PostgreSQL runs `later` without
 * better-sqlite3 installed, and the reverse. A missing driver is the
 * runtime's `DriverNotInstalledError` (printed as one line, exit 1).
 */
import { InvalidArgumentError, Option } from "commander";
import type { Backend } from "@later/runtime/internal";
import { UsageError } from "./usage-error.js";

/** A parsed `--database` value. */
export type DatabaseUrl =
  | { kind: "sqlite" /** The file, as given (relative paths resolve against the working directory). */; file: string /** The URL as typed. */; url: string }
  | { kind: "postgres"; connectionString: string; url: string };

/** Which part of the database a command works on. */
export interface DatabaseScope {
  /** Namespace of the jobs read. Default: the backend's (`"default"`). */
  namespace?: string | undefined;
  /** PostgreSQL schema holding the later tables. Default: the backend's. */
  schema?: string | undefined;
}

const SUPPORTED = "sqlite:PATH, sqlite:///ABSOLUTE/PATH or postgres://USER@HOST:PORT/DB";

/**
 * Parses a `--database` value. Throws commander's `InvalidArgumentError`
 * (a usage error, exit 2) for a value that is not a database URL we know.
 */
export function parseDatabaseUrl(url: string): DatabaseUrl {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === "sqlite") return { kind: "sqlite", file: sqlitePath(url), url };
  if (scheme === "postgres" || scheme === "postgresql") {
    if (!/^[a-z]+:\/\//i.test(url)) throw new InvalidArgumentError(`a PostgreSQL URL starts with ${scheme}://`);
    return { kind: "postgres", connectionString: url, url };
  }
  throw new InvalidArgumentError(`not a database URL; expected ${SUPPORTED}`);
}

function sqlitePath(url: string): string {
  const rest = url.slice("sqlite:".length);
  if (rest.startsWith("//")) {
    // URL form: sqlite:///abs/path (empty host). A host part is a mistake.
    const afterSlashes = rest.slice(2);
    if (!afterSlashes.startsWith("/")) {
      throw new InvalidArgumentError(`sqlite:// URLs take an absolute path (sqlite:///abs/path); for a relative path write sqlite:${afterSlashes || "PATH"}`);
    }
    let path: string;
    try {
      path = decodeURIComponent(afterSlashes.replace(/[?#].*$/, ""));
    } catch {
      throw new InvalidArgumentError("the path of the sqlite:// URL has a malformed %-escape");
    }
    if (path === "/") throw new InvalidArgumentError("the sqlite:// URL names no file");
    return path;
  }
  if (rest === "") throw new InvalidArgumentError("sqlite: needs a file path, e.g. sqlite:later.db");
  return rest;
}

/** The URL for messages: a PostgreSQL password is replaced by `***`. */
export function displayDatabaseUrl(database: DatabaseUrl): string {
  if (database.kind !== "postgres") return database.url;
  return database.url.replace(/^([a-z]+:\/\/[^:/@]*):[^@/]*@/i, "$1:***@");
}

/**
 * Makes the (unopened) backend for a database URL, importing only that
 * backend's module. The CLI's PostgreSQL backend runs one short command: no
 * LISTEN connection (nothing to wake) and a pool of two. Rejects with a
 * `UsageError` for `--schema` on SQLite, and with `DriverNotInstalledError`
 * when the backend's driver is not installed.
 */
export async function backendForDatabase(database: DatabaseUrl, scope: DatabaseScope): Promise<Backend> {
  const namespace = scope.namespace === undefined ? {} : { namespace: scope.namespace };
  switch (database.kind) {
    case "sqlite": {
      if (scope.schema !== undefined) throw new UsageError("--schema applies to PostgreSQL databases only");
      const { sqlite } = await import("@later/runtime/sqlite");
      return sqlite({ file: database.file, ...namespace });
    }
    case "postgres": {
      const { postgres } = await import("@later/runtime/postgres");
      return postgres({
        connectionString: database.connectionString,
        ...namespace,
        ...(scope.schema === undefined ? {} : { schema: scope.schema }),
        listen: false,
        maxConnections: 2,
        applicationName: "later-cli",
      });
    }
  }
}

/** `--database <url>`, required, defaulting to `LATER_DATABASE_URL`; parsed by {@link parseDatabaseUrl}. */
export function databaseOption(): Option {
  return new Option("--database <url>", `the database: ${SUPPORTED}`).env("LATER_DATABASE_URL").argParser(parseDatabaseUrl).makeOptionMandatory();
}

/** `--schema <name>`: the PostgreSQL schema of the later tables. */
export function schemaOption(): Option {
  return new Option("--schema <name>", 'PostgreSQL only: the schema holding the later tables (default: "later")');
}
