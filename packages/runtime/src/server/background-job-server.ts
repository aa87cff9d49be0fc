import type { Backend, PartitionRef, TransactionHandle } from "../backend/backend.js";
import type { DatabaseClock } from "../core/database-clock.js";
import { newJobId } from "../core/job-id.js";
import { InvalidConfigError, ServerStoppedError } from "../errors.js";
import { PartitionRunner } from "../partition/partition-runner.js";
import { RecurringPoller } from "../recurring/recurring-poller.js";
import { WorkerPool } from "../worker/worker-pool.js";
import { WorkerIds } from "../worker/worker-ids.js";
import { PauseWatch } from "../worker/pause-watch.js";
import { storeLimits } from "./limits-store.js";
import { LaterMetrics } from "../metrics/later-metrics.js";
import { ServerMetrics } from "../metrics/server-metrics.js";
import { metricsMiddleware } from "../metrics/metrics-middleware.js";
import { enqueueChain, type LaterMiddleware } from "../middleware/later-middleware.js";
import type { LogGroupLag } from "../retained-log/log-record.js";
import { logGroupLag } from "../retained-log/log-group-lag.js";
import { RetainedLog } from "../retained-log/retained-log.js";
import { followDatabaseClock, holdBackend, prepareBackend, releaseBackend } from "../backend/backend-preparation.js";
import { DatabaseWait } from "./database-wait.js";
import { partitionRunnerConfig, stepRunnerConfig, workerPoolConfig } from "./loop-configs.js";
import { ServerMaintenance } from "./server-maintenance.js";
import { ServerJobControl } from "./server-job-control.js";
import { serverPublisher } from "./server-publisher.js";
import type { JobPublisher } from "../publisher/job-publisher.js";
import { errorEvent } from "../events/server-event.js";
import { UnhandledJobTypeWarner } from "./unhandled-job-type-warner.js";
import { resolveServerOptions, type ResolvedServerOptions, type ServerOptions } from "../config/server-options.js";
import { shutdownOnSignals, type ShutdownOnSignalsOptions } from "./shutdown-on-signals.js";
import type { ShutdownOptions } from "./shutdown-options.js";
import { liveServers } from "./live-servers.js";
import { StepRunner, type SteppedAttempt } from "../worker/step-runner.js";

/**
 * A running job server: workers, lease renewal and maintenance on one
 * backend. Every server on the same database and namespace joins one pool.
 *
 * ```text
 *   start() ──► (waiting for the database, up to databaseWaitMs) ──► running ──shutdown()──► stopping ──► stopped
 * ```
 *
 * Once running, a database that goes away (a restart, an outage, killed
 * connections) stops nothing: each loop reports its failures as `error`
 * events with code `DATABASE_UNAVAILABLE` and tries again (claims on the
 * next wake-up or poll, outcome writes every 50 ms, lease renewals on their
 * schedule); the connections and the LISTEN connection are opened again by
 * the backend. Handlers that finish meanwhile keep their outcome until it
 * can be written; a lease that expires meanwhile is recovered as after a
 * crash (keep `leaseMs` above the outages to ride out).
 *
 * Generated code (`later-gen`) wraps this with typed handles; this class is
 * the untyped core they share. `Trx`: the caller-owned transactions its
 * publisher's `enqueueIn` takes, inferred from the backend.
 */
export class BackgroundJobServer<C, Trx = TransactionHandle> extends ServerJobControl<Trx> {
  /** This server's id: the lease owner written on its claims. */
  readonly instanceId: string;
  readonly publisher: JobPublisher<Trx>;
  private readonly pool: WorkerPool<C>;
  private readonly partitions: PartitionRunner<C> | null;
  private readonly pauses: PauseWatch;
  /** The periodic services: rescue, sweep, vacuum, autoscale, clock sync, the dashboard's samplers, the heartbeat, the queue gauges. */
  private readonly maintenance: ServerMaintenance<C>;
  private readonly recurring: RecurringPoller;
  /** What this server records into its registry's metrics; null with `metrics: false`. */
  private readonly recorder: ServerMetrics | null;
  /**
   * The executors' attempt middleware (X10): the metrics first when on (outermost, an observer entry: they see
   * every claim handed over, a skipped one included), then option `middleware`. Enqueues use the option alone.
   */
  private readonly attemptMiddleware: readonly LaterMiddleware[];
  private readonly unsubscribeWake: () => void;
  private stopped: Promise<void> | null = null;
  private retainedLog: RetainedLog<Trx> | null = null;
  /** Runs jobs on demand on a server from {@link startManual}; null otherwise. */
  private stepper: StepRunner<C> | null = null;

