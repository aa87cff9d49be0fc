/**
 * A server's periodic services (docs/storage.md "Maintenance tasks"), built
 * from its options and started and stopped together: the stuck-job rescue
 * (J7) and the expiry sweep (J11), SQLite's `VACUUM` when
 * `vacuumIntervalMs` is set, PostgreSQL's `ANALYZE` of a table that
 * outgrew its statistics, the worker autoscaler when `workerAutoscale`
 * is, the database clock's resync when the server follows it; the
 * dashboard's data (D1, D5, D7: dispatch wait, activity, queue length, the
 * server heartbeat); the queue gauges with metrics on.
 *
 * ```text
 *   constructed (nothing runs) ──start()──► each service on its own interval ──stop()──► stopped (each awaited)
 * ```
 */
import type { DatabaseClock } from "../core/database-clock.js";
import type { ResolvedServerOptions } from "../config/server-options.js";
import { ActivitySampler } from "../maintenance/activity-sampler.js";
import { ClockSync } from "../maintenance/clock-sync.js";
import { DispatchWaitRecorder } from "../maintenance/dispatch-wait-recorder.js";
import { ExpirySweeper } from "../maintenance/expiry-sweeper.js";
import type { MaintenanceHost, PeriodicService } from "../maintenance/periodic-service.js";
import { QueueLengthSampler } from "../maintenance/queue-length-sampler.js";
import { ServerHeartbeat } from "../maintenance/server-heartbeat.js";
import { StatisticsRefresher } from "../maintenance/statistics-refresher.js";
import { StuckJobRescuer } from "../maintenance/stuck-job-rescuer.js";
import { VacuumService } from "../maintenance/vacuum-service.js";
import { WorkerAutoscaler } from "../maintenance/worker-autoscaler.js";
import { QueueGaugeRefresher } from "../metrics/queue-gauge-refresher.js";
import type { ServerMetrics } from "../metrics/server-metrics.js";
import type { PartitionRunner } from "../partition/partition-runner.js";
import type { LogGroupLag } from "../retained-log/log-record.js";
import type { WorkerPool } from "../worker/worker-pool.js";
import { stuckJobRescuerConfig } from "./loop-configs.js";
import type { UnhandledJobTypeWarner } from "./unhandled-job-type-warner.js";

/** What {@link ServerMaintenance} is built from: the server's options and the parts its services watch. */
export interface ServerMaintenanceParams<C> {
  options: ResolvedServerOptions<C>;
  /** The server's instance id, as its heartbeat publishes it. */
  instanceId: string;
  /** The regular jobs' workers: woken by a rescue, scaled by the autoscaler, counted by the heartbeat. */
  pool: WorkerPool<C>;
  /** The partition runner, null without topics: counted by the heartbeat. */
  partitions: PartitionRunner<C> | null;
  /** The database clock the server follows (its resync runs here); null: the process clock. */
  databaseClock: DatabaseClock | null;
  /** Told the job types live servers handle, read back by the heartbeat while it has a type to check. */
  warner: UnhandledJobTypeWarner;
  /** The server's metrics, null with metrics off: then no queue gauges. */
  recorder: ServerMetrics | null;
  /** The consumer lag of every log topic, for the queue gauges. */
  logLag: () => Promise<LogGroupLag[]>;
}

export class ServerMaintenance<C> {
  /** The stuck-job rescue (J7), also run on demand by `rescueStuckJobs()`. */
  readonly rescuer: StuckJobRescuer<C>;
  /** The expiry sweep (J11), also run on demand by `sweepExpiredJobs()`. */
  readonly sweeper: ExpirySweeper;
  /** The worker autoscaler; null without `workerAutoscale`. */
  readonly autoscaler: WorkerAutoscaler | null;
  private readonly services: PeriodicService[];

  /** Builds every service (none runs before {@link start}); wires the dispatch-wait recorder to the pool's and partitions' claims. */
  constructor(params: ServerMaintenanceParams<C>) {
    const { options, pool, partitions } = params;
    const backend = options.backend;
    const host: MaintenanceHost = { backend, clock: options.clock, onEvent: options.onEvent };
    const jobTypes = Object.keys(options.handlers);
    this.rescuer = new StuckJobRescuer(host, stuckJobRescuerConfig(options), () => pool.wake());
    this.sweeper = new ExpirySweeper(host, { intervalMs: options.sweepIntervalMs, batchSize: options.sweepBatchSize });
    const auto = options.workerAutoscale;
    this.autoscaler = auto && new WorkerAutoscaler(host, { ...auto, intervalMs: options.autoscaleIntervalMs, jobTypes }, pool);
    this.services = [this.rescuer, this.sweeper];
    if (options.vacuumIntervalMs !== null && backend.capabilities.supportsVacuum)
      this.services.push(new VacuumService(host, { intervalMs: options.vacuumIntervalMs }));
    if (backend.capabilities.plannerStatistics) this.services.push(new StatisticsRefresher(host));
    if (this.autoscaler) this.services.push(this.autoscaler);
    if (params.databaseClock) this.services.push(new ClockSync(host, { intervalMs: options.clockSyncIntervalMs }, params.databaseClock));
    // The dashboard's data (docs/semantics.md D1, D5, D7): throughput, dispatch wait, backlog history, the server list.
    const dispatchWait = new DispatchWaitRecorder(host);
    pool.onClaimed = (job, claimedAt) => dispatchWait.record("regular", claimedAt, job.runAt);
    if (partitions) partitions.onClaimed = (_job, claimedAt, readyAt) => dispatchWait.record("partitioned", claimedAt, readyAt);
    const load = () => ({ workers: pool.workerCount, busy: pool.busyCount + (partitions?.runningCount ?? 0) });
    this.services.push(
      dispatchWait,
      new ActivitySampler(host),
      new QueueLengthSampler(host),
      new ServerHeartbeat(host, {
        instanceId: params.instanceId,
        intervalMs: 5_000,
        expiryMs: 15_000,
        load,
        jobTypes,
        // Read back only while some enqueued type waits to be checked: no extra query per beat otherwise.
        onLiveJobTypes: (types) => params.warner.liveTypesRead(types),
        wantsLiveJobTypes: () => params.warner.hasSuspects,
      }),
    );
    // Every log topic the database holds (the schema's, other processes'), not only `logTopics`.
    if (params.recorder) this.services.push(new QueueGaugeRefresher(host, { metrics: params.recorder, logLag: params.logLag }));
  }

  start(): void {
    for (const service of this.services) service.start();
  }

  /** Stops every service, each awaited (a run under way finishes first). */
  async stop(): Promise<void> {
    await Promise.all(this.services.map((s) => s.stop()));
  }
}
