/**
 * The testing kit (docs/semantics.md X11): an application's handlers on a
 * real in-memory SQLite backend and a {@link ManualClock}, run when the test
 * says, one attempt at a time, so every run of a test sees the same order.
 *
 * ```text
 *   createTypedTestJobs(newBuilder, options) ─► sqlite(":memory:") + ManualClock ─► builder + options.handlers
 *        ─► BackgroundJobServer.startManual (no loop runs) ─► TestJobs
 *   kit.jobs.x.enqueue(...)  the same handles as server.jobs
 *   kit.drain()              runDueOnce() until nothing is due; a retry's delay is skipped by advancing the clock
 *   kit.enqueued("x")        the stored jobs of one type, payloads decoded as handlers get them
 *   kit.work("x", payload)   the handler once, with a real ctx, no queue
 * ```
 *
 * The SQLite backend (and so `better-sqlite3`) is loaded only when a kit is
 * created: an application that imports the generated module never loads it.
 * Without the driver, creating a kit rejects with `DRIVER_NOT_INSTALLED`.
 */
import type { LaterMiddleware } from "../middleware/later-middleware.js";
import type { ClaimedJob } from "../backend/backend.js";
import type { RetryPolicy } from "../core/retry/retry-policy.js";
import type { TopicConfig } from "../core/partition/topic.js";
import type { JobStage } from "../core/job-stage.js";
import type { HandlerRegistration } from "../config/handler-registration.js";
import type { ServerEvent } from "../events/server-event.js";
import type { LaterLogger } from "../events/event-sink.js";
import { BackgroundJobServer } from "../server/background-job-server.js";
import type { BuilderOptions, TypedServerBuilder } from "../typed/typed-server-builder.js";
import type { TypedJobServer } from "../typed/typed-job-server.js";
import type { JobHandle } from "../typed/job-handle.js";
import type { TopicJobHandle } from "../typed/topic-job-handle.js";
import { payloadDecoder, payloadValidator, type JobCatalog } from "../typed/job-catalog.js";
import { HeldClaim, JobRunContext } from "../worker/held-claim.js";
import { encodePayload, jsonPayload } from "../core/encode-payload.js";
import { newJobId, type JobId } from "../core/job-id.js";
import { HandlerMissingError, InvalidArgumentError } from "../errors.js";
import { ManualClock } from "./manual-clock.js";
import { drainUntilIdle, type DrainOptions, type DrainResult } from "./drain.js";

/** The payload type of a handle: `JobHandle<P>` or `TopicJobHandle<P>` → `P`. */
export type HandlePayload<T> = T extends JobHandle<infer P, infer _> ? P : T extends TopicJobHandle<infer P, infer _> ? P : never;

/**
 * Options of a kit. `context` (the handlers' `ctx.app`) is required when the
 * builder's `C` cannot be `undefined`, as for the generated builder.
 */
export type TestJobsOptions<C, B> = {
  /**
   * Registers the handlers under test on the generated builder, as in the
   * application: `(b) => b.withSendEmailHandler(sendEmail)`; the compiler
   * checks each against its payload. Unlike `build()`, jobs may be left
   * without a handler: theirs are never run, only stored, for
   * {@link TestJobs.enqueued}. Default: none.
   */
  handlers?: (builder: B) => unknown;
  /** The manual clock's start: a `Date` or epoch ms. Default 2026-01-01T00:00:00Z. */
  now?: Date | number;
  /** The server's default retry policy, as the builder option. Default the library's: 6 retries, exponential from 1 s with jitter (J3). */
  defaultRetryPolicy?: RetryPolicy;
  /** Jitter of the retry delays, as the server option `random`. Default 0.5: no jitter, the same delays every run. */
  random?: () => number;
  /** Topics the schema declares without `@partitions`, as the builder option `topics`. Default: the schema's. */
  topics?: readonly TopicConfig[];
  /** Server events, as the server option. Default none. */
  onEvent?: (event: ServerEvent) => void;
  /** As the server option; default `null`: a test's failing handlers write nothing to stderr. */
  logger?: LaterLogger | null;
  /** As the server option (X10): the enqueue hooks run around the kit's enqueues, the attempt hooks around each attempt `drain()` runs (not `work()`, which calls the handler alone). Default none. */
  middleware?: readonly LaterMiddleware[];
} & (undefined extends C ? { context?: C } : { context: C });

