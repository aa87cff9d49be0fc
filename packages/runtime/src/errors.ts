/**
 * Every error later throws on purpose is a {@link LaterError} with a stable
 * `code`. Match on `code` (or `instanceof` the subclass), never on `message`:
 * messages say what to do next and may be reworded.
 *
 * | code | class | when |
 * | --- | --- | --- |
 * | `INVALID_CONFIG` | {@link InvalidConfigError} | bad server/backend option, caught at construction |
 * | `INVALID_ARGUMENT` | {@link InvalidArgumentError} | bad enqueue input (negative delay, unknown job type, ...) |
 * | `PARENT_NOT_FOUND` | {@link ParentNotFoundError} | continuation of a job id the database does not hold |
 * | `JOB_NOT_FOUND` | {@link JobNotFoundError} | `retry`/`delete`/`cancel` of a job id the namespace does not hold |
 * | `JOB_ACTION_REFUSED` | {@link JobActionRefusedError} | `retry` of a job that has not failed, `delete` of an unfinished one |
 * | `JOB_TYPE_NOT_FOUND` | {@link JobTypeNotFoundError} | `pause`/`resume` of a job type the namespace does not know |
 * | `SCHEMA_VERSION_MISMATCH` | {@link SchemaVersionError} | database schema behind or ahead of this release |
 * | `DATABASE_NOT_FOUND` | {@link DatabaseNotFoundError} | a SQLite file that does not exist, opened without `autoMigrate` (nothing is created) |
 * | `DATABASE_UNAVAILABLE` | {@link DatabaseUnavailableError} | the database cannot be opened or written (`transient`: it may be reachable soon) |
 * | `DATABASE_FULL` | {@link DatabaseFullError} | the disk (or SQLite's `max_page_count`) is full: the write stored nothing |
 * | `DATABASE_BUSY` | {@link DatabaseBusyError} | another process held SQLite's write lock past `busyTimeoutMs`: the write stored nothing |
 * | `SERVER_STOPPED` | {@link ServerStoppedError} | enqueue or scaling after `shutdown()` |
 * | `LEASE_LOST` | {@link LeaseLostError} | a claim's lease was taken over; its writes are rejected |
 * | `PAYLOAD_DECODE` | {@link PayloadDecodeError} | a stored payload no longer decodes for its handler |
 * | `HANDLER_MISSING` | {@link HandlerMissingError} | builder or server started without a handler for a declared job |
 * | `JOB_TIMEOUT` | {@link JobTimeoutError} | a handler ran past `jobTimeoutMs` |
 * | `JOB_CANCELLED` | {@link JobCancelledError} | the abort reason of `ctx.signal` when the running job was cancelled |
 * | `PERMANENT_FAILURE` | {@link PermanentJobError} | thrown by a handler: fail the job now, no retries, whatever its policy |
 * | `UNKNOWN_TOPIC` | {@link UnknownTopicError} | enqueue to a topic not registered in the options |
 * | `PARTITION_COUNT_MISMATCH` | {@link PartitionCountMismatchError} | a topic registered with another partition count |
 * | `INVALID_CRON` | {@link InvalidCronError} | a recurring schedule that does not parse |
 * | `DRIVER_NOT_INSTALLED` | {@link DriverNotInstalledError} | a backend's driver (`better-sqlite3`, `pg`) is not installed, or does not load |
 * | `OFFSET_OUT_OF_RANGE` | {@link OffsetOutOfRangeError} | a retained-log read below the oldest retained offset, or a commit beyond the partition's end |
 * | `STALE_EPOCH` | {@link StaleEpochError} | a retained-log commit whose epoch is not the group partition's current one |
 * | `RECORD_TOO_LARGE` | {@link RecordTooLargeError} | a retained-log record over the size limit (value 1 MiB, headers 64 KiB) |
 * | `DRAIN_LIMIT` | {@link DrainLimitError} | the testing kit's `drain()` ran more attempts than its `maxAttempts` (jobs that keep enqueueing jobs) |
 * | `INVALID_RESULT` | {@link InvalidResultError} | a handler resolved to a value over 64 KiB of JSON, or one JSON cannot hold: the attempt failed |
 * | `WAIT_TIMEOUT` | {@link WaitTimeoutError} | `waitFor` saw no terminal stage within its `timeoutMs` |
 * | `MIDDLEWARE_MISUSE` | {@link MiddlewareMisuseError} | a middleware hook called `next()` a second time |
 */
import { LaterError } from "./later-error.js";

export * from "./later-error.js";
export * from "./database-errors.js";
export * from "./log-errors.js";

/** A server, builder or backend option is missing, of the wrong type, or out of range. */
export class InvalidConfigError extends LaterError {
  constructor(message: string) {
    super("INVALID_CONFIG", message);
  }
}

/** An enqueue call got input it cannot store (negative delay, unknown job type, ...). Nothing was written. */
export class InvalidArgumentError extends LaterError {
  constructor(message: string) {
    super("INVALID_ARGUMENT", message);
  }
}

