/**
 * The options that say which database and which part of it a command works
 * on: `--database URL` (default `LATER_DATABASE_URL`), `--namespace NS`
 * (default `LATER_NAMESPACE`), `--schema NAME`, and the backend they open.
 *
 * URLs are parsed by the runtime's `parseDatabaseUrl` and opened with its
 * `backendFromUrl`, the function applications call: the CLI and the
 * application it is run beside read one URL the same way. Each backend is
 * imported only for a URL of its scheme, so an application on PostgreSQL
 * runs `later` without better-sqlite3 installed, and the reverse. A missing
 * driver is the runtime's `DriverNotInstalledError` (printed as one line,
 * exit 1).
 */
import { InvalidArgumentError, Option } from "commander";
import { backendFromUrl, LaterError } from "@later/runtime";
import { DATABASE_URL_FORMS, parseDatabaseUrl, type Backend, type DatabaseUrl } from "@later/runtime/internal";
import { UsageError } from "./usage-error.js";

/** Which part of the database a command works on. */
export interface DatabaseScope {
  /** Namespace of the jobs read. Default: the backend's (`"default"`). */
  namespace?: string | undefined;
  /** PostgreSQL schema holding the later tables. Default: the backend's. */
  schema?: string | undefined;
}

/**
 * Parses a `--database` value with the runtime's parser. A value that is
 * not a database URL we know is commander's `InvalidArgumentError` (a usage
 * error, exit 2) with the parser's message.
 */
export function parseDatabaseOption(url: string): DatabaseUrl {
  try {
    return parseDatabaseUrl(url);
  } catch (error) {
    if (error instanceof LaterError) throw new InvalidArgumentError(error.message);
    throw error;
  }
}

/**
 * Makes the (unopened) backend for a database URL with `backendFromUrl`.
 * The CLI's PostgreSQL backend runs one short command: no LISTEN connection
 * (nothing to wake) and a pool of two. Rejects with a `UsageError` for
 * `--schema` on SQLite, and with `DriverNotInstalledError` when the
 * backend's driver is not installed.
 */
export async function backendForDatabase(database: DatabaseUrl, scope: DatabaseScope): Promise<Backend> {
  if (database.kind === "sqlite" && scope.schema !== undefined) throw new UsageError("--schema applies to PostgreSQL databases only");
  return backendFromUrl(database.url, {
    ...(scope.namespace === undefined ? {} : { namespace: scope.namespace }),
    postgres: {
      ...(scope.schema === undefined ? {} : { schema: scope.schema }),
      listen: false,
      maxConnections: 2,
      applicationName: "later-cli",
    },
  });
}

/** `--database <url>`, required, defaulting to `LATER_DATABASE_URL`; parsed by {@link parseDatabaseOption}. */
export function databaseOption(): Option {
  return new Option("--database <url>", `the database: ${DATABASE_URL_FORMS}`).env("LATER_DATABASE_URL").argParser(parseDatabaseOption).makeOptionMandatory();
}

/** `--schema <name>`: the PostgreSQL schema of the later tables. */
export function schemaOption(): Option {
  return new Option("--schema <name>", 'PostgreSQL only: the schema holding the later tables (default: "later")');
}

/** `--namespace <ns>`, defaulting to `LATER_NAMESPACE` (the flag wins). `what` names what is read: "jobs", "schedules". */
export function namespaceOption(what: string): Option {
  return new Option("--namespace <ns>", `the namespace whose ${what} to read (default: "default")`).env("LATER_NAMESPACE");
}