/** One stored job, as {@link TestJobs.enqueued} lists it. */
export interface EnqueuedJob<P> {
  id: JobId;
  /** The payload as its handler gets it (`Date` fields revived, J2). */
  payload: P;
  stage: JobStage;
  /** When it may run (or ran): its delay, retry time or release time. */
  runAt: Date;
  /** Attempts made so far (0 before the first). */
  attempt: number;
  /** The parent of a continuation; null otherwise. */
  parentId: JobId | null;
  /** The last failed attempt's error; null when none failed. */
  lastError: string | null;
}

/** Options of {@link TestJobs.work}. */
export interface WorkOptions {
  /** `ctx.attempt`. Default 1. */
  attempt?: number;
  /** Aborting it aborts `ctx.signal` with its reason, as a lost lease or a timeout would. */
  signal?: AbortSignal;
}

export type { DrainAttempt, DrainOptions, DrainResult } from "./drain.js";

/**
 * A test's jobs: the application's handlers on an in-memory database and a
 * manual clock. Made by the generated `createTestJobs` (or
 * {@link createTypedTestJobs}); `close()` it after the test.
 */
export class TestJobs<C, H> {
  /** The typed handles, the same as `server.jobs`: every enqueue form. */
  readonly jobs: H;
  /** The manual clock every time of the kit follows. */
  readonly clock: ManualClock;
  private readonly types: Map<string, string>;
  private closed: Promise<void> | null = null;

  constructor(
    /** The server underneath (started with no loop): `retry`, `delete`, `jobList` and the other operations of `JobControl`. */
    readonly server: TypedJobServer<C, H>,
    private readonly catalog: JobCatalog,
    private readonly handlers: ReadonlyMap<string, HandlerRegistration<C, unknown>>,
    private readonly context: C,
    clock: ManualClock,
  ) {
    this.jobs = server.jobs;
    this.clock = clock;
    this.types = new Map(Object.entries(catalog).map(([type, spec]) => [spec.handle ?? type, type]));
  }

  /** The manual clock's time. */
  now(): Date {
    return new Date(this.clock.now());
  }

  /** Moves the manual clock `ms` forward: delayed jobs and retries whose time it passes become due for the next {@link drain}. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new InvalidArgumentError(`advance(ms): ms must be a finite number >= 0, got ${ms}`);
    this.clock.advance(ms);
  }

  /**
   * Runs every due job now, one attempt at a time, until none is due, and
   * resolves to what ran. A handler's error never rejects: it is an attempt
   * whose outcome is `retry` or `failed`, as on a server.
   *
   * What is due: jobs whose time the clock has passed, continuations once
   * their parent succeeded (in the same drain), and retries: a failed
   * attempt's retry is run after its delay by advancing the clock to its
   * time (so a job failing twice then succeeding ends `success` after one
   * drain, and `now()` has moved by the two delays). Delayed jobs are NOT
   * waited for: drain does not move the clock for them, unless
   * `advanceDelayed: true`, which advances to each in turn as for retries.
   * Jobs of types without a handler in the kit are never run. Rejects with
   * `DrainLimitError` (`DRAIN_LIMIT`) past `maxAttempts` (default 1000).
   */
  drain(options: DrainOptions = {}): Promise<DrainResult> {
    return drainUntilIdle(this.server.core, this.clock, new Set(this.handlers.keys()), this.handleNames(), options);
  }

  /**
   * The stored jobs of one declared job (by its handle name, as on `jobs`),
   * oldest first, in every stage, finished ones included: what handlers and
   * the test enqueued. Payloads are decoded as their handler gets them.
   */
  async enqueued<K extends keyof H & string>(name: K): Promise<EnqueuedJob<HandlePayload<H[K]>>[]> {
    const type = this.typeOf(name);
    const decode = payloadDecoder(type, this.catalog[type]!);
    const found: EnqueuedJob<HandlePayload<H[K]>>[] = [];
    for (let afterId: JobId | undefined; ; ) {
      const page = await this.server.backend.inspect.jobList({ jobType: type, order: "asc", limit: PAGE, afterId });
      for (const r of page) {
        const payload = decode(r.payload) as HandlePayload<H[K]>;
        found.push({ id: r.id, payload, stage: r.stage, runAt: new Date(r.runAt), attempt: r.attempt, parentId: r.parentId, lastError: r.lastError });
      }
      if (page.length < PAGE) return found;
      afterId = page[page.length - 1]!.id;
    }
  }

