import { checkLogger, eventSink, type LaterLogger } from "../events/event-sink.js";
import type { Backend, TransactionHandle } from "../backend/backend.js";
import { systemClock, type Clock, type RandomSource } from "../core/clock.js";
import { checkPartitions, RECURRING_SEQUENTIAL_TOPIC, type TopicConfig } from "../core/partition/topic.js";
import { RetryPolicy } from "../core/retry/retry-policy.js";
import { InvalidConfigError, describeValue } from "../errors.js";
import { describeName, nameProblem } from "../core/stored-name.js";
import type { Registry } from "prom-client";
import { resolveMetricsOptions } from "../metrics/later-metrics.js";
import { checkMiddleware, type LaterMiddleware } from "../middleware/later-middleware.js";
import { logTopicsByName, type LogTopicConfig } from "../retained-log/log-topic.js";
import type { ServerEvent } from "../events/server-event.js";
import { MAX_RETENTION_MS } from "../core/job-retention.js";
import { checkHandlerRegistration, type HandlerRegistration } from "./handler-registration.js";

/**
 * Upper bounds of the numeric options. Times are waited with `setTimeout`,
 * which fires at once (with a warning) past 2^31 − 1 ms, about 24.8 days;
 * workers are slots allocated up front. Past these a value is a mistake, and
 * taking it would spin a loop or exhaust memory.
 */
export const MAX_TIMER_MS = 2_147_483_647;
export const MAX_WORKERS = 10_000;
/** Bounds for `workerAutoscale`. */
export interface WorkerAutoscaleOptions {
  min: number;
  max: number;
}

/**
 * Options of {@link BackgroundJobServer.start}. Every duration is in
 * milliseconds. `Trx` is inferred from `backend`: the caller-owned
 * transactions its `enqueueIn` takes (`SqliteTransaction`,
 * `PostgresTransaction`); given `C` explicitly, it defaults to
 * {@link TransactionHandle}, either kind.
 */
