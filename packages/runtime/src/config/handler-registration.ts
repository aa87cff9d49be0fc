import type { JobTypeLimit, TransactionHandle } from "../backend/backend.js";
import { checkJobRetention, type JobRetention } from "../core/job-retention.js";
import type { RetryPolicy } from "../core/retry/retry-policy.js";
import { describeValue, InvalidArgumentError, InvalidConfigError } from "../errors.js";
import { timeoutProblem } from "../publisher/enqueue-options.js";
import type { JobPublisher } from "../publisher/job-publisher.js";

/**
 * What a handler receives besides its payload. `Trx`: the transactions
 * `publisher.enqueueIn` takes, the backend's (see {@link ServerOptions}).
 */
export interface JobContext<C, Trx = TransactionHandle> {
  /** The application context given as `context` in the options. */
  app: C;
  jobId: string;
  jobType: string;
  /** 1 for the first run, 2 for the first retry, ... */
  attempt: number;
  /** Aborts when the lease is lost, the job times out, or shutdown's deadline passes. */
  signal: AbortSignal;
  /** For a partitioned job: its topic and partition. */
  partition?: { topic: string; partition: number };
  /**
   * Stores `value` as this job's progress (docs/semantics.md X8), shown by the
   * dashboard's job detail and `later jobs show`: JSON, at most 16 KiB
   * encoded; each call replaces the last, and the last stays after the job
   * finishes (a retry's attempts report over it). One small write per call:
   * report steps, not every item. Rejects with `INVALID_ARGUMENT` for a
   * value that is not JSON or too large (nothing stored), and `LEASE_LOST`
   * when this attempt no longer holds the job (its lease was taken over
   * after a stall): stop the work then, its outcome will not be written.
   */
  progress(value: unknown): Promise<void>;
  /** Enqueue more jobs (untyped; generated code wraps it). */
  publisher: JobPublisher<Trx>;
}

/** One job type's handler and its settings. */
export interface HandlerRegistration<C, Trx = TransactionHandle> {
  /** Resolve = success; throw (anything) = retry per policy. */
  handle(ctx: JobContext<C, Trx>, payload: unknown): unknown;
  /** This job type's retry policy on this server: wins over the server default, not over a policy given explicitly at enqueue. */
  retry?: (app: C) => RetryPolicy;
  /** Turns stored JSON text into the payload; throw to fail the job as undecodable. Default `JSON.parse`. */
  decode?: (json: string) => unknown;
  /**
   * Turns a payload into JSON text. Default: `JSON.stringify` that refuses
   * what would not come back the same (`NaN`, functions, `Map`, an invalid
   * `Date`, cycles, ...) with `INVALID_ARGUMENT` naming the value's path
   * (see `encode-payload.ts`).
   */
  encode?: (payload: unknown) => string;
  /**
   * This job type's attempt timeout in ms on this server (as River's
   * `Timeout()`): an attempt running longer has its `ctx.signal` aborted
   * with a `JobTimeoutError` (`JOB_TIMEOUT`) and counts as a failure,
   * retried per policy. Wins over the server's `jobTimeoutMs`, not over a
   * job's own `EnqueueOptions.timeoutMs`. null: no timeout for this type.
   * An integer from 1 to 2^31 − 1. Default: the server's `jobTimeoutMs`.
   */
  timeoutMs?: number | null;
  /**
   * How long this type's finished jobs are kept, per stage (J11 in
   * docs/semantics.md): `{ successMs?, failedMs?, cancelledMs? }`, each an
   * integer of ms from 0 (a negative, fractional or non-finite value is
   * `INVALID_ARGUMENT` at start). An unset field: the server's
   * `retentionMs` (default one day). `successMs: 0` deletes a success's row
   * in the statement that records it: its history and result are lost, and
   * `later jobs show` no longer finds it.
   */
  retention?: JobRetention;
  /**
   * X9: at most this many jobs of this type running at once across every
   * server of the namespace, enforced by the database at claim time; the
   * others wait in storage (holding no worker) and start as a running one
   * finishes. A positive integer; null or absent: no such limit. Stored in
   * the database when the server starts: the last server started with a
   * handler for the type sets its limits (a server whose options differ
   * from the stored ones reports a `warning` event, `LIMITS_CHANGED`).
   */
  concurrency?: number | null;
  /**
   * X9: at most `max` jobs of this type started (claimed) in any window of
   * `perMs` ms across every server of the namespace; the others wait in
   * storage and start when the window lets them (the claim learns when, no
   * fixed sleep). `max` and `perMs` positive integers; null or absent: no
   * rate limit. Stored as {@link concurrency} is.
   */
  rateLimit?: { max: number; perMs: number } | null;
  /**
   * X9: at most this many jobs of this type running at once per group
   * (`EnqueueOptions.group`) across every server of the namespace; claims
   * take the ready groups round-robin, so one group's backlog never delays
   * another group's first job. The jobs of the type enqueued with no group
   * form one group of their own, under the same limit. A positive integer;
   * null or absent: none. Stored as {@link concurrency} is; both apply when
   * both are given.
   */
  groupConcurrency?: number | null;
}

