/**
 * The base of every error later throws on purpose, and the codes it carries.
 * The table of codes, classes and when each is thrown is on `errors.ts`,
 * which exports them all.
 */
export type LaterErrorCode =
  | "INVALID_CONFIG"
  | "INVALID_ARGUMENT"
  | "PARENT_NOT_FOUND"
  | "JOB_NOT_FOUND"
  | "JOB_ACTION_REFUSED"
  | "JOB_TYPE_NOT_FOUND"
  | "SCHEMA_VERSION_MISMATCH"
  | "DATABASE_NOT_FOUND"
  | "DATABASE_UNAVAILABLE"
  | "DATABASE_FULL"
  | "DATABASE_BUSY"
  | "SERVER_STOPPED"
  | "LEASE_LOST"
  | "PAYLOAD_DECODE"
  | "HANDLER_MISSING"
  | "JOB_TIMEOUT"
  | "JOB_CANCELLED"
  | "PERMANENT_FAILURE"
  | "UNKNOWN_TOPIC"
  | "PARTITION_COUNT_MISMATCH"
  | "INVALID_CRON"
  | "DRIVER_NOT_INSTALLED"
  | "OFFSET_OUT_OF_RANGE"
  | "STALE_EPOCH"
  | "RECORD_TOO_LARGE"
  | "DRAIN_LIMIT"
  | "INVALID_RESULT"
  | "WAIT_TIMEOUT"
  | "MIDDLEWARE_MISUSE";

/** Base class of every error later throws on purpose. */
export class LaterError extends Error {
  /** Stable machine-readable code; see the table on `errors.ts`. */
  readonly code: LaterErrorCode;

  constructor(code: LaterErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}
