import type { TransactionHandle } from "../backend/backend.js";
import type { JobRetention } from "../core/job-retention.js";
import type { RetryPolicy } from "../core/retry/retry-policy.js";
import { HandlerMissingError, InvalidArgumentError, InvalidConfigError } from "../errors.js";
import { BackgroundJobServer } from "../server/background-job-server.js";
import { timeoutProblem } from "../publisher/enqueue-options.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import type { HandlerRegistration } from "../config/handler-registration.js";
import type { ServerOptions } from "../config/server-options.js";
import { payloadDecoder, type JobCatalog } from "./job-catalog.js";
import { JobHandle } from "./job-handle.js";
import { TopicJobHandle } from "./topic-job-handle.js";
import { TypedJobServer, type TypedJobContext } from "./typed-job-server.js";
import type { PauseTarget } from "../publisher/pause-controller.js";
import { checkHandledTopics, withSchemaTopics } from "./schema-topics.js";

/**
 * Options of a generated builder: every server option but `handlers`, which
 * the `with...Handler` methods give. `Trx` is inferred from `backend`.
 * `context` (handed to every handler as `ctx.app`) may be left out when the
 * handlers need none: `C` is then `unknown` and a handler that reads
 * `ctx.app` does not compile; with an explicit `C` that cannot be
 * `undefined` it is required. `topics` adds to the topics the schema
 * declares with `@partitions`, which are registered without it.
 */
export type BuilderOptions<C, Trx = TransactionHandle> = Omit<ServerOptions<C, Trx>, "handlers" | "context"> &
  (undefined extends C ? { context?: C } : { context: C });

/** A typed handler: resolve = success (with `R`, the schema's `Results` entry of the job, as its result, X6; `unknown` without one), throw = retry per policy. */
export type JobHandler<Ctx, P, R = unknown> = (ctx: Ctx, payload: P) => R | Promise<R>;

/** Per-job-type settings given next to its handler. Any other key is refused (`INVALID_CONFIG` naming it), so a misspelt option is not silently ignored. */
export interface HandlerOptions<C> {
  /** This job type's retry policy on this server: wins over the server default, not over a policy given explicitly at enqueue. */
  retry?: (app: C) => RetryPolicy;
  /**
   * This job type's attempt timeout in ms (as River's `Timeout()`): past it,
   * `ctx.signal` aborts with a `JobTimeoutError` (`JOB_TIMEOUT`) and the
   * attempt fails, retried per policy. Wins over the server's
   * `jobTimeoutMs`, not over a job's own `timeoutMs` given at enqueue. null:
   * no timeout for this type. Default: the server's `jobTimeoutMs`.
   */
  timeoutMs?: number | null;
  /**
   * How long this type's finished jobs are kept, per stage (J11): `{ successMs?, failedMs?, cancelledMs? }`,
   * integers of ms from 0; each field given wins over the schema's `@retainSuccess` / `@retainFailed` /
   * `@retainCancelled` tag, and either over the server's `retentionMs`. `successMs: 0` deletes a success's
   * row in the statement that records it (history and result lost). A bad value is `INVALID_ARGUMENT`
   * naming the job type and field.
   */
  retention?: JobRetention;
  /**
   * X9: at most this many jobs of this type running at once across every
   * server of the namespace (see `HandlerRegistration.concurrency`). Wins
   * over the schema's `@concurrency`; null: no limit even when the schema
   * declares one. Default: the schema's, else none.
   */
  concurrency?: number | null;
  /**
   * X9: at most `max` starts in any window of `perMs` ms across every server
   * of the namespace (see `HandlerRegistration.rateLimit`). Wins over the
   * schema's `@rateLimit`; null: none even when the schema declares one.
   * Default: the schema's, else none.
   */
  rateLimit?: { max: number; perMs: number } | null;
  /**
   * X9: at most this many jobs of this type running at once per group
   * (`EnqueueOptions.group`, or the schema's `@group` field) across every
   * server of the namespace (see `HandlerRegistration.groupConcurrency`).
   * Wins over the schema's `@groupConcurrency`; null: none even when the
   * schema declares one. Default: the schema's, else none.
   */
  groupConcurrency?: number | null;
}

