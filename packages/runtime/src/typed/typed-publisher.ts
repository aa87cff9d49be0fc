import type { Backend, TransactionHandle } from "../backend/backend.js";
import { systemClock, unrefClock, type Clock } from "../core/clock.js";
import { RetryPolicy } from "../core/retry/retry-policy.js";
import type { DatabaseClock } from "../core/database-clock.js";
import { describeValue, InvalidConfigError } from "../errors.js";
import { ClockSync } from "../maintenance/clock-sync.js";
import { checkLogger, eventSink, type EventSink, type LaterLogger } from "../events/event-sink.js";
import { acquireBackend, followDatabaseClock, releaseBackend } from "../backend/backend-preparation.js";
import { JobPublisher } from "../publisher/job-publisher.js";
import { checkTimeSource, MAX_TIMER_MS, resolveTopics } from "../config/server-options.js";
import type { TopicConfig } from "../core/partition/topic.js";
import type { JobCatalog } from "./job-catalog.js";
import { JobControl } from "./job-control.js";
import type { PauseTarget } from "../publisher/pause-controller.js";
import { PublisherUnhandledCheck } from "./publisher-unhandled-check.js";
import { jobHandles } from "./typed-server-builder.js";
import { jsonPayload } from "../core/encode-payload.js";
import { cancelledMsByType } from "../core/job-retention.js";
import { withSchemaTopics } from "./schema-topics.js";
import { checkMiddleware, type LaterMiddleware } from "../middleware/later-middleware.js";

/** Options of a generated `open<Name>Publisher`. `Trx` is inferred from `backend` (see `ServerOptions`). */
export interface PublisherOptions<Trx = TransactionHandle> {
  /** `sqlite({ file })` or `postgres({ connectionString })` (`@later/runtime/sqlite`, `/postgres`). */
  backend: Backend<Trx>;
  /**
   * When given, stored on each job this publisher enqueues, so it wins over
   * the policy of the server that runs the job. Default: none stored, so
   * each job follows the running server's policy (its job type's `retry`
   * option, else its `defaultRetryPolicy`).
   */
  defaultRetryPolicy?: RetryPolicy;
  /** Migrate the database at open instead of refusing a schema that is behind. Default false. */
  autoMigrate?: boolean;
  /** Injected time. Default the wall clock. */
  clock?: Clock;
  /** As the servers' option: delays are measured on the database's clock by default (`"local"` when a `clock` is given). */
  timeSource?: "database" | "local";
  /** As the servers' option. Default 30000. */
  clockSyncIntervalMs?: number;
  /**
   * As the servers' option: opening and closing at info, errors (a failed
   * clock sync) with their code at error. Default: warnings and errors once
   * each to stderr; `null` silences them.
   */
  logger?: LaterLogger | null;
  /**
   * The topics to enqueue partitioned jobs to, besides those the schema
   * declares with `@partitions` (registered without this option; a count
   * here that disagrees is `PARTITION_COUNT_MISMATCH`).
   */
  topics?: readonly TopicConfig[];
  /** As the servers' option, for `enqueueRecurringSequential`. */
  recurringSequentialPartitions?: number | null;
  /** As the servers' option (X10): only the `enqueue` hooks run here (a publisher runs no attempts). Default none. */
  middleware?: readonly LaterMiddleware[];
}

/**
 * Enqueue-only access to declared jobs, for processes that run no workers
 * (a web server handing work to a worker fleet). Workers elsewhere on the
 * same database and namespace are woken by the commit itself. Also the job
 * and schedule operations of {@link JobControl}.
 */
export class TypedJobPublisher<H, Trx = TransactionHandle, P extends PauseTarget = PauseTarget> extends JobControl<P> {
  private closed = false;
  private constructor(
    publisher: JobPublisher<Trx>,
    private readonly backend: Backend<Trx>,
    /** One typed handle per declared job. */
    readonly jobs: H,
    /** Measures the offset to the database's clock again, while open (null on the local clock). */
    private readonly clockSync: ClockSync | null,
    /** Warns about enqueued types no live server handles (UNHANDLED_JOB_TYPE). */
    private readonly unhandled: PublisherUnhandledCheck,
    private readonly sink: EventSink,
  ) {
    super(publisher);
    clockSync?.start();
  }

