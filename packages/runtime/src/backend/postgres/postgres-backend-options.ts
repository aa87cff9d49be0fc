/** Options of the PostgreSQL backend, and their checks (bad options fail at construction). */
import { InvalidConfigError } from "../../errors.js";
import { nameProblem } from "../../core/stored-name.js";
import { databaseUrlScheme, sqliteFileOfUrl } from "../database-url.js";

/**
 * What later uses of an application-owned `pg.Pool` (the value of
 * `new pg.Pool(config)`). A structural type, as Kysely's `PostgresPool`, so
 * an application compiles against `@later/runtime/postgres` without pg's
 * type package; any pg 8 `Pool` fits. later runs statements on it, checks
 * out clients for its transactions, adds (and at close removes) `error`
 * and `connect` listeners, and opens its LISTEN connection with the pool's
 * `options`.
 */
export interface PostgresPool {
  /** The settings the pool was made with (host, user, database, ...). */
  readonly options: object;
  query(text: string, values?: unknown[]): Promise<unknown>;
  connect(): Promise<unknown>;
  end(): Promise<void>;
  on(event: "error" | "connect", listener: (...args: unknown[]) => void): unknown;
  off(event: "error" | "connect", listener: (...args: unknown[]) => void): unknown;
}

/** A warning the backend reports instead of failing (see {@link PostgresBackendOptions.onWarning}). */
export interface PostgresBackendWarning {
  /**
   * `LISTEN_UNAVAILABLE`: no NOTIFY came back at open; this backend polls
   * only. `PREPARED_STATEMENTS_UNAVAILABLE`: a named prepared statement was
   * lost between statements of one connection (a transaction-mode pooler
   * hands each transaction another server connection); this backend runs
   * its statements unnamed from then on.
   */
  code: "LISTEN_UNAVAILABLE" | "PREPARED_STATEMENTS_UNAVAILABLE";
  message: string;
}

/** Reports a warning through `onWarning`, or as a process warning (type `LaterWarning`, code `LATER_<code>`). */
export function reportWarning(options: Pick<PostgresBackendOptions, "onWarning">, warning: PostgresBackendWarning): void {
  if (options.onWarning) options.onWarning(warning);
  else process.emitWarning(warning.message, { type: "LaterWarning", code: `LATER_${warning.code}` });
}

/** Options of {@link postgres}. Give either `connectionString` or `pool`. */
export interface PostgresBackendOptions {
  /**
   * `postgres://user:password@host:port/database`; the backend creates (and
   * ends) its own pool. A `sqlite:` URL is refused (`InvalidConfigError`
   * naming `sqlite()` and `backendFromUrl`).
   */
  connectionString?: string;
  /** An application-owned `pg.Pool` (e.g. the one the app's Kysely uses, for `enqueueIn`). later never ends it. */
  pool?: PostgresPool;
  /** Schema holding the `later_*` tables; created by the first migration. Default `"later"`. */
  schema?: string;
  /** Servers on one database, schema and namespace share work. Default `"default"`. */
  namespace?: string;
  /**
   * LISTEN/NOTIFY wake-ups. Default true. Set false behind a
   * transaction-mode pooler (PgBouncer): servers then find other processes'
   * work by polling (`pollIntervalMs`). NOTIFYs are sent either way.
   */
  listen?: boolean;
  /** How long the probe at open waits for its NOTIFY before falling back to polling, ms. Default 2000. */
  listenCheckTimeoutMs?: number;
  /** Size of the pool the backend creates (ignored with `pool`). Default 10. */
  maxConnections?: number;
  /** `application_name` of the connections the backend opens (a URL parameter wins). Default `"later"`. */
  applicationName?: string;
  /**
   * Named prepared statements for the hot path. Default true. Behind a
   * transaction-mode pooler that cannot keep them (PgBouncer before 1.21, or
   * without `max_prepared_statements`), the first statement that finds its
   * prepared statement gone (SQLSTATE 26000) or already there (42P05) is
   * run again unnamed, and so is every statement after it, with a
   * `PREPARED_STATEMENTS_UNAVAILABLE` warning; set false (with `listen:
   * false`) to start that way.
   */
  preparedStatements?: boolean;
  /**
   * How long one of later's own transactions may sit idle between its
   * statements before the server ends its session, ms; 0 turns it off.
   * Default 5000. Set per transaction (`SET LOCAL
   * idle_in_transaction_session_timeout`, in the `BEGIN`'s round trip), so
   * it works behind PgBouncer and never touches the application's
   * transactions. Why: a process frozen inside a transaction (SIGSTOP, a
   * suspended VM, an event loop blocked by a handler) keeps its row locks,
   * among them its session's stage-counter rows, which writers on other
   * servers that share the counter shard then wait for; without a bound,
   * one frozen process could stall the others until it resumes. Our
   * transactions run a few statements back to back, milliseconds apart;
   * the one that was cut fails as a lost connection, and what it would have
   * written is written by whoever takes over (as after a lost lease).
   */
  idleInTransactionTimeoutMs?: number;
  /** Where warnings go. Default `process.emitWarning(message, { type: "LaterWarning", code })`. */
  onWarning?: (warning: PostgresBackendWarning) => void;
}

