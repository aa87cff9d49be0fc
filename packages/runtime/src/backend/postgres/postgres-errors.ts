/**
 * Classifies `pg` driver errors. Connection failures (refused, reset,
 * terminated by the server or `pg_terminate_backend`, SQLSTATE classes 08
 * and 57P, and the session timeouts 25P03 and 25P04) become a `transient`
 * {@link DatabaseUnavailableError} with the driver error as `cause`; the
 * pool replaces the dead connection on the next statement. Other errors
 * pass through unchanged.
 */
import type pg from "pg";
import { DatabaseUnavailableError, LaterError } from "../../errors.js";

/**
 * The server ended the session for a timeout of its own: idle in a
 * transaction (25P03, `idle_in_transaction_session_timeout`) or a
 * transaction too long (25P04, `transaction_timeout`, PostgreSQL 17). When
 * the process was stalled past it (paused, starved of CPU), the error
 * reaches the statement it sends next rather than the client's `error`
 * event. (57P05, `idle_session_timeout`, is in class 57P.)
 */
const SESSION_TIMEOUTS = new Set(["25P03", "25P04"]);
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/** True when the error means the connection is gone (the statement may or may not have committed). */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (SOCKET_CODES.has(code) || code.startsWith("08") || code.startsWith("57P") || SESSION_TIMEOUTS.has(code))) return true;
  return /Connection terminated|connection error|timeout exceeded when trying to connect|Client was closed/i.test(error.message);
}

/** Deadlock or serialization failure: PostgreSQL rolled the transaction back, so running it again is safe. */
export function isRetryableConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code ?? (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  return code === "40P01" || code === "40001";
}

/**
 * A named prepared statement missing on the server connection (26000) or
 * already defined there (42P05): the connection is shared through a
 * transaction-mode pooler. The statement did not run (both fail before
 * execution), so running it again unnamed is safe.
 */
export function isPreparedStatementLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (code === "26000" || code === "42P05") && /prepared statement/i.test((error as Error).message ?? "");
}

/** Wraps connection failures in `DatabaseUnavailableError`; leaves `LaterError`s and other errors as they are. */
export function wrapDriverError(error: unknown, what: string): unknown {
  if (error instanceof LaterError || !isConnectionError(error)) return error;
  return new DatabaseUnavailableError(`PostgreSQL connection lost during ${what}: ${(error as Error).message}; the next statement reconnects`, error, {
    transient: true,
  });
}

/** Where the backend connects, for messages: the URL without its password, or the pool's host and database. */
export function describeConnection(connectionString: string | undefined, pool: pg.Pool | undefined): string {
  if (connectionString !== undefined) {
    try {
      const url = new URL(connectionString);
      if (url.password) url.password = "***";
      return url.toString();
    } catch {
      return "postgres://…";
    }
  }
  const o = (pool?.options ?? {}) as pg.PoolConfig;
  if (o.connectionString) return describeConnection(o.connectionString, undefined);
  return `postgres://${o.user ?? ""}${o.user ? "@" : ""}${o.host ?? "localhost"}${o.port ? `:${o.port}` : ""}/${o.database ?? ""}`;
}

/**
 * How many times a write PostgreSQL rolled back for a deadlock or a serialization conflict is tried in all. Each
 * try rolled back cost a wait (`deadlock_timeout`, 1 s by default, for a deadlock) and applied nothing; the side
 * PostgreSQL lets through commits meanwhile, so a next try usually passes. Several in a row happen when many
 * sessions share a stage-counter shard under load (three processes of four workers each, with failing jobs,
 * saw a session rolled back three times in 3.5 s): ten tries bound the wait at about ten seconds.
 */
export const CONFLICT_TRIES = 10;

/** Runs a write again (up to {@link CONFLICT_TRIES} tries in all) when PostgreSQL rolled it back for a deadlock or serialization conflict (nothing of it was applied). */
export async function retryConflicts<R>(body: () => Promise<R>): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await body();
    } catch (error) {
      if (attempt >= CONFLICT_TRIES || !isRetryableConflict(error)) throw error;
    }
  }
}

/** Runs `body`, turning a driver error into a `LaterError` that says what failed (`what`). */
export async function guarded<R>(what: string, body: () => Promise<R>): Promise<R> {
  try {
    return await body();
  } catch (error) {
    throw wrapDriverError(error, what);
  }
}