  private constructor(
    private readonly options: ResolvedServerOptions<C>,
    databaseClock: DatabaseClock | null,
  ) {
    super();
    const backend = options.backend;
    this.instanceId = newJobId(options.clock.now());
    const registry = options.metricsRegistry;
    const recorder = registry && new ServerMetrics(LaterMetrics.of(registry), backend.namespace);
    this.recorder = recorder;
    this.attemptMiddleware = recorder ? [metricsMiddleware(recorder, options.clock), ...options.middleware] : options.middleware;
    // Always on: its warning reaches stderr by default (a type nobody handles must not be silent).
    const warner = new UnhandledJobTypeWarner(options.onEvent);
    const { publisher, onCommitted } = serverPublisher<C, Trx>(options, recorder, warner, {
      workers: () => this.pool.wake(),
      partitions: () => this.partitions?.wake(),
      pauseChanged: () => {
        this.pauses.invalidate();
        wakeAll();
        return this.pauses.settled();
      },
      renewNow: () => this.renewNow(),
    });
    this.publisher = publisher;
    const workerIds = new WorkerIds();
    this.pool = new WorkerPool(workerPoolConfig(options, this.attemptMiddleware), backend, this.instanceId, this.publisher, workerIds, recorder);
    this.partitions =
      options.topics.length > 0
        ? new PartitionRunner(partitionRunnerConfig(options, this.attemptMiddleware), backend, this.instanceId, this.publisher, workerIds, recorder)
        : null;
    // X4: one paused set per server, read at most once per poll interval before a claim (and after a wake-up while something is paused).
    this.pauses = new PauseWatch(backend, options.clock, options.pollIntervalMs, (error) => options.onEvent(errorEvent("pause read", error)));
    this.pool.pauses = this.pauses;
    if (this.partitions) this.partitions.pauses = this.pauses;
    const wakeAll = () => {
      this.pauses.wake();
      this.pool.wake();
      this.partitions?.wake();
    };
    // Released continuations may be regular or partitioned jobs, whichever side finished their parent.
    this.pool.onReleased = wakeAll;
    if (this.partitions) this.partitions.onReleased = wakeAll;
    this.maintenance = new ServerMaintenance({
      options,
      instanceId: this.instanceId,
      pool: this.pool,
      partitions: this.partitions,
      databaseClock,
      warner,
      recorder,
      logLag: () => this.logLag(),
    });
    if (recorder) {
      const partitions = this.partitions;
      const pool = this.pool;
      recorder.attach(
        function* () {
          yield* pool.workerStates();
          if (partitions) yield* partitions.workerStates();
        },
        () => partitions?.activeByTopic() ?? new Map(),
      );
      recorder.attachPaused(Object.keys(options.handlers), () => this.pauses.pausedTypes);
    }
    this.recurring = new RecurringPoller({
      backend,
      clock: options.clock,
      intervalMs: options.recurringPollIntervalMs,
      onCommitted,
      onError: (where, error) => options.onEvent(errorEvent(where, error)),
      throughMiddleware: enqueueChain(options.middleware),
      decodePayload: (jobType, payload) => {
        const decode = options.handlers[jobType]?.decode;
        try {
          return decode === undefined ? JSON.parse(payload) : decode(payload);
        } catch {
          return undefined;
        }
      },
    });
    const unsubscribeWake = backend.wakeSubscribe(wakeAll);
    // X3: another process cancelled a running job (PostgreSQL notifies; SQLite: the next renewal finds it).
    const unsubscribeCancel = backend.cancelSubscribe?.(() => this.renewNow());
    this.unsubscribeWake = () => {
      unsubscribeWake();
      unsubscribeCancel?.();
    };
  }

  /** Renews every held lease now, so an attempt whose job was cancelled (X3) aborts at once; a failure is an `error` event (the loop renews again). */
  private renewNow(): void {
    const report = (error: unknown) => this.options.onEvent(errorEvent("lease renewal", error));
    this.pool.renewOnce().catch(report);
    this.partitions?.renewOnce().catch(report);
  }

  /**
   * Validates the options, opens the backend, checks (or with `autoMigrate`
   * applies) the schema, and starts the workers and maintenance.
   *
   * A database that cannot be reached (refused, reset, starting up or
   * shutting down) is waited for, up to `databaseWaitMs` (default 60 s):
   * each failed try is an `error` event (`where: "start"`, code
   * `DATABASE_UNAVAILABLE`), and the start goes on once the database
   * answers; past `databaseWaitMs` it rejects with `DatabaseUnavailableError`
   * (code `DATABASE_UNAVAILABLE`). Other errors reject at once:
   * `InvalidConfigError` (bad options), `SchemaVersionError`,
   * `PartitionCountMismatchError`, a `DatabaseUnavailableError` that waiting
   * cannot mend (a bad password or path). Nothing is left open when it rejects.
   */
  static start<C, Trx = TransactionHandle>(options: ServerOptions<C, Trx>): Promise<BackgroundJobServer<C, Trx>> {
    return BackgroundJobServer.open(options, null);
  }