  /**
   * Opens the backend, checks its schema, registers the topics (those the
   * schema declares with `@partitions`, and the `topics` option), and
   * returns the handles. Used by the generated `open<Name>Publisher`.
   */
  static async open<H, Trx = TransactionHandle, P extends PauseTarget = PauseTarget>(
    options: PublisherOptions<Trx>,
    catalog: JobCatalog,
  ): Promise<TypedJobPublisher<H, Trx, P>> {
    if (options === null || typeof options !== "object" || !options.backend) throw new InvalidConfigError("`backend` is required");
    const policy = options.defaultRetryPolicy ?? null;
    const middleware = checkMiddleware(options.middleware, "open publisher");
    if (policy !== null && !(policy instanceof RetryPolicy)) throw new InvalidConfigError("`defaultRetryPolicy` must be a RetryPolicy");
    const timeSource = checkTimeSource(options.timeSource, options.clock);
    const syncEvery = options.clockSyncIntervalMs ?? 30_000;
    if (!Number.isInteger(syncEvery) || syncEvery < 1 || syncEvery > MAX_TIMER_MS) {
      throw new InvalidConfigError(`\`clockSyncIntervalMs\` must be an integer from 1 to ${MAX_TIMER_MS}, got ${describeValue(syncEvery)}`);
    }
    const topics = resolveTopics(withSchemaTopics(catalog, options.topics), options.recurringSequentialPartitions);
    const sink = eventSink(undefined, checkLogger(options.logger, "open publisher"));
    await acquireBackend(options.backend, options.autoMigrate ?? false);
    const local = options.clock ?? systemClock;
    let databaseClock: DatabaseClock | null;
    try {
      databaseClock = await followDatabaseClock(timeSource, local, options.backend);
    } catch (error) {
      await releaseBackend(options.backend);
      throw error;
    }
    let registry: Map<string, number>;
    try {
      registry = await publisherTopics(options.backend, catalog, topics, (databaseClock ?? local).now());
    } catch (error) {
      await releaseBackend(options.backend); // other users of a shared backend keep it
      throw error;
    }
    const encoders = new Map(Object.keys(catalog).map((type) => [type, jsonPayload]));
    const now = databaseClock ?? local;
    const unhandled = new PublisherUnhandledCheck(options.backend, options.clock ?? unrefClock, () => now.now(), sink.emit);
    const publisher = new JobPublisher<Trx>({
      backend: options.backend,
      clock: databaseClock ?? local,
      defaultRetryPolicy: policy,
      encoders,
      retentionMs: 86_400_000,
      cancelledMsByType: cancelledMsByType(catalog),
      topics: registry,
      onCommitted: (jobs) => unhandled.noted(jobs.map((j) => j.jobType)),
      middleware,
    });
    // Its sleeps do not hold the process open: a script may enqueue and exit without closing the publisher.
    const clockSync =
      databaseClock && new ClockSync({ backend: options.backend, clock: unrefClock, onEvent: sink.emit }, { intervalMs: syncEvery }, databaseClock);
    sink.emit({ type: "lifecycle", component: "publisher", action: "started" });
    return new TypedJobPublisher<H, Trx, P>(publisher, options.backend, jobHandles<H>(catalog, publisher), clockSync, unhandled, sink);
  }

  /**
   * Stops accepting jobs (later calls throw `ServerStoppedError`) and gives
   * back its use of the backend: the backend closes when no server, log or
   * other publisher opened on it is left open. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.control.stop();
    await this.clockSync?.stop();
    await this.unhandled.close();
    await releaseBackend(this.backend);
    this.sink.emit({ type: "lifecycle", component: "publisher", action: "stopped" });
  }
}

/**
 * The topics a publisher enqueues to, name → partition count. The topics it
 * knows the count of (the schema's `@partitions`, the `topics` option) are
 * registered in the database, as a server registers them, so a publisher
 * alone on a fresh database can enqueue to them; a topic stored with another
 * count is `PARTITION_COUNT_MISMATCH` (docs/semantics.md P1). A topic job of
 * the schema whose count is declared nowhere takes the count the database
 * has stored for it, if any (a server registered it); otherwise its
 * enqueues are `UNKNOWN_TOPIC`, as before.
 */
async function publisherTopics<Trx>(backend: Backend<Trx>, catalog: JobCatalog, topics: readonly TopicConfig[], now: number): Promise<Map<string, number>> {
  const registry = new Map(topics.map((t) => [t.name, t.partitions]));
  if (topics.length > 0) await backend.partitions.topicRegister({ topics, now });
  const unknown = Object.values(catalog).some((spec) => spec.topic !== undefined && !registry.has(spec.topic));
  if (!unknown) return registry;
  const stored = await backend.inspect.topicDepth();
  for (const { topic, partitions } of stored.topics) {
    if (!registry.has(topic) && Object.values(catalog).some((spec) => spec.topic === topic)) registry.set(topic, partitions);
  }
  return registry;
}
