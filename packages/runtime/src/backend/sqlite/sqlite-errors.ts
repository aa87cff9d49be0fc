/**
 * Turns better-sqlite3's errors about the database itself into typed
 * {@link LaterError}s, so that a caller never sees a raw `SqliteError` for a
 * full disk, a lock held too long or an unreadable file. Errors that are not
 * about the database (a `LaterError` thrown inside a transaction body, a
 * constraint the code relies on) pass through unchanged.
 *
 * | SQLite result code | error |
 * | --- | --- |
 * | `SQLITE_FULL` | {@link DatabaseFullError} |
 * | `SQLITE_BUSY*`, `SQLITE_LOCKED*` | {@link DatabaseBusyError} |
 * | `SQLITE_IOERR*`, `SQLITE_CANTOPEN*`, `SQLITE_READONLY*`, `SQLITE_CORRUPT*`, `SQLITE_NOTADB` | {@link DatabaseUnavailableError} |
 *
 * SQLite rolls back the statement, or the whole transaction, on each of
 * these, so the typed error always means "nothing of this write is stored".
 */
import { DatabaseBusyError, DatabaseFullError, DatabaseUnavailableError, LaterError } from "../../errors.js";

/** The typed error for `error`, or `error` itself when it is not about the database. */
export function translateSqliteError(error: unknown, file: string, busyTimeoutMs: number): unknown {
  if (error instanceof LaterError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return error;
  const what = (error as Error).message;
  if (code === "SQLITE_FULL") {
    return new DatabaseFullError(`SQLite database ${file} is full (${what}): nothing of this write was stored; free disk space and it can be retried`, error);
  }
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
    return new DatabaseBusyError(
      `SQLite database ${file} stayed locked by another connection for longer than busyTimeoutMs (${busyTimeoutMs} ms): nothing of this write was stored; retry it`,
      error,
    );
  }
  if (/^SQLITE_(IOERR|CANTOPEN|READONLY|CORRUPT|NOTADB)/.test(code)) {
    return new DatabaseUnavailableError(`SQLite database ${file} cannot be read or written (${what})`, error);
  }
  return error;
}