export interface ServerOptions<C, Trx = TransactionHandle> {
  /** Handed to every handler as `ctx.app`. */
  context: C;
  /** `sqlite({ file })` or `postgres({ connectionString })` (`@later/runtime/sqlite`, `/postgres`). */
  backend: Backend<Trx>;
  /** Handler per job type. */
  handlers: Record<string, HandlerRegistration<C, Trx>>;
  /** Concurrent handlers in this process. Default 6, at least 1. */
  workerCount?: number;
  /** Optional: every `autoscaleIntervalMs`, +1 worker when the backlog (ready jobs in the database plus claimed jobs waiting in this server's buffer) exceeds ~20 per worker, -1 after three empty ticks. */
  workerAutoscale?: WorkerAutoscaleOptions;
  /**
   * The policy of jobs this server runs that were enqueued without an
   * explicit one and whose type has no `retry` option, whichever process
   * enqueued them. Default: 6 retries, exponential backoff with jitter ({@link RetryPolicy.default}).
   */
  defaultRetryPolicy?: RetryPolicy;
  /** How often idle workers look for work when no wake-up arrives. Default 1000. */
  pollIntervalMs?: number;
  /**
   * Execution lease length; renewed every third of it while a handler runs.
   * Default 30000. A server cut off from the database cannot renew: keep it
   * above the outages to ride out (about 1.5 times the longest), or a job
   * finished during one may be taken over and run again once the database is
   * back (a partition head once its lease has expired; a regular job once it
   * has been expired for `stuckGraceMs` as well).
   */
  leaseMs?: number;
  /** A running job is rescued once its lease has been expired this long. Default `leaseMs`. */
  stuckGraceMs?: number;
  /** How often the stuck-job sweep runs (one server per interval). Default 15000. */
  rescueIntervalMs?: number;
  /** How long terminal jobs are kept, where a handler's `retention` sets none for the job's type and stage (J11). Default one day. */
  retentionMs?: number;
  /** How often expired rows are deleted. Default 60000. */
  sweepIntervalMs?: number;
  /** Rows deleted per statement by the sweep. Default 500. */
  sweepBatchSize?: number;
  /** Run `VACUUM` at most this often (SQLite only). Default: never. */
  vacuumIntervalMs?: number | null;
  /** A handler running longer fails its attempt (retried per policy) and its worker is replaced. Default 15 min; null disables. */
  jobTimeoutMs?: number | null;
  /** Autoscale tick. Default 15000. */
  autoscaleIntervalMs?: number;
  /** Migrate the database at start instead of refusing a schema that is behind. Default false. */
  autoMigrate?: boolean;
  /**
   * How long `start()` waits for a database it cannot reach (connection
   * refused, reset or cut, the server starting up or shutting down: a
   * deploy that starts workers before the database, a restart). Meanwhile it
   * tries again every 0.25 s, doubling up to 5 s, and reports each failure
   * as an `error` event (`where: "start"`, code `DATABASE_UNAVAILABLE`);
   * once this has passed it rejects with that `DatabaseUnavailableError`.
   * 0 rejects at the first failure; null waits as long as it takes. Other
   * failures (a bad password, a missing database, a schema behind or ahead)
   * reject at once. Default 60000.
   */
  databaseWaitMs?: number | null;
  /** Injected time. Default the wall clock. */
  clock?: Clock;
  /**
   * Whose clock leases, delays, retries, partition ownership and schedules
   * follow. `"database"`: the database server's (PostgreSQL), through an
   * offset to it measured at start and every `clockSyncIntervalMs`
   * (`DatabaseClock`), so servers on hosts whose clocks disagree still agree
   * on every time they compare; on SQLite, whose processes all run on one
   * machine's clock, it is that clock. `"local"`: `clock` as it is, e.g. a
   * manual clock in tests. Default `"database"`, or `"local"` when a `clock`
   * is given.
   */
  timeSource?: "database" | "local";
  /** How often the offset to the database's clock is measured again. Default 30000. */
  clockSyncIntervalMs?: number;
  /** Injected randomness for retry jitter. Default `Math.random`. */
  random?: RandomSource;
  /** Local events; exceptions thrown by the listener are ignored. */
  onEvent?: (event: ServerEvent) => void;
  /**
   * Where the server logs: any object with `debug`, `info`, `warn` and
   * `error` methods called as `(fields, message)` (pino, or `console`).
   * Start and stop at info, errors with their `code` at error, rescues,
   * released claims and unreachable-database retries at warn, per-job stage
   * changes at debug only (see `event-sink.ts`). Default: with no `onEvent`
   * either, each warning and error cause is written once to stderr
   * (`later: warn DATABASE_UNAVAILABLE (start): …`); `null` silences that.
   */
  logger?: LaterLogger | null;
  /**
   * Middleware (docs/semantics.md X10): objects with an `enqueue` hook, run
   * around every enqueue of this server's publisher, and/or an `attempt`
   * hook, run around every attempt of its workers, composed in array order
   * (the first is the outermost). `tracing()` from `@later/runtime/otel` is
   * one. Not an array of such objects: `INVALID_ARGUMENT` naming the index.
   * Default none.
   */
  middleware?: readonly LaterMiddleware[];
  /**
   * Prometheus metrics (docs/semantics.md M1–M3; the table in `metrics/later-metrics.ts`
   * and the README): `server.metrics()` resolves to their text. On by
   * default: recording costs a worker a few cell increments per job; false
   * records nothing and `metrics()` resolves to an empty string.
   */
  metrics?: boolean;
  /**
   * A prom-client `Registry` of the application to register the metrics
   * in (one set per registry, shared by every server given it), so one
   * `/metrics` route serves them beside the application's own. Default: a
   * registry of this server's own. Refused with `metrics: false`. The
   * runtime's metrics are prom-client 14's; a prom-client 15 `Registry`
   * renders them as its own, in both of its formats.
   */
  metricsRegistry?: Registry;
  /**
   * Topics for partitioned jobs: `[topic("orders", 8)]`. Jobs of one
   * partition run one at a time in enqueue order. A server with topics
   * heartbeats and takes part in partition ownership. Default none.
   */
  topics?: readonly TopicConfig[];
  /** Partitions of the reserved topic that `enqueueRecurringSequential` uses; without it that call is refused. Default none. */
  recurringSequentialPartitions?: number | null;
  /**
   * A server with topics that has not heartbeat for this long is dead: its
   * partitions move to the live servers. Heartbeats go every third of it.
   * Default 15000.
   */
  partitionMemberExpiryMs?: number;
  /**
   * Most partitioned jobs one partition runs per database write (P3): a head
   * is claimed with up to `partitionRunMax - 1` consecutive ready jobs behind
   * it (its run), which run one after another under the head's partition
   * lease, and their outcomes are written together with the next run's
   * claim. A failure ends the run (the failed job keeps its place, the rest
   * are claimed again), and so do 100 ms of running (`PARTITION_RUN_MAX_MS`):
   * a run's outcomes are written at least that often, however slow its jobs,
   * and a process that dies redoes at most that much of its work (P3). `1`
   * claims and writes every job on its own. Default 128: a run's write costs
   * the database about as much for 128 fast jobs as for 32 (PostgreSQL ordered
   * processing 30,695 against 18,939 jobs/s in `bench/partitions.js`).
   */
  partitionRunMax?: number;
  /**
   * How often this server's poller looks for due recurring occurrences
   * (every server polls; each occurrence is enqueued once). An occurrence
   * starts at most about this long after its time. Default 1000.
   */
  recurringPollIntervalMs?: number;
  /**
   * Retained-log topics of this server (`[logTopic("events", 8)]`),
   * registered at start as `RetainedLog.open` registers its own (a stored
   * topic with another partition count refuses the start): `server.log` is
   * a log over them, and `server.logLag()` reports their consumer groups'
   * lag (the `later_retained_log_consumer_lag` gauge). Default none.
   */
  logTopics?: readonly LogTopicConfig[];
}