  /**
   * @internal The testing kit's server (X11): as {@link start}, but no loop runs (workers, partitions,
   * maintenance, recurring poll): jobs of `runTypes` run only on {@link runDueOnce}, one per call, in the test's order.
   */
  static startManual<C, Trx = TransactionHandle>(options: ServerOptions<C, Trx>, runTypes: readonly string[]): Promise<BackgroundJobServer<C, Trx>> {
    return BackgroundJobServer.open(options, runTypes);
  }

  /** `manual`: null for a server whose loops run, else the job types {@link runDueOnce} runs. */
  private static async open<C, Trx>(options: ServerOptions<C, Trx>, manual: readonly string[] | null): Promise<BackgroundJobServer<C, Trx>> {
    let resolved = resolveServerOptions(options);
    const wait = new DatabaseWait(resolved);
    let databaseClock: DatabaseClock | null;
    // One user of the backend until shutdown: a publisher or log sharing it keeps it open after this server stops.
    holdBackend(resolved.backend);
    try {
      await wait.run(() => prepareBackend(resolved.backend, resolved.autoMigrate));
      databaseClock = await wait.run(() => followDatabaseClock(resolved.timeSource, resolved.clock, resolved.backend));
    } catch (error) {
      await releaseBackend(resolved.backend); // opened before a later step failed
      throw error;
    }
    if (databaseClock) resolved = { ...resolved, clock: databaseClock };
    const server = new BackgroundJobServer<C, Trx>(resolved, databaseClock);
    try {
      await wait.run(async () => {
        // X4: the paused set read beside the steps below, so the first claim need not wait for it (never rejects).
        const pausesRead = manual === null ? server.pauses.refresh() : null;
        // X9: this server's limits stored (the last server started wins), before any worker claims.
        await storeLimits(resolved);
        await pausesRead;
        // P1: a topic stored with another partition count refuses the start, before any worker runs.
        if (resolved.topics.length > 0) await resolved.backend.partitions.topicRegister({ topics: resolved.topics, now: resolved.clock.now() });
        // L1: as RetainedLog.open, a log topic stored with another partition count refuses the start.
        if (resolved.logTopics.size > 0 && !server.retainedLog)
          server.retainedLog = await RetainedLog.attach({
            backend: resolved.backend,
            topics: resolved.logTopics,
            clock: resolved.clock,
            onEvent: resolved.onEvent,
          });
        if (manual === null) await server.partitions?.start();
      });
    } catch (error) {
      await server.retainedLog?.close();
      server.unsubscribeWake();
      await releaseBackend(resolved.backend);
      throw error;
    }
    if (manual !== null)
      server.stepper = new StepRunner(
        stepRunnerConfig(resolved, server.attemptMiddleware),
        manual,
        resolved.backend,
        server.instanceId,
        server.publisher,
        server.recorder,
      );
    else {
      server.pool.start();
      server.maintenance.start();
      server.recurring.start();
    }
    liveServers().add(server);
    resolved.onEvent({ type: "lifecycle", component: "server", action: "started", instanceId: server.instanceId });
    return server;
  }

  get backend(): Backend<Trx> {
    return this.options.backend;
  }

  /**
   * The retained log over the server's `logTopics` (docs/semantics.md L1): append,
   * read, consume, lag, on the server's backend and clock; it runs the
   * topics' retention sweep and stops with the server. Without `logTopics`
   * it throws `InvalidConfigError`.
   */
  get log(): RetainedLog<Trx> {
    if (!this.retainedLog) throw new InvalidConfigError("server.log: this server's options list no `logTopics` (add logTopics: [logTopic(name, partitions)])");
    return this.retainedLog;
  }

  /**
   * The consumer lag of every consumer group on every log topic of the
   * namespace, per topic and group, summed over partitions: the topics and
   * their partition counts are read from the database, so topics this
   * server does not list in `logTopics` (a schema's `Logs`, opened with
   * `openLogs`, or another process's) are covered too. `[]` when the
   * namespace has no consumer group. Read at each call (see `logGroupLag`).
   */
  logLag(): Promise<LogGroupLag[]> {
    return logGroupLag(this.options.backend);
  }

  /**
   * The Prometheus text (exposition format 0.0.4) of the registry this
   * server's metrics are in: its own, or the `metricsRegistry` given (then
   * with the application's metrics too). An empty string with `metrics: false`.
   * Serve it on a route Prometheus scrapes, with the content type
   * `text/plain; version=0.0.4; charset=utf-8`. The metrics are listed in the README.
   */
  metrics(): Promise<string> {
    return this.options.metricsRegistry?.metrics() ?? Promise.resolve("");
  }