/** Every key a {@link HandlerRegistration} has: any other is refused, so a misspelt option is not silently ignored. */
export const HANDLER_REGISTRATION_KEYS: readonly (keyof HandlerRegistration<unknown>)[] = [
  "handle",
  "retry",
  "decode",
  "encode",
  "timeoutMs",
  "retention",
  "concurrency",
  "rateLimit",
  "groupConcurrency",
];

/**
 * One handler's keys (only {@link HANDLER_REGISTRATION_KEYS}) and its `timeoutMs` (`InvalidConfigError`), its
 * `retention`, `concurrency`, `rateLimit` and `groupConcurrency` (`InvalidArgumentError`, as every bad limit is,
 * X9), each error naming the job type and the key.
 */
export function checkHandlerRegistration(type: string, h: object): void {
  for (const key of Object.keys(h)) {
    if (!(HANDLER_REGISTRATION_KEYS as readonly string[]).includes(key)) {
      throw new InvalidConfigError(`handlers.${type}: unknown option "${key}"; the options are ${HANDLER_REGISTRATION_KEYS.join(", ")}`);
    }
  }
  const timeoutMs = (h as { timeoutMs?: unknown }).timeoutMs;
  const problem = timeoutMs === undefined || timeoutMs === null ? null : timeoutProblem(timeoutMs);
  if (problem !== null) throw new InvalidConfigError(`handlers.${type}.timeoutMs ${problem} (or null for none)`);
  checkJobRetention(type, (h as { retention?: unknown }).retention);
  handlerLimit(type, h as HandlerRegistration<unknown>);
}

/** The largest limit taken (a PostgreSQL integer column). */
const MAX_LIMIT = 2 ** 31 - 1;

/** Why `value` is not a limit (a positive integer up to 2^31 − 1), or null when it is one. */
function limitProblem(value: unknown): string | null {
  if (typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_LIMIT) return null;
  return `must be an integer from 1 to ${MAX_LIMIT}, got ${describeValue(value)}`;
}

/**
 * X9: the limits of handler `type` as stored (null: no limit); throws
 * `InvalidArgumentError` naming the job type and the field for a limit of 0,
 * a negative or non-integer one (`concurrency`, `groupConcurrency`), or a `rateLimit` that is not `{ max, perMs }`
 * of positive integers (`perMs` under 1 included). `INVALID_ARGUMENT` rather than `INVALID_CONFIG`: the same code
 * as every other bad limit or group (an enqueue's `group`, a handler's `retention`), so one check catches them.
 */
export function handlerLimit(type: string, h: Pick<HandlerRegistration<unknown>, "concurrency" | "rateLimit" | "groupConcurrency">): JobTypeLimit | null {
  const concurrency = h.concurrency ?? null;
  const groupConcurrency = h.groupConcurrency ?? null;
  for (const [field, value] of [
    ["concurrency", concurrency],
    ["groupConcurrency", groupConcurrency],
  ] as const) {
    const problem = value === null ? null : limitProblem(value);
    if (problem !== null) throw new InvalidArgumentError(`handlers.${type}.${field} ${problem} (or null for none)`);
  }
  const rate = h.rateLimit ?? null;
  if (rate !== null) {
    if (typeof rate !== "object" || Object.keys(rate).some((k) => k !== "max" && k !== "perMs"))
      throw new InvalidArgumentError(`handlers.${type}.rateLimit must be { max, perMs } (or null for none), got ${describeValue(rate)}`);
    for (const field of ["max", "perMs"] as const) {
      const problem = limitProblem(rate[field]);
      if (problem !== null) throw new InvalidArgumentError(`handlers.${type}.rateLimit.${field} ${problem}`);
    }
  }
  if (concurrency === null && rate === null && groupConcurrency === null) return null;
  return { jobType: type, concurrency, rateLimit: rate === null ? null : { max: rate.max, perMs: rate.perMs }, groupConcurrency };
}