/** Options with every default filled in. The server's parts never write into a caller's transaction, so they take any kind (`unknown`). */
export interface ResolvedServerOptions<C>
  extends Required<
    Omit<ServerOptions<C, unknown>, "workerAutoscale" | "onEvent" | "logger" | "topics" | "recurringSequentialPartitions" | "logTopics" | "metricsRegistry">
  > {
  logTopics: ReadonlyMap<string, LogTopicConfig>;
  /** The registry the metrics are in (the given one, or one of the server's own); null with `metrics: false`. */
  metricsRegistry: Registry | null;
  /** The configured topics, plus the reserved recurring topic when `recurringSequentialPartitions` is set. */
  topics: readonly TopicConfig[];
  recurringSequentialPartitions: number | null;
  workerAutoscale: WorkerAutoscaleOptions | null;
  onEvent: (event: ServerEvent) => void;
  /** False when neither `onEvent` nor a logger with debug on was given, so hot paths skip building events. */
  eventsEnabled: boolean;
  vacuumIntervalMs: number | null;
  jobTimeoutMs: number | null;
}

const KEYS = new Set([
  "context",
  "backend",
  "handlers",
  "workerCount",
  "workerAutoscale",
  "defaultRetryPolicy",
  "pollIntervalMs",
  "leaseMs",
  "stuckGraceMs",
  "rescueIntervalMs",
  "retentionMs",
  "sweepIntervalMs",
  "sweepBatchSize",
  "vacuumIntervalMs",
  "jobTimeoutMs",
  "autoscaleIntervalMs",
  "autoMigrate",
  "databaseWaitMs",
  "clock",
  "timeSource",
  "clockSyncIntervalMs",
  "random",
  "onEvent",
  "logger",
  "topics",
  "recurringSequentialPartitions",
  "partitionMemberExpiryMs",
  "partitionRunMax",
  "recurringPollIntervalMs",
  "logTopics",
  "metrics",
  "metricsRegistry",
  "middleware",
]);