const OPTION_KEYS = new Set([
  "connectionString",
  "pool",
  "schema",
  "namespace",
  "listen",
  "listenCheckTimeoutMs",
  "maxConnections",
  "applicationName",
  "preparedStatements",
  "idleInTransactionTimeoutMs",
  "onWarning",
]);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Checks every option; throws `InvalidConfigError` naming the bad one. Returns the schema and namespace with defaults. */
export function checkPostgresOptions(options: PostgresBackendOptions): { schema: string; namespace: string } {
  if (options === null || typeof options !== "object") throw new InvalidConfigError("postgres(options): options must be an object");
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw new InvalidConfigError(`postgres(): unknown option "${key}"`);
  }
  if ((options.connectionString === undefined) === (options.pool === undefined)) {
    throw new InvalidConfigError("postgres(): give exactly one of `connectionString` or `pool`");
  }
  if (options.connectionString !== undefined && (typeof options.connectionString !== "string" || options.connectionString === "")) {
    throw new InvalidConfigError("postgres(): `connectionString` must be a non-empty string such as postgres://user@host:5432/db");
  }
  if (options.connectionString !== undefined && databaseUrlScheme(options.connectionString) === "sqlite") {
    // pg would read it as a host name and fail at connect with a driver error far from the cause.
    throw new InvalidConfigError(
      `postgres(): \`connectionString\` is a SQLite URL: use sqlite({ file: ${JSON.stringify(sqliteFileOfUrl(options.connectionString))} }) from "@later/runtime/sqlite", or backendFromUrl(${JSON.stringify(options.connectionString)}) from "@later/runtime"`,
    );
  }
  if (
    options.pool !== undefined &&
    (typeof options.pool !== "object" || options.pool === null || typeof options.pool.query !== "function" || typeof options.pool.connect !== "function")
  ) {
    throw new InvalidConfigError("postgres(): `pool` must be a pg.Pool");
  }
  const schema = options.schema ?? "later";
  if (typeof schema !== "string" || !IDENTIFIER.test(schema)) {
    throw new InvalidConfigError("postgres(): `schema` must be an identifier of letters, digits and _ (at most 63), not starting with a digit");
  }
  const namespace = options.namespace ?? "default";
  const bad = nameProblem(namespace);
  if (bad !== null) throw new InvalidConfigError(`postgres(): \`namespace\` ${bad}`);
  const checkInt = (name: "listenCheckTimeoutMs" | "maxConnections" | "idleInTransactionTimeoutMs", min: number, max: number) => {
    const v = options[name];
    if (v !== undefined && (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max))
      throw new InvalidConfigError(`postgres(): \`${name}\` must be an integer from ${min} to ${max}`);
  };
  checkInt("listenCheckTimeoutMs", 1, 2_147_483_647); // a timer: setTimeout's limit
  checkInt("maxConnections", 1, 10_000);
  checkInt("idleInTransactionTimeoutMs", 0, 2_147_483_647); // PostgreSQL's limit for the setting
  for (const name of ["listen", "preparedStatements"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "boolean") throw new InvalidConfigError(`postgres(): \`${name}\` must be a boolean`);
  }
  if (options.onWarning !== undefined && typeof options.onWarning !== "function") throw new InvalidConfigError("postgres(): `onWarning` must be a function");
  return { schema, namespace };
}