/** `enqueueContinue` named a parent job id the database does not hold. Nothing was written. */
export class ParentNotFoundError extends LaterError {
  readonly parentId: string;
  constructor(parentId: string) {
    super("PARENT_NOT_FOUND", `parent job ${parentId} not found in this namespace (it never existed, or it finished and expired); nothing was enqueued`);
    this.parentId = parentId;
  }
}

/** `retry`, `delete` or `cancel` named a job id this namespace does not hold (never enqueued here, deleted, or expired). Nothing was changed. */
export class JobNotFoundError extends LaterError {
  readonly jobId: string;
  constructor(jobId: string) {
    super("JOB_NOT_FOUND", `job ${jobId} not found in this namespace (it never existed, or it was deleted or expired); nothing was changed`);
    this.jobId = jobId;
  }
}

/** `retry` of a job that is not `failed` or `cancelled`, or `delete` of one that is not finished (`success`, `failed`, `cancelled`). Nothing was changed. */
export class JobActionRefusedError extends LaterError {
  readonly jobId: string;
  readonly action: "retry" | "delete";
  /** The stage the job was in. */
  readonly stage: string;
  /** `because`: why a job in an allowed stage is refused; default: its stage is not one of `allowed`. */
  constructor(action: "retry" | "delete", jobId: string, stage: string, allowed: readonly string[], because?: string) {
    super(
      "JOB_ACTION_REFUSED",
      `cannot ${action} job ${jobId}: ${because ?? `it is ${stage}, and only ${allowed.length > 1 ? `${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)}` : allowed[0]} jobs can be ${action === "retry" ? "retried" : "deleted"}`}; nothing was changed`,
    );
    this.jobId = jobId;
    this.action = action;
    this.stage = stage;
  }
}

/** The server was shut down; it no longer enqueues, claims or scales. */
export class ServerStoppedError extends LaterError {
  constructor(what: string) {
    super("SERVER_STOPPED", `${what}: the server has been shut down`);
  }
}

/** A claim's lease expired and was taken over; the claim's completion or retry write was rejected. */
export class LeaseLostError extends LaterError {
  readonly jobId: string;
  constructor(jobId: string) {
    super("LEASE_LOST", `the execution lease of job ${jobId} was lost; this attempt's result is discarded`);
    this.jobId = jobId;
  }
}

/**
 * Thrown by a handler to fail its job for good: the job ends `failed` with
 * this error's message as its reason after this attempt, without retries,
 * whatever its retry policy (the job type's, the stored one or the server
 * default). Use it for errors no retry can fix (a missing record, invalid
 * input), as BullMQ's `UnrecoverableError`. Any other thrown error goes
 * through the retry policy. Matched by `instanceof` or by `code`, so an
 * error of another copy of this package counts too.
 *
 * ```ts
 * .withSendEmailHandler(async (ctx, { address }) => {
 *   if (!address.includes("@")) throw new PermanentJobError(`not an address: ${address}`);
 *   await ctx.app.mailer.send(address);
 * })
 * ```
 */
export class PermanentJobError extends LaterError {
  constructor(reason: string, options?: { cause?: unknown }) {
    super("PERMANENT_FAILURE", reason, options);
  }
}

/** A stored payload could not be decoded for its handler. The job fails with this reason; no retry can fix it. */
export class PayloadDecodeError extends LaterError {
  constructor(jobType: string, reason: string, cause?: unknown) {
    super("PAYLOAD_DECODE", `payload of job type "${jobType}" does not decode: ${reason}`, { cause });
  }
}

/** A job type is declared but has no handler. */
export class HandlerMissingError extends LaterError {
  readonly jobTypes: readonly string[];
  constructor(jobTypes: readonly string[], hint: string) {
    super("HANDLER_MISSING", `missing handler${jobTypes.length > 1 ? "s" : ""} for ${jobTypes.join(", ")}: ${hint}`);
    this.jobTypes = jobTypes;
  }
}

/**
 * A handler ran longer than its timeout: the job's own `timeoutMs` (given at
 * enqueue), else its type's handler option `timeoutMs`, else the server's
 * `jobTimeoutMs`. The attempt counts as failed and is retried per policy.
 */