/** Checks every option and fills defaults; throws `InvalidConfigError` naming the bad option. */
export function resolveServerOptions<C, Trx>(options: ServerOptions<C, Trx>): ResolvedServerOptions<C> {
  if (options === null || typeof options !== "object") throw new InvalidConfigError("server options must be an object");
  for (const key of Object.keys(options)) {
    if (!KEYS.has(key)) throw new InvalidConfigError(`unknown option "${key}"`);
  }
  const b = options.backend as Partial<Backend> | undefined;
  if (!b || typeof b.jobs?.claimReady !== "function") throw new InvalidConfigError("`backend` is required: sqlite({ file }) or postgres({ ... })");
  if (!options.handlers || typeof options.handlers !== "object") throw new InvalidConfigError("`handlers` must be an object of job type -> handler");
  for (const [type, h] of Object.entries(options.handlers)) {
    const bad = nameProblem(type);
    if (bad !== null) throw new InvalidConfigError(`handlers: job type ${describeName(type)} ${bad}`);
    if (!h || typeof h.handle !== "function") throw new InvalidConfigError(`handler for "${type}" must have a handle function`);
    checkHandlerRegistration(type, h);
  }
  const int = (name: keyof ServerOptions<C, Trx>, fallback: number, min: number, max = MAX_TIMER_MS): number => {
    const v = options[name] ?? fallback;
    if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
      throw new InvalidConfigError(`\`${String(name)}\` must be an integer from ${min} to ${max}, got ${describeValue(v)}`);
    }
    return v;
  };
  const nullableInt = (name: "vacuumIntervalMs" | "jobTimeoutMs", fallback: number | null): number | null => {
    const v = options[name] === undefined ? fallback : options[name];
    if (v === null) return null;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > MAX_TIMER_MS) {
      throw new InvalidConfigError(`\`${name}\` must be an integer from 1 to ${MAX_TIMER_MS} or null, got ${describeValue(v)}`);
    }
    return v;
  };
  const leaseMs = int("leaseMs", 30_000, 30);
  const auto = options.workerAutoscale ?? null;
  if (auto !== null) {
    if (
      typeof auto !== "object" ||
      !Number.isInteger(auto.min) ||
      !Number.isInteger(auto.max) ||
      auto.min < 1 ||
      auto.max < auto.min ||
      auto.max > MAX_WORKERS
    ) {
      throw new InvalidConfigError(`\`workerAutoscale\` must be { min, max } with 1 <= min <= max <= ${MAX_WORKERS}`);
    }
  }
  if (options.defaultRetryPolicy !== undefined && !(options.defaultRetryPolicy instanceof RetryPolicy)) {
    throw new InvalidConfigError("`defaultRetryPolicy` must be a RetryPolicy (RetryPolicy.fixed / exponential / noRetries)");
  }
  if (options.clock !== undefined && (options.clock === null || typeof (options.clock as Partial<Clock>).now !== "function")) {
    throw new InvalidConfigError("`clock` must be a Clock: an object with a now() method returning epoch milliseconds");
  }
  if (options.random !== undefined && typeof options.random !== "function")
    throw new InvalidConfigError("`random` must be a function returning a number in [0, 1)");
  const databaseWaitMs = options.databaseWaitMs === undefined ? 60_000 : options.databaseWaitMs;
  if (databaseWaitMs !== null && (typeof databaseWaitMs !== "number" || !Number.isInteger(databaseWaitMs) || databaseWaitMs < 0)) {
    throw new InvalidConfigError(`\`databaseWaitMs\` must be an integer >= 0 or null, got ${describeValue(databaseWaitMs)}`);
  }
  const onEvent = options.onEvent;
  if (onEvent !== undefined && typeof onEvent !== "function") throw new InvalidConfigError("`onEvent` must be a function");
  const sink = eventSink(onEvent, checkLogger(options.logger, "server options"));
  return {
    ...resolveMetricsOptions(options.metrics, options.metricsRegistry),
    topics: resolveTopics(options.topics, options.recurringSequentialPartitions),
    recurringSequentialPartitions: options.recurringSequentialPartitions ?? null,
    logTopics: logTopicsByName("`logTopics`", options.logTopics ?? []),
    partitionMemberExpiryMs: int("partitionMemberExpiryMs", 15_000, 30),
    partitionRunMax: int("partitionRunMax", 128, 1, 10_000),
    recurringPollIntervalMs: int("recurringPollIntervalMs", 1_000, 1),
    context: options.context,
    backend: options.backend,
    handlers: options.handlers,
    workerCount: int("workerCount", 6, 1, MAX_WORKERS),
    workerAutoscale: auto,
    defaultRetryPolicy: options.defaultRetryPolicy ?? RetryPolicy.default(),
    pollIntervalMs: int("pollIntervalMs", 1_000, 1),
    leaseMs,
    stuckGraceMs: int("stuckGraceMs", leaseMs, 0),
    rescueIntervalMs: int("rescueIntervalMs", 15_000, 1),
    retentionMs: int("retentionMs", 86_400_000, 0, MAX_RETENTION_MS),
    sweepIntervalMs: int("sweepIntervalMs", 60_000, 1),
    sweepBatchSize: int("sweepBatchSize", 500, 1, 100_000),
    vacuumIntervalMs: nullableInt("vacuumIntervalMs", null),
    jobTimeoutMs: nullableInt("jobTimeoutMs", 15 * 60_000),
    autoscaleIntervalMs: int("autoscaleIntervalMs", 15_000, 1),
    autoMigrate: options.autoMigrate ?? false,
    databaseWaitMs,
    clock: options.clock ?? systemClock,
    timeSource: checkTimeSource(options.timeSource, options.clock),
    clockSyncIntervalMs: int("clockSyncIntervalMs", 30_000, 1),
    random: options.random ?? Math.random,
    eventsEnabled: sink.eventsEnabled,
    onEvent: sink.emit,
    middleware: checkMiddleware(options.middleware, "server options"),
  };
}