  /**
   * Runs the handler of one declared job once, with a real `ctx` (`jobId`,
   * `attempt`, `signal`, `app`, `jobs`, `progress`), without the queue:
   * nothing of this job is stored, and its retry policy is not applied.
   * The payload is checked and goes through JSON and the decoder as a
   * stored one would (`Date` fields come back as `Date`s). Resolves to
   * what the handler resolves to, or rejects with what it throws. What the
   * handler enqueues through `ctx.jobs` is stored: see {@link enqueued}.
   * `ctx.progress` is accepted and not stored. `ctx.jobId` is a fresh id
   * of no stored job, so a continuation of it is refused
   * (`PARENT_NOT_FOUND`): test such a handler with enqueue and
   * {@link drain}. No handler registered for it: `HandlerMissingError`.
   */
  async work<K extends keyof H & string>(name: K, payload: HandlePayload<H[K]>, options: WorkOptions = {}): Promise<unknown> {
    const type = this.typeOf(name);
    const spec = this.catalog[type]!;
    const handler = this.handlers.get(type);
    if (!handler) throw new HandlerMissingError([type], `register it in the kit's handlers (${spec.handlerMethod}) to work() it`);
    payloadValidator(type, spec)(payload);
    const text = encodePayload(handler.encode ?? jsonPayload, type, payload);
    const decoded = handler.decode === undefined ? JSON.parse(text) : handler.decode(text);
    const job: ClaimedJob = {
      id: newJobId(this.clock.now()),
      jobType: type,
      payload: text,
      attempt: options.attempt ?? 1,
      retryPolicy: null,
      runAt: this.clock.now(),
    };
    const claim = new HeldClaim(job, Number.POSITIVE_INFINITY);
    const signal = options.signal;
    const onAbort = () => claim.abort(signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason)));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const ctx = new JobRunContext(this.context, this.server.core.publisher, claim, async () => true);
      return await handler.handle(ctx, decoded);
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Shuts the server down and closes the in-memory database (its jobs are gone). Idempotent. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      await this.server.shutdown({ deadlineMs: 0 });
      await this.server.backend.close();
    })();
    return this.closed;
  }

  private typeOf(name: string): string {
    const type = this.types.get(name);
    if (type === undefined) throw new InvalidArgumentError(`"${name}" is not a declared job; the jobs are ${[...this.types.keys()].join(", ")}`);
    return type;
  }

  private handleNames(): Map<string, string> {
    return new Map([...this.types].map(([name, type]) => [type, name]));
  }
}

/** Rows read per page by {@link TestJobs.enqueued}. */
const PAGE = 500;

/**
 * Makes a kit over a generated builder: what the generated module's
 * `createTestJobs(options)` calls with `(o) => new JobsBuilder(o)`. The
 * builder gets an in-memory SQLite backend (migrated), the manual clock
 * (`timeSource: "local"`), the options above and `options.handlers`; the
 * server is started with no loop ({@link BackgroundJobServer.startManual}).
 */
export async function createTypedTestJobs<C, H, B extends TypedServerBuilder<C, H>>(
  newBuilder: (options: BuilderOptions<C>) => B,
  options: TestJobsOptions<C, B>,
): Promise<TestJobs<C, H>> {
  if (options === null || typeof options !== "object") throw new InvalidArgumentError("createTestJobs(options): options must be an object");
  const { handlers, now, defaultRetryPolicy, random, onEvent, logger, topics, middleware } = options;
  if (handlers !== undefined && typeof handlers !== "function")
    throw new InvalidArgumentError("createTestJobs: `handlers` must be a function (b) => b.with...Handler(...)");
  const start = now instanceof Date ? now.getTime() : now;
  if (start !== undefined && !Number.isFinite(start)) throw new InvalidArgumentError("createTestJobs: `now` must be a valid Date or epoch ms");
  const clock = new ManualClock(start);
  // Loaded here, not at import: the generated module imports this entry, and an application on PostgreSQL has no better-sqlite3.
  const { sqlite } = await import("../backend/sqlite/sqlite-backend.js");
  const backend = sqlite({ file: ":memory:" });
  const context = (options as { context?: C }).context as C;
  const builder = newBuilder({
    backend: backend as never,
    context,
    autoMigrate: true,
    clock,
    random: random ?? (() => 0.5),
    logger: logger === undefined ? null : logger,
    ...(defaultRetryPolicy === undefined ? {} : { defaultRetryPolicy }),
    ...(onEvent === undefined ? {} : { onEvent }),
    ...(topics === undefined ? {} : { topics }),
    ...(middleware === undefined ? {} : { middleware }),
  } as BuilderOptions<C>);
  handlers?.(builder);
  try {
    const { server, catalog, handlers: registered } = await builder.startForTests((o, runTypes) => BackgroundJobServer.startManual(o, runTypes));
    return new TestJobs(server as unknown as TypedJobServer<C, H>, catalog, registered as ReadonlyMap<string, HandlerRegistration<C, unknown>>, context, clock);
  } catch (error) {
    await backend.close();
    throw error;
  }
}
