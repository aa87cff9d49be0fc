/**
 * Where the events of a server, a publisher and a retained log go: the
 * `onEvent` listener, a `logger`, both, or (given neither) standard error
 * for warnings and errors, so that a problem is never silent by default (a
 * wrong port used to be a quiet 60-second wait in `start()`).
 *
 * | given | what is told |
 * | --- | --- |
 * | `onEvent` | every event, to it (and to `logger` too when one is given) |
 * | `logger` (an object) | every event at its level (table below), as `logger[level]({ code?, event, ...fields }, message)`, the pino signature |
 * | neither | each warning and error cause once (by code and step), one stderr line: `later: warn DATABASE_UNAVAILABLE (start): … (retrying until databaseWaitMs)` |
 * | `logger: null` | nothing at all (with no `onEvent`) |
 *
 * Levels: a server or log started or stopped, workers added or removed,
 * partitions gained or lost, retries and deletes from outside: `info`;
 * rescued jobs, claims skipped or released (their lease lost, or a
 * shutdown deadline), a worker replaced, a database not reachable at start
 * (retried): `warn`; every other `error` event, with its code: `error`;
 * each job's stage changes and the routine sweeps: `debug`. Job events are
 * built only when someone listens (`eventsEnabled`: an `onEvent`, or a
 * logger whose `isLevelEnabled("debug")`, when it has one, is true), so
 * the hot path of a server with neither builds no event per job.
 */
import { InvalidConfigError, describeValue } from "../errors.js";
import type { ServerEvent } from "./server-event.js";

/**
 * A logger later writes to: any object with these four methods, each called
 * as `(fields, message)` (pino's, and bunyan's, argument order; `console`
 * fits too). `isLevelEnabled`, when present (pino has it), is asked once
 * whether `debug` is on, so that per-job entries are not even built when not.
 */
export interface LaterLogger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  isLevelEnabled?(level: string): boolean;
}

export type LaterLogLevel = "debug" | "info" | "warn" | "error";

/** Where events go, once resolved: `emit` never throws. */
export interface EventSink {
  emit(event: ServerEvent): void;
  /** False when nobody would see a per-job event: hot paths skip building them. */
  readonly eventsEnabled: boolean;
}

/** Checks a `logger` option: undefined, null, or an object with the four methods; else `InvalidConfigError` naming `where`. */
export function checkLogger(logger: unknown, where: string): LaterLogger | null | undefined {
  if (logger === undefined || logger === null) return logger;
  const l = logger as Partial<Record<LaterLogLevel, unknown>>;
  const missing = (["debug", "info", "warn", "error"] as const).filter((m) => typeof l[m] !== "function");
  if (typeof logger !== "object" || missing.length > 0) {
    throw new InvalidConfigError(
      `${where}: \`logger\` must be an object with debug, info, warn and error methods (pino, or console), or null for silence; got ${typeof logger === "object" ? `an object without ${missing.join(", ")}` : describeValue(logger)}`,
    );
  }
  return logger as LaterLogger;
}

/**
 * The sink of `onEvent` and `logger` as given (both checked by the caller).
 * `stderr` is where the default lines go (tests give their own).
 */
export function eventSink(
  onEvent: ((event: ServerEvent) => void) | undefined,
  logger: LaterLogger | null | undefined,
  stderr: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): EventSink {
  const toLogger = logger ? loggerListener(logger) : logger === undefined && onEvent === undefined ? stderrListener(stderr) : null;
  const debugOn = logger ? typeof logger.isLevelEnabled !== "function" || safeLevelEnabled(logger) : false;
  return {
    eventsEnabled: onEvent !== undefined || debugOn,
    emit: (event) => {
      try {
        onEvent?.(event);
      } catch {
        // a listener's bug must not take a worker down
      }
      try {
        toLogger?.(event);
      } catch {
        // nor a logger's
      }
    },
  };
}

function safeLevelEnabled(logger: LaterLogger): boolean {
  try {
    return logger.isLevelEnabled!("debug") !== false;
  } catch {
    return true;
  }
}

function loggerListener(logger: LaterLogger): (event: ServerEvent) => void {
  return (event) => {
    const { level, message } = describeEvent(event);
    const { type, ...fields } = event;
    logger[level]({ ...("code" in event && event.code ? { code: event.code } : {}), event: type, ...fields }, message);
  };
}

/** Warnings and errors, each cause (code or event type, and step) once. */
function stderrListener(write: (line: string) => void): (event: ServerEvent) => void {
  const told = new Set<string>();
  return (event) => {
    const { level, message } = describeEvent(event);
    if (level !== "warn" && level !== "error") return;
    const code = ("code" in event && event.code) || event.type.toUpperCase().replaceAll("-", "_");
    const where = event.type === "error" ? event.where : undefined;
    const key = `${code}\0${where ?? ""}`;
    if (told.has(key)) return;
    told.add(key);
    write(`later: ${level} ${code}${where ? ` (${where})` : ""}: ${message}`);
  };
}

/** The level and the one-line message of an event. */
export function describeEvent(event: ServerEvent): { level: LaterLogLevel; message: string } {
  switch (event.type) {
    case "job":
      return { level: "debug", message: `job ${event.jobId} (${event.jobType}) ${event.stage}${event.error ? `: ${event.error}` : ""}` };
    case "worker":
      return {
        level: event.action === "replaced" ? "warn" : "info",
        message: `worker ${event.action}${event.reason ? ` (${event.reason})` : ""}: ${event.workers} workers`,
      };
    case "job-skipped":
      return { level: "warn", message: `claim of job ${event.jobId} (${event.jobType}) not run: ${event.reason}` };
    case "job-released":
      return { level: "warn", message: `job ${event.jobId} (${event.jobType}) put back: ${event.reason}` };
    case "job-lease-lost":
      return { level: "warn", message: `job ${event.jobId} (${event.jobType}) attempt ${event.attempt} lost its lease: ${event.reason}` };
    case "job-cancelled":
      return { level: "info", message: `job ${event.jobId} (${event.jobType}) cancelled while running: ${event.reason}` };
    case "job-action":
      return { level: "info", message: `${event.action} of ${event.jobIds.length} job${event.jobIds.length === 1 ? "" : "s"}` };
    case "maintenance":
      return {
        level: event.task.startsWith("rescue") ? "warn" : "debug",
        message: `${event.task}: ${event.count}`,
      };
    case "lifecycle":
      return { level: "info", message: `${event.component} ${event.action}${event.instanceId ? ` (${event.instanceId})` : ""}` };
    case "partitions":
      return {
        level: "info",
        message: `partition ownership moved: ${event.owned} owned (${event.gained} gained, ${event.lost} lost) among ${event.members} servers`,
      };
    case "warning":
      return { level: "warn", message: event.message };
    case "error":
      // A database not reachable at start is waited for (databaseWaitMs): a warning until the wait is over.
      if (event.where === "start" && event.code === "DATABASE_UNAVAILABLE") return { level: "warn", message: `${event.error} (retrying until databaseWaitMs)` };
      return { level: "error", message: event.error };
  }
}