/** Every key {@link HandlerOptions} has. */
export const HANDLER_OPTION_KEYS: readonly (keyof HandlerOptions<unknown>)[] = [
  "retry",
  "timeoutMs",
  "retention",
  "concurrency",
  "rateLimit",
  "groupConcurrency",
];

/**
 * The base of every generated `<Name>Builder`: the generated subclass adds
 * one typed `with<Job>Handler` method per declared job, each calling
 * {@link handler}. `build()` refuses to start until every declared job has a
 * handler, naming each missing `with...Handler` method.
 */
/** `P`: what the built server's `pause` and `resume` take (the generated module's `<I>PauseTarget`). */
export class TypedServerBuilder<C, H, Trx = TransactionHandle, P extends PauseTarget = PauseTarget> {
  private readonly handlers = new Map<string, HandlerRegistration<C, Trx>>();
  private jobs: H | undefined;

  constructor(
    private readonly options: BuilderOptions<C, Trx>,
    private readonly catalog: JobCatalog,
  ) {
    if (options === null || typeof options !== "object") throw new InvalidConfigError("builder options must be an object");
    if ("handlers" in options) throw new InvalidConfigError("`handlers` is not a builder option: register each with its with...Handler method");
  }

  /** Registers `jobType`'s handler; called by the generated `with...Handler` methods. A second call replaces the first. */
  protected handler(jobType: string, handle: JobHandler<TypedJobContext<C, H, Trx>, never>, options: HandlerOptions<C> = {}): this {
    const spec = this.catalog[jobType];
    if (!spec) throw new InvalidArgumentError(`"${jobType}" is not a declared job`);
    if (typeof handle !== "function") throw new InvalidConfigError(`${spec.handlerMethod}: the handler must be a function`);
    if (options === null || typeof options !== "object") throw new InvalidConfigError(`${spec.handlerMethod}: options must be an object`);
    for (const key of Object.keys(options)) {
      if (!(HANDLER_OPTION_KEYS as readonly string[]).includes(key)) {
        throw new InvalidConfigError(`${spec.handlerMethod}: unknown option "${key}"; the options are ${HANDLER_OPTION_KEYS.join(", ")}`);
      }
    }
    const problem = options.timeoutMs === undefined || options.timeoutMs === null ? null : timeoutProblem(options.timeoutMs);
    if (problem !== null) throw new InvalidConfigError(`${spec.handlerMethod}: timeoutMs ${problem} (or null for none)`);
    // Checked at start, with the server's options (`INVALID_ARGUMENT` naming the type and field): a value that is not an object is passed on as given.
    const own: unknown = options.retention;
    const retention = own !== null && typeof own === "object" ? { ...spec.retention, ...definedFields(own as JobRetention) } : (own ?? spec.retention);
    const run = handle as (ctx: TypedJobContext<C, H, Trx>, payload: unknown) => unknown;
    this.handlers.set(jobType, {
      handle: (ctx, payload) => {
        // One extra property on the context the worker already built: cheaper than a wrapper object per job.
        (ctx as { jobs?: H }).jobs = this.jobsOf(ctx.publisher);
        return run(ctx as TypedJobContext<C, H, Trx>, payload);
      },
      decode: payloadDecoder(jobType, spec),
      ...(options.retry === undefined ? {} : { retry: options.retry }),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(retention === undefined ? {} : { retention: retention as JobRetention }),
      // X9: checked with the other handler options when the server starts (INVALID_CONFIG naming the type and field).
      ...limitOption("concurrency", options.concurrency, spec.concurrency),
      ...limitOption("rateLimit", options.rateLimit, spec.rateLimit),
      ...limitOption("groupConcurrency", options.groupConcurrency, spec.groupConcurrency),
    });
    return this;
  }

