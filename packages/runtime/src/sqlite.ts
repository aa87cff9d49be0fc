/**
 * `@later/runtime/sqlite`: the SQLite backend. Needs the application to
 * install `better-sqlite3` (an optional peer dependency); the root entry
 * never loads it.
 */
export { sqlite, SqliteBackend, type SqliteBackendOptions, type SqliteDatabase, type SqliteTransaction } from "./backend/sqlite/sqlite-backend.js";