/** Validates `topics` (each from `topic()`, names unique) and appends the reserved recurring topic when asked for. */
export function resolveTopics(topics: readonly TopicConfig[] | undefined, recurringSequentialPartitions: number | null | undefined): TopicConfig[] {
  if (topics !== undefined && !Array.isArray(topics)) throw new InvalidConfigError("`topics` must be an array of topic(name, partitions)");
  const resolved: TopicConfig[] = [];
  const names = new Set<string>();
  for (const t of topics ?? []) {
    if (t === null || typeof t !== "object" || typeof t.name !== "string" || t.name === "")
      throw new InvalidConfigError("each of `topics` must be topic(name, partitions)");
    if (t.name.startsWith("__later")) throw new InvalidConfigError(`topic name "${t.name}" is reserved`);
    if (names.has(t.name)) throw new InvalidConfigError(`topic "${t.name}" is listed twice in \`topics\``);
    names.add(t.name);
    resolved.push({ name: t.name, partitions: checkPartitions(`topic "${t.name}"`, t.partitions) });
  }
  if (recurringSequentialPartitions !== undefined && recurringSequentialPartitions !== null) {
    resolved.push({ name: RECURRING_SEQUENTIAL_TOPIC, partitions: checkPartitions("`recurringSequentialPartitions`", recurringSequentialPartitions) });
  }
  return resolved;
}

/** The `timeSource` option, checked, with its default: the database's clock unless a `clock` was injected. */
export function checkTimeSource(timeSource: unknown, clock: unknown): "database" | "local" {
  if (timeSource === undefined) return clock === undefined ? "database" : "local";
  if (timeSource !== "database" && timeSource !== "local")
    throw new InvalidConfigError(`\`timeSource\` must be "database" or "local", got ${describeValue(timeSource)}`);
  return timeSource;
}
