/**
 * Loads a backend's database driver. The drivers are optional peer
 * dependencies of `@later/runtime` (as in Kysely): an application installs
 * only the one of the backend it uses, so a PostgreSQL-only application
 * never builds the native SQLite module. No module of the runtime imports a
 * driver statically; a backend's factory (`sqlite()`, `postgres()`) calls
 * {@link loadDriver}, so a missing driver is a {@link DriverNotInstalledError}
 * naming the package to add, at construction, instead of Node's
 * `ERR_MODULE_NOT_FOUND` when a module is imported.
 *
 * Both drivers are CommonJS and load synchronously with `require`, resolved
 * from this package's folder: the application's `node_modules` (npm), or
 * the peers pnpm links beside `@later/runtime`. Node caches the module, so
 * every later call returns the same one.
 *
 * This module names the drivers' types; it is internal, and no declaration
 * file reachable from the package's entries imports it.
 */
import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import type pg from "pg";
import { DriverNotInstalledError } from "../errors.js";

/** The drivers, by npm package name, as `require` returns them. */
export interface Drivers {
  "better-sqlite3": typeof BetterSqlite3;
  pg: typeof pg;
}

const requireFromRuntime = createRequire(import.meta.url);

/**
 * Returns the driver package `name`. Throws {@link DriverNotInstalledError}
 * (code `DRIVER_NOT_INSTALLED`) when it cannot be found, or when loading it
 * fails (the error it threw is the `cause`). `backend` names the backend in
 * the message ("SQLite", "PostgreSQL").
 */
export function loadDriver<N extends keyof Drivers>(name: N, backend: string): Drivers[N] {
  let path: string;
  try {
    path = requireFromRuntime.resolve(name);
  } catch {
    throw new DriverNotInstalledError(name, `the ${backend} backend`);
  }
  try {
    return requireFromRuntime(path) as Drivers[N];
  } catch (error) {
    throw new DriverNotInstalledError(name, `the ${backend} backend`, error);
  }
}
