/**
 * The one extension point of servers and publishers (docs/semantics.md
 * X10): a list of middleware, each an object with an `enqueue` hook around
 * every enqueue and an `attempt` hook around every attempt, composed in
 * array order (the first is the outermost), as River's JobInsertMiddleware
 * and WorkerMiddleware. Tracing (`@later/runtime/otel`) and the Prometheus
 * metrics are middleware (the metrics the server's first attempt entry, in
 * an observer form: `attempt-observer.ts`); so can an application's
 * logging, tenancy or auditing be.
 *
 * ```text
 *   enqueue(...) ─► mw[0].enqueue ─► mw[1].enqueue ─► ... ─► next(): meta checked, the insert ─► ids
 *   claim ─► (the server's metrics, an observer) ─► mw[0].attempt ─► mw[1].attempt ─► ... ─► next(): the handler ─► outcome
 * ```
 *
 * Faults: a hook that throws (or rejects) at enqueue rejects that enqueue
 * with its error and nothing is written; around an attempt it is that
 * attempt's failure, retried per policy like a handler's throw. A second
 * `next()` from one hook is refused with `MiddlewareMisuseError`
 * (`MIDDLEWARE_MISUSE`). A hook that resolves without calling `next()`
 * skips what is inside it: the enqueue writes nothing (and resolves to what
 * the hook returned), the handler does not run (the attempt succeeds).
 *
 * Results (X6): an attempt hook's `next()` resolves with the handler's
 * resolved value, so a hook can see (log, measure) what the handler
 * returned. The value stored as the job's result is the handler's own, not
 * what the outermost hook resolved to: hooks observe results, they do not
 * replace them, so the common `async (ctx, next) => { await next(); }`,
 * which resolves to nothing, never erases one. A value that cannot be
 * stored fails the attempt with `INVALID_RESULT` whatever the hooks did.
 */
import type { JobId } from "../core/job-id.js";
import type { PartitionRef } from "../backend/backend.js";
import { describeValue, InvalidArgumentError, MiddlewareMisuseError } from "../errors.js";
import type { EnqueueOptions } from "../publisher/enqueue-options.js";

/**
 * A job's metadata (X10): a JSON object the enqueue middleware set, stored
 * with the job (at most {@link MAX_META_BYTES} as JSON) and handed back to
 * the attempt middleware. Tracing keeps `traceparent` and `tracestate` here.
 */
export type JobMeta = Record<string, unknown>;

/** One job of an enqueue, as the enqueue middleware sees it. */
export interface EnqueueJobContext {
  /** The payload as the caller gave it (already checked to encode). */
  readonly payload: unknown;
  /** The partition it goes to; null for a regular job. */
  readonly partition: PartitionRef | null;
  /** This job's metadata: set members here (JSON values); stored when `next()` writes, NULL when left empty. */
  readonly meta: JobMeta;
}

/** What an `enqueue` hook sees: one call of an enqueue method (one job type, one or many jobs). */
export interface EnqueueContext {
  readonly jobType: string;
  /** The jobs of this call, in order (one for `enqueue`, `enqueueIn`, `enqueueToPartition`; many for the `...Many` forms). */
  readonly jobs: readonly EnqueueJobContext[];
  /** The call's options (delay, parent, retry policy, timeout) as given: `parentId` is an array for a fan-in (X5), unfolded. */
  readonly options: Readonly<EnqueueOptions>;
  /** True for `enqueueIn`/`enqueueToPartitionIn`: the jobs commit with the caller's transaction. */
  readonly inTransaction: boolean;
  /**
   * Set for an occurrence of a recurring schedule (R1, R2): the schedule's
   * id. Its first occurrence goes through the publisher's (or server's)
   * middleware at `enqueueRecurring`, every later one through the middleware
   * of the server whose poller enqueues it; `options` then holds its
   * `runAt`. Absent for every other enqueue.
   */
  readonly scheduleId?: string;
}