  /**
   * Starts the server once every declared job has a handler; else throws
   * `HandlerMissingError` naming them all. The schema's topics are
   * registered (see {@link withSchemaTopics}: a `topics` option that
   * disagrees is `PARTITION_COUNT_MISMATCH`), and a topic job whose topic
   * ends up unregistered is `INVALID_CONFIG`, before anything starts.
   */
  async build(): Promise<TypedJobServer<C, H, Trx, P>> {
    const missing = Object.keys(this.catalog).filter((type) => !this.handlers.has(type));
    if (missing.length > 0) {
      const methods = missing.map((type) => this.catalog[type]!.handlerMethod);
      throw new HandlerMissingError(missing, `call ${methods.join(", ")} before build()`);
    }
    return (await this.startForTests((options) => BackgroundJobServer.start(options))).server;
  }

  /**
   * @internal `build()` without its check that every job has a handler, through `start`: the testing
   * kit (X11) passes `BackgroundJobServer.startManual`, told to run only the types a test registered
   * (`runTypes`). The others get a registration that refuses to run, so they can still be enqueued
   * (the publisher knows a type by its registration) and stay queued, for `enqueued()`. Also returns
   * the catalog and the registrations made, which the kit's `work()` runs directly.
   */
  async startForTests(start: (options: ServerOptions<C, Trx>, runTypes: readonly string[]) => Promise<BackgroundJobServer<C, Trx>>): Promise<{
    server: TypedJobServer<C, H, Trx, P>;
    catalog: JobCatalog;
    handlers: ReadonlyMap<string, HandlerRegistration<C, Trx>>;
  }> {
    const topics = withSchemaTopics(this.catalog, this.options.topics);
    checkHandledTopics(this.catalog, this.handlers.keys(), topics);
    const handlers: Record<string, HandlerRegistration<C, Trx>> = {};
    for (const [type, spec] of Object.entries(this.catalog)) {
      handlers[type] = this.handlers.get(type) ?? {
        handle: () => {
          throw new HandlerMissingError([type], `call ${spec.handlerMethod} first`);
        },
      };
    }
    const core = await start({ ...this.options, context: this.options.context as C, ...(topics === undefined ? {} : { topics }), handlers }, [
      ...this.handlers.keys(),
    ]);
    return { server: new TypedJobServer<C, H, Trx, P>(core, this.jobsOf(core.publisher)), catalog: this.catalog, handlers: this.handlers };
  }

  /** The handles over the server's one publisher (also reached from a handler, which may run before `build()` resolves). */
  private jobsOf(publisher: JobPublisher<unknown>): H {
    return (this.jobs ??= jobHandles<H>(this.catalog, publisher));
  }
}

/** One handle per declared job; topic jobs get a {@link TopicJobHandle}. */
export function jobHandles<H>(catalog: JobCatalog, publisher: JobPublisher<unknown>): H {
  const handles: Record<string, JobHandle<unknown, unknown> | TopicJobHandle<unknown, unknown>> = {};
  for (const [type, spec] of Object.entries(catalog)) {
    handles[spec.handle ?? type] = spec.topic === undefined ? new JobHandle(publisher, type, spec) : new TopicJobHandle(publisher, type, spec);
  }
  return Object.freeze(handles) as H;
}

/** A limit option of a registration: the handler's own (null included) when given, else the schema's, else none. */
function limitOption<K extends "concurrency" | "rateLimit" | "groupConcurrency">(
  key: K,
  own: HandlerOptions<unknown>[K],
  schema: HandlerOptions<unknown>[K],
): Pick<HandlerOptions<unknown>, K> {
  const value = own !== undefined ? own : schema;
  return (value === undefined ? {} : { [key]: value }) as Pick<HandlerOptions<unknown>, K>;
}

/** The fields of `retention` that are set (an `undefined` field given does not hide the schema's tag). */
function definedFields(retention: JobRetention | undefined): JobRetention {
  return Object.fromEntries(Object.entries(retention ?? {}).filter(([, v]) => v !== undefined));
}