  /** Live workers in this process. */
  get workerCount(): number {
    return this.pool.workerCount;
  }

  /** Adds one worker at once; returns the new count. */
  addWorker(): number {
    if (this.stopped) throw new ServerStoppedError("addWorker");
    return this.pool.addWorker();
  }

  /** Removes one worker once its current job is done; false (and no change) when it is the last one. */
  async removeWorker(): Promise<boolean> {
    if (this.stopped) throw new ServerStoppedError("removeWorker");
    return this.pool.removeWorker();
  }

  /**
   * @internal The testing kit's step (X11): runs the oldest due job's attempt and writes it (`StepRunner`);
   * null when none is due. Only on a server from {@link startManual} (else `INVALID_CONFIG`).
   */
  runDueOnce(): Promise<SteppedAttempt | null> {
    if (this.stopped) return Promise.reject(new ServerStoppedError("runDueOnce"));
    if (!this.stepper) return Promise.reject(new InvalidConfigError("runDueOnce: only a server started with startManual runs jobs on demand"));
    return this.stepper.runDueOnce();
  }

  /** @internal Test seam behind `injectWorkerLoopFault` in `@later/runtime/testing`. */
  set workerLoopFault(fault: (() => void) | null) {
    this.pool.loopFault = fault;
  }

  /** Partitions this server owns now (empty without topics). */
  get ownedPartitions(): readonly PartitionRef[] {
    return this.partitions?.ownedPartitions ?? [];
  }

  /** Renews the leases of the partition heads running here now (it also runs every third of `leaseMs`). */
  renewPartitionLeases(): Promise<void> {
    return this.partitions?.renewOnce() ?? Promise.resolve();
  }

  /** Runs the stuck-job sweep now (it also runs every `rescueIntervalMs`). Returns how many jobs it rescued. */
  rescueStuckJobs(): Promise<number> {
    return this.maintenance.rescuer.runOnce();
  }

  /** Runs the expiry sweep now. Returns how many rows it deleted. */
  sweepExpiredJobs(): Promise<number> {
    return this.maintenance.sweeper.runOnce();
  }

  /** Runs the recurring poller now (it also runs every `recurringPollIntervalMs`). Returns how many occurrences it enqueued. */
  pollRecurring(): Promise<number> {
    return this.recurring.pollOnce();
  }

  /** Runs one autoscale decision now. */
  autoscaleTick(): Promise<number> {
    return this.maintenance.autoscaler?.runOnce() ?? Promise.resolve(0);
  }

  /**
   * Shuts the server down gracefully on SIGTERM or SIGINT, as
   * graphile-worker does: the first signal starts `shutdown({ deadlineMs })`
   * (default 30 s) and, once done, exits the process (`exit: false` to
   * leave that to the application); repeated signals within 5 s are
   * ignored; one after that exits at once. Returns a function that removes
   * the listeners. See {@link ShutdownOnSignalsOptions}.
   */
  shutdownOnSignals(options?: ShutdownOnSignalsOptions): () => void {
    return shutdownOnSignals(this, options);
  }

  /**
   * Stops claiming, lets running handlers finish and commit until
   * `deadlineMs` (default 30000), then aborts the rest (their `signal`
   * fires) and puts their jobs back at once: ready for any server now, the
   * attempt not counted as a failure, a `job-released` event each (a
   * partition head also frees its partition). Whatever those handlers do
   * afterwards is not written. Then it gives back its use of the backend,
   * which closes once no publisher or log opened on it is left open.
   * Idempotent. With the database unreachable (an outage) it still ends
   * about at the deadline: outcomes and put-backs it could not write by then
   * are left to lease recovery.
   */
  shutdown(options: ShutdownOptions = {}): Promise<void> {
    const deadlineMs = options.deadlineMs ?? 30_000;
    if (!Number.isFinite(deadlineMs) || deadlineMs < 0) throw new InvalidConfigError("shutdown deadlineMs must be >= 0");
    this.stopped ??= (async () => {
      this.publisher.stop();
      this.unsubscribeWake();
      await Promise.all([this.maintenance.stop(), this.recurring.stop()]);
      await Promise.all([this.pool.shutdown(deadlineMs), this.partitions?.shutdown(deadlineMs), this.retainedLog?.close()]);
      this.recorder?.stop();
      await releaseBackend(this.options.backend);
      liveServers().delete(this);
      this.options.onEvent({ type: "lifecycle", component: "server", action: "stopped", instanceId: this.instanceId });
    })();
    return this.stopped;
  }
}
