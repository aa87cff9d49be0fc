/**
 * {@link backendFromUrl}: a backend from a database URL, the same one the
 * `later` CLI opens for `--database URL` / `LATER_DATABASE_URL`, so an
 * application and the CLI run beside it are configured with one setting.
 */
import type { PostgresBackendOptions } from "./postgres/postgres-backend-options.js";
import type { SqliteBackendOptions } from "./sqlite/sqlite-backend.js";
import type { Backend } from "./backend.js";
import type { TransactionHandle } from "./transaction-handle.js";
import { InvalidConfigError } from "../errors.js";
import { DATABASE_URL_FORMS, parseDatabaseUrl } from "./database-url.js";

/** Options of {@link backendFromUrl}. */
export interface BackendFromUrlOptions {
  /** Servers on one database and namespace share work. Default `process.env.LATER_NAMESPACE`, else `"default"`. */
  namespace?: string;
  /** More options for a `sqlite:` URL (not `file`, which the URL gives). Ignored for another URL. */
  sqlite?: Omit<SqliteBackendOptions, "file" | "database" | "namespace">;
  /** More options for a `postgres://` URL (`schema`, `maxConnections`, ...; not `connectionString`). Ignored for another URL. */
  postgres?: Omit<PostgresBackendOptions, "connectionString" | "pool" | "namespace">;
}

/**
 * Makes the (unopened) backend for a database URL:
 *
 * - `sqlite:later.db` (relative to the working directory), `sqlite:/abs/path`,
 *   `sqlite:///abs/path` (percent-decoded), `sqlite::memory:` → `sqlite({ file })`;
 * - `postgres://user@host:5432/db` or `postgresql://…` → `postgres({ connectionString })`.
 *
 * `url` defaults to `process.env.LATER_DATABASE_URL` and `options.namespace`
 * to `process.env.LATER_NAMESPACE`, the variables the CLI reads. The backend's
 * module is imported only for a URL of its scheme, so this entry still loads
 * no driver until called, and then only the one the URL needs.
 *
 * Rejects with `InvalidConfigError` (code `INVALID_CONFIG`) when there is no
 * URL or it has another form, with `DriverNotInstalledError` when the
 * backend's driver is not installed, and with the backend's own
 * `InvalidConfigError` for a bad option.
 *
 * ```ts
 * const backend = await backendFromUrl(); // LATER_DATABASE_URL=sqlite:later.db
 * const server = await new JobsBuilder({ context, backend }).withSendEmailHandler(send).build();
 * ```
 */
export async function backendFromUrl(url?: string, options: BackendFromUrlOptions = {}): Promise<Backend<TransactionHandle>> {
  const given = url ?? process.env.LATER_DATABASE_URL;
  if (given === undefined || given === "") {
    throw new InvalidConfigError(`backendFromUrl(): no database URL: pass one (${DATABASE_URL_FORMS}) or set LATER_DATABASE_URL`);
  }
  if (options === null || typeof options !== "object") throw new InvalidConfigError("backendFromUrl(url, options): options must be an object");
  const database = parseDatabaseUrl(given);
  const envNamespace = process.env.LATER_NAMESPACE;
  const namespace = options.namespace ?? (envNamespace === undefined || envNamespace === "" ? undefined : envNamespace);
  const scoped = namespace === undefined ? {} : { namespace };
  switch (database.kind) {
    case "sqlite": {
      const { sqlite } = await import("./sqlite/sqlite-backend.js");
      return sqlite({ ...options.sqlite, ...scoped, file: database.file }) as Backend<TransactionHandle>;
    }
    case "postgres": {
      const { postgres } = await import("./postgres/postgres-backend.js");
      return postgres({ ...options.postgres, ...scoped, connectionString: database.connectionString }) as Backend<TransactionHandle>;
    }
  }
}