/** What an `attempt` hook sees: one attempt of one job. */
export interface AttemptContext {
  readonly jobId: JobId;
  readonly jobType: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** The head's partition; null for a regular job. */
  readonly partition: { topic: string; partition: number } | null;
  /** The decoded payload, as the handler gets it (undefined when it does not decode: `next()` then rejects with `PayloadDecodeError`). */
  readonly payload: unknown;
  /** The job's stored metadata ({} when none was stored). */
  readonly meta: Readonly<JobMeta>;
  /** The handler's `ctx.signal`: aborted when the attempt times out, loses its lease or is given up at shutdown. */
  readonly signal: AbortSignal;
}

/**
 * One middleware: either hook may be left out. Each must await `next()`
 * once (or not at all, to skip what it wraps) and return what it resolved
 * to: the ids for `enqueue`; for `attempt`, resolving means success and
 * rejecting the attempt's failure. An attempt's `next()` resolves with the
 * handler's value (X6); what the hook resolves to is not stored (the
 * handler's value is, see above).
 */
export interface LaterMiddleware {
  enqueue?(ctx: EnqueueContext, next: () => Promise<JobId[]>): Promise<JobId[]>;
  attempt?(ctx: AttemptContext, next: () => Promise<unknown>): Promise<unknown>;
}

/** A hook of either kind, as {@link composeHooks} takes it. */
export type Hook<X, R> = (ctx: X, next: () => Promise<R>) => Promise<R>;

/** Most bytes of a job's metadata as JSON: it is context (a trace id, a tenant), not data. */
export const MAX_META_BYTES = 8_192;

/**
 * Checks a `middleware` option: an array of objects whose `enqueue` and
 * `attempt`, when present, are functions. Anything else is
 * `INVALID_ARGUMENT` naming the index. `where`: the option's owner, for the message.
 * Only for the application's lists: the runtime's own observer entries (the
 * server's metrics, `attempt-observer.ts`) are added after this check.
 */
export function checkMiddleware(middleware: unknown, where: string): readonly LaterMiddleware[] {
  if (middleware === undefined || middleware === null) return [];
  if (!Array.isArray(middleware))
    throw new InvalidArgumentError(`${where}: middleware must be an array of { enqueue?, attempt? }, got ${describeValue(middleware)}`);
  middleware.forEach((m: unknown, i) => {
    if (m === null || typeof m !== "object")
      throw new InvalidArgumentError(`${where}: middleware[${i}] must be an object with enqueue and/or attempt functions, got ${describeValue(m)}`);
    for (const key of ["enqueue", "attempt"] as const) {
      const hook = (m as Record<string, unknown>)[key];
      if (hook !== undefined && typeof hook !== "function")
        throw new InvalidArgumentError(`${where}: middleware[${i}].${key} must be a function, got ${describeValue(hook)}`);
    }
    if ((m as LaterMiddleware).enqueue === undefined && (m as LaterMiddleware).attempt === undefined)
      throw new InvalidArgumentError(`${where}: middleware[${i}] has neither an enqueue nor an attempt function`);
  });
  return middleware as LaterMiddleware[];
}

/**
 * Composes `hooks` around `inner`, the first outermost. Null when there are
 * none, so the caller calls `inner` itself (a plain enqueue or attempt pays
 * nothing). Per call, one closure per hook: `next()` of each refuses a
 * second call (`MiddlewareMisuseError`), and a hook that throws
 * synchronously rejects like one that rejects.
 */