export class JobTimeoutError extends LaterError {
  readonly timeoutMs: number;
  /** `setting`: which one applied, as the message names it. Default "jobTimeoutMs". */
  constructor(jobId: string, timeoutMs: number, setting = "jobTimeoutMs") {
    super("JOB_TIMEOUT", `job ${jobId} ran longer than ${setting} (${timeoutMs} ms)`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The reason `ctx.signal` aborts with when the running job was cancelled
 * (`cancel`, docs/semantics.md X3): the job is `cancelled` already, and
 * whatever the handler does afterwards is not written (no retry, no failure).
 * `reason`: the one given to `cancel`, if any.
 */
export class JobCancelledError extends LaterError {
  readonly jobId: string;
  readonly reason: string | undefined;
  constructor(jobId: string, reason?: string) {
    super("JOB_CANCELLED", `job ${jobId} was cancelled${reason ? `: ${reason}` : ""}; this attempt's result is discarded`);
    this.jobId = jobId;
    this.reason = reason;
  }
}

/**
 * The testing kit's `drain()` (`@later/runtime/testing`, docs/semantics.md X11) ran
 * `maxAttempts` attempts and another job was still due: handlers that keep enqueueing
 * jobs would never let it end. What ran is written; `attempts` is how many.
 */
export class DrainLimitError extends LaterError {
  constructor(readonly attempts: number) {
    super(
      "DRAIN_LIMIT",
      `drain() ran ${attempts} attempts (its maxAttempts) and jobs were still due: a handler that enqueues jobs forever? raise maxAttempts if not`,
    );
  }
}

/**
 * A handler resolved to a value that cannot be stored as the job's result
 * (docs/semantics.md X6): over {@link InvalidResultError.limit} bytes of JSON
 * text, or a value JSON cannot hold (a BigInt, a cycle, a function). The
 * attempt fails with this as its reason and is retried per policy, as any
 * failure; the worker goes on.
 */
export class InvalidResultError extends LaterError {
  /** The most bytes of JSON text a result may take: 64 KiB. */
  static readonly limit = 65_536;
  constructor(jobType: string, why: string) {
    super("INVALID_RESULT", `the handler of "${jobType}" resolved to a result that cannot be stored: ${why}`);
  }
}

/** `waitFor(jobId, { timeoutMs })` saw the job in no terminal stage within `timeoutMs`. The job itself is untouched. */
export class WaitTimeoutError extends LaterError {
  readonly jobId: string;
  readonly timeoutMs: number;
  constructor(jobId: string, timeoutMs: number) {
    super("WAIT_TIMEOUT", `job ${jobId} did not finish within ${timeoutMs} ms (waitFor's timeoutMs); it may still run, wait again or look it up`);
    this.jobId = jobId;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * `pause` or `resume` of a job type the namespace does not know (docs/semantics.md
 * X4): no server of the namespace handles it, no job or schedule of it is
 * stored, and the caller does not handle it either. Nothing was written, so
 * that a typo never pauses a name nothing will ever run.
 */
export class JobTypeNotFoundError extends LaterError {
  readonly jobType: string;
  constructor(jobType: string, action: string) {
    super(
      "JOB_TYPE_NOT_FOUND",
      `${action}: job type "${jobType}" is not known in this namespace (no server handles it, no job or schedule of it is stored); nothing was changed`,
    );
    this.jobType = jobType;
  }
}

/**
 * A middleware hook (docs/semantics.md X10) called its `next()` a second
 * time: what it wraps (the insert, the handler) runs once per call. The
 * second call rejects with this; at enqueue it rejects the enqueue, around
 * an attempt it fails the attempt (retried per policy).
 */
export class MiddlewareMisuseError extends LaterError {
  constructor(message: string) {
    super("MIDDLEWARE_MISUSE", message);
  }
}

/** Enqueue to a topic the server options do not register. Nothing was written. */
export class UnknownTopicError extends LaterError {
  /**
   * With `partition`: the options name the topic but the database holds no such partition (no server registered it yet).
   * With `message`: that message instead (the retained log's, which names its own options).
   */
  constructor(topic: string, partition?: number, message?: string) {
    super(
      "UNKNOWN_TOPIC",
      message ??
        (partition === undefined
          ? `topic "${topic}" is not registered: add topic("${topic}", N) to the server's topics`
          : `topic "${topic}" partition ${partition} is not in the database: start a server with topic("${topic}", N) in its topics first`),
    );
  }
}

/**
 * A topic was registered with a partition count other than the one the
 * database holds, or the `topics` option disagrees with the count the
 * schema declares (`@partitions`; then `message` says so).
 */
export class PartitionCountMismatchError extends LaterError {
  constructor(topic: string, stored: number, configured: number, message?: string) {
    super(
      "PARTITION_COUNT_MISMATCH",
      message ?? `topic "${topic}" has ${stored} partitions in the database but ${configured} in the options; a partition count cannot change in place`,
    );
  }
}

/** A cron expression or time zone that does not parse. */
export class InvalidCronError extends LaterError {
  constructor(field: string, reason: string) {
    super("INVALID_CRON", `invalid ${field}: ${reason}`);
  }
}

/**
 * A rejected option or argument as short text for an error message, safe for
 * any value: one whose `toString` throws or is not a function (a hostile
 * object) is described by its type instead of taking the caller down.
 */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  try {
    return String(value);
  } catch {
    return value === null ? "null" : `a value of type ${typeof value}`;
  }
}

/** Turns anything a handler threw into a one-line reason to store. */
export function describeThrown(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message || thrown.name;
  if (typeof thrown === "string") return thrown;
  if (thrown === undefined) return "handler threw undefined";
  if (thrown === null) return "handler threw null";
  try {
    const json = JSON.stringify(thrown);
    if (json !== undefined) return `handler threw ${json}`;
  } catch {
    // fall through: cyclic or hostile value
  }
  try {
    return `handler threw ${String(thrown)}`;
  } catch {
    return "handler threw a value that cannot be described";
  }
}
