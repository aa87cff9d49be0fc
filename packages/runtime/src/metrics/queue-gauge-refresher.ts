import type { JobStage } from "../core/job-stage.js";
import { jobIdTime } from "../core/job-id.js";
import { type MaintenanceHost, PeriodicService } from "../maintenance/periodic-service.js";
import { errorEvent } from "../events/server-event.js";
import type { ServerMetrics } from "./server-metrics.js";

/** Every five seconds (M2): the gauges of the shared database are this fresh. */
export const QUEUE_GAUGE_INTERVAL_MS = 5_000;

/** What a {@link QueueGaugeRefresher} reads besides the backend. */
export interface QueueGaugeRefresherConfig {
  /** Default {@link QUEUE_GAUGE_INTERVAL_MS}. */
  intervalMs?: number;
  metrics: ServerMetrics;
  /** The retained-log lag of every log topic of the namespace (`server.logLag()`); null: none read. */
  logLag: (() => Promise<{ topic: string; group: string; lag: number }[]>) | null;
}

/**
 * Reads the database's counts for the queue gauges (`later_queue_jobs`,
 * `later_queue_oldest_ready_age_seconds`, `later_queue_unhandled_jobs`, `later_limit_running`,
 * `later_limit_waiting`, `later_partition_backlog`,
 * `later_partition_oldest_head_age_seconds`, `later_partition_queue_depth`,
 * `later_retained_log_consumer_lag`) every 5 s on the injected clock, once
 * at start, and hands them to {@link ServerMetrics.queueRead}; a scrape
 * serves the last reading. Each read is a few single-row reads of the
 * counters (`inspect.stageCounts`, `topicDepth`, `partitionDepth`), one index
 * probe (`inspect.oldestReadyAt`), the live servers' rows and a bounded
 * window of the claim index (`inspect.unhandledJobTypes`), the limits rows (`inspect.limitList`:
 * with a limit stored, also the running jobs by type and the same window) and, with topics, one head probe per
 * partition (`inspect.partitionList`): never a count or scan of the jobs.
 * Every server runs its own (not a shared maintenance turn): its scrape must
 * answer even when it is the only one scraped.
 *
 * ```text
 *   start() ─► read now ─► every intervalMs: read ─► metrics.queueRead(reading)
 *   stop()  ─► loop exits, the read in flight awaited (idempotent)
 * ```
 *
 * A failed read is an `error` event (`where: "queue gauges"`); the gauges keep
 * the last reading. A read that ends after one started later (the read at
 * start is slow, a tick's overtakes it) is dropped, so the gauges never go
 * back to older counts.
 */
export class QueueGaugeRefresher extends PeriodicService {
  private readonly metrics: ServerMetrics;
  private readonly logLag: QueueGaugeRefresherConfig["logLag"];
  private first: Promise<unknown> | null = null;
  /** Reads started, and the number of the last one handed over: a read that ends after a later one has is dropped. */
  private started = 0;
  private handed = 0;

  constructor(host: MaintenanceHost, config: QueueGaugeRefresherConfig) {
    super(host, "queue gauges", config.intervalMs ?? QUEUE_GAUGE_INTERVAL_MS, false);
    this.metrics = config.metrics;
    this.logLag = config.logLag;
  }

  override start(): void {
    if (this.running || this.first) return;
    super.start();
    this.first = this.runOnce().catch((error) => this.host.onEvent(errorEvent(this.task, error)));
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.first;
  }

  /** Reads the counts now and hands them over; resolves to the number of series read. */
  async runOnce(): Promise<number> {
    const { inspect } = this.host.backend;
    const now = this.host.clock.now();
    const read = ++this.started; // the read at start and a tick's may overlap on a busy server
    // One after another: side by side, each read took a pool connection of its own, and at a
    // server's start (the first claims and finishes in flight) that made PostgreSQL fork a
    // backend for each, about 14 ms of CPU apiece on the claims' critical path.
    const stages = await inspect.stageCounts();
    const oldestReadyAt = await inspect.oldestReadyAt({ nowMs: now });
    const unhandled = await inspect.unhandledJobTypes({ nowMs: now });
    const limits = await inspect.limitList({ nowMs: now });
    const topics = await inspect.topicDepth();
    const partitions = await inspect.partitionDepth();
    const logLag = this.logLag ? await this.logLag() : [];
    // A head's age: from the time in its id (its creation), the oldest per topic.
    const oldestHead = new Map<string, number>();
    if (topics.topics.length > 0) {
      for (const p of (await inspect.partitionList({})).partitions) {
        if (p.headJobId === null) continue;
        const age = Math.max(0, now - jobIdTime(p.headJobId)) / 1000;
        oldestHead.set(p.topic, Math.max(oldestHead.get(p.topic) ?? 0, age));
      }
    }
    if (read < this.handed) return 0; // a later read is already served: these counts are older
    this.handed = read;
    this.metrics.queueRead({
      stages: stages.counts as Partial<Record<JobStage, number>>,
      oldestReadyAgeSeconds: oldestReadyAt === null ? 0 : Math.max(0, now - oldestReadyAt) / 1000,
      unhandled: unhandled.jobTypes,
      limits: limits.limits.map((l) => ({ jobType: l.jobType, running: l.running, waiting: l.waiting })),
      topics: topics.topics.map((t) => ({ topic: t.topic, backlog: t.unfinished, oldestHeadAgeSeconds: oldestHead.get(t.topic) ?? 0 })),
      partitions: partitions.partitions.map((p) => ({ topic: p.topic, partition: p.partition, depth: p.unfinished })),
      logLag,
    });
    return Object.keys(stages.counts).length + limits.limits.length + topics.topics.length + partitions.partitions.length + logLag.length;
  }
}