export function composeHooks<X, R>(hooks: readonly Hook<X, R>[], inner: (ctx: X) => Promise<R>, kind: "enqueue" | "attempt"): ((ctx: X) => Promise<R>) | null {
  if (hooks.length === 0) return null;
  const call = (ctx: X, i: number): Promise<R> => {
    if (i === hooks.length) return inner(ctx);
    let called = false;
    const next = (): Promise<R> => {
      if (called) return Promise.reject(new MiddlewareMisuseError(`middleware ${i} (${kind}) called next() twice; it runs what it wraps once`));
      called = true;
      return call(ctx, i + 1);
    };
    try {
      return Promise.resolve(hooks[i]!(ctx, next));
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  };
  return (ctx) => call(ctx, 0);
}

/** An enqueue on its way through the middleware: the context they see, and the write the innermost `next()` runs. */
export interface PendingEnqueue extends EnqueueContext {
  readonly write: () => Promise<JobId[]>;
}

/**
 * The enqueue hooks of `middleware` composed around the write each call carries; null without any (see
 * {@link composeHooks}); an entry without `enqueue` (an attempt hook, an observer) is skipped. Per call
 * through them: one context object, one per job (with an empty `meta`) and a closure; per job one key
 * scan of its `meta`, and a JSON.stringify only when set.
 */
export function enqueueChain(middleware: readonly LaterMiddleware[]): ((call: PendingEnqueue) => Promise<JobId[]>) | null {
  return composeHooks<PendingEnqueue, JobId[]>(enqueueHooks(middleware), (call) => call.write(), "enqueue");
}

/**
 * One job's enqueue through `chain` (a recurring occurrence's): the hooks
 * see one job, not in a transaction, and `write` gets the metadata they
 * set as stored text (null when none; `INVALID_ARGUMENT` over 8 KiB or not
 * JSON, before anything is written). Without a chain, `write(null)`.
 */
export function enqueueOneThrough(
  chain: ((call: PendingEnqueue) => Promise<JobId[]>) | null,
  call: Omit<EnqueueContext, "jobs" | "inTransaction"> & Pick<EnqueueJobContext, "payload" | "partition">,
  write: (meta: string | null) => Promise<JobId[]>,
): Promise<JobId[]> {
  if (chain === null) return write(null);
  const { payload, partition, ...rest } = call;
  const job: EnqueueJobContext = { payload, partition, meta: {} };
  return chain({ ...rest, jobs: [job], inTransaction: false, write: () => write(encodeMeta(job.meta, call.jobType)) });
}

/** The enqueue hooks of `middleware`, in order, bound to their objects. */
export function enqueueHooks(middleware: readonly LaterMiddleware[]): Hook<EnqueueContext, JobId[]>[] {
  return middleware.flatMap((m) => (m.enqueue === undefined ? [] : [m.enqueue.bind(m)]));
}

/** The attempt hooks of `middleware`, in order, bound to their objects (observer entries have none: see `attempt-observer.ts`). */
export function attemptHooks(middleware: readonly LaterMiddleware[]): Hook<AttemptContext, unknown>[] {
  return middleware.flatMap((m) => (m.attempt === undefined ? [] : [m.attempt.bind(m)]));
}

/**
 * A job's metadata as stored: JSON text of a non-empty object, or null for
 * an empty one (a plain enqueue stores nothing). Not JSON, not an object,
 * or over {@link MAX_META_BYTES}: `INVALID_ARGUMENT` naming the job type.
 */
export function encodeMeta(meta: JobMeta, jobType: string): string | null {
  if (meta === null || typeof meta !== "object" || Array.isArray(meta))
    throw new InvalidArgumentError(`metadata of a "${jobType}" job must be an object, got ${describeValue(meta)}`);
  let empty = true;
  for (const _ in meta) {
    empty = false;
    break;
  }
  if (empty) return null;
  let text: string;
  try {
    text = JSON.stringify(meta);
  } catch (cause) {
    throw new InvalidArgumentError(`metadata of a "${jobType}" job is not JSON: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_META_BYTES)
    throw new InvalidArgumentError(`metadata of a "${jobType}" job is ${bytes} bytes as JSON, over the ${MAX_META_BYTES} allowed: keep ids there, not data`);
  return text;
}

/** A claimed job's stored metadata as an object ({} for none or for text that is not a JSON object). */
export function decodeMeta(text: string | null | undefined): JobMeta {
  if (text === null || text === undefined) return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as JobMeta) : {};
  } catch {
    return {};
  }
}
