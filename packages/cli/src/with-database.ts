import { existsSync } from "node:fs";
import { DatabaseNotFoundError } from "@later/runtime";
import { displayDatabaseUrl, prepareBackend, type Backend, type DatabaseUrl } from "@later/runtime/internal";
import { backendForDatabase, type DatabaseScope } from "./database-option.js";

/** How {@link withDatabase} opens the database. */
export interface WithDatabaseOptions extends DatabaseScope {
  database: DatabaseUrl;
  /**
   * May a missing SQLite file be created? Only `migrate up` says yes:
   * inspecting a database (`jobs`, `migrate status`) never creates one, so
   * a mistyped path is an error, not a new empty file.
   */
  create: boolean;
  /**
   * Refuse a database whose later schema is not the one this release
   * expects, with the `SchemaVersionError` that names `later migrate up`.
   * The `jobs` commands ask for it; `migrate` works on any version.
   */
  requireCurrentSchema: boolean;
}

/**
 * Opens the backend for `options.database`, runs `body` with it and closes
 * it, whether `body` resolves or throws.
 */
export async function withDatabase<R>(options: WithDatabaseOptions, body: (backend: Backend) => Promise<R>): Promise<R> {
  const { database } = options;
  const backend = await backendForDatabase(database, options); // checks the options first: a usage error beats a missing file
  if (database.kind === "sqlite" && !options.create && !existsSync(database.file)) {
    throw new DatabaseNotFoundError(
      `no SQLite database at ${database.file}: check the path (relative paths start at the working directory), or create it with \`later migrate up --database ${displayDatabaseUrl(database)}\``,
    );
  }
  try {
    if (options.requireCurrentSchema) await prepareBackend(backend, false);
    else await backend.open({ createMissing: options.create });
    return await body(backend);
  } finally {
    await backend.close();
  }
}
