/**
 * later's Prometheus metrics (docs/semantics.md M1–M3), one set per prom-client
 * `Registry`: a server's own registry by default, or the application's
 * (`metricsRegistry`), where every server of the process that is given it
 * shares the one set.
 *
 * | name | type | labels | what |
 * | --- | --- | --- | --- |
 * | `later_job_transitions_total` | counter | queue, job_type, stage | stage changes this process wrote: enqueues (`enqueued`, `delayed`, `waiting`), claims (`running`), written outcomes (`success`, `requeued`, `failed`) |
 * | `later_job_handler_duration_seconds` | histogram | queue, job_type, outcome, worker_id | handler time of each attempt; outcome `success`, `retry`, `failed`, `timed_out`, `abandoned`, `cancelled` (X3) |
 * | `later_job_duration_seconds` | histogram | queue, job_type, outcome | creation to the final outcome written (`success`, `failed`): the whole workflow |
 * | `later_job_wait_duration_seconds` | histogram | queue, job_type | due time (run-at, retry time, release of a continuation) to the attempt's start, regular jobs |
 * | `later_queue_jobs` | gauge | queue, stage | jobs per stage in the database, from the stage counters every 5 s |
 * | `later_queue_oldest_ready_age_seconds` | gauge | queue | how long the oldest ready regular job has been due (0 when none), every 5 s |
 * | `later_queue_paused` | gauge | queue, job_type | 1 while the job type is paused (X4), 0 for a type this server handles that is not; as this server last read the paused set (at most one poll interval old) |
 * | `later_queue_unhandled_jobs` | gauge | queue, job_type | ready jobs of a type no live server handles (`inspect.unhandledJobTypes`: within the oldest 1000 ready jobs), every 5 s; a type that gets a handler drops out |
 * | `later_limit_running` | gauge | queue, job_type | X9: running jobs of each job type with a stored limit (every server's; compare with its `concurrency`), every 5 s |
 * | `later_limit_waiting` | gauge | queue, job_type | X9: ready jobs of each limited job type that its limit holds back now (`inspect.limitList`: within the oldest 1000 ready jobs), every 5 s |
 * | `later_worker_commands_total` | counter | queue, worker_id, outcome | attempts a worker was handed: `success`, `failed` (retry or failure), `discarded` (skipped, abandoned, cancelled) |
 * | `later_workers` | gauge | queue, worker_id, state | 1 per live worker (`state="active"`), and 1 while it runs a handler (`state="busy"`) |
 * | `later_partition_claims_total` | counter | queue, topic | head claim attempts, whether or not a head was found |
 * | `later_partition_heads_claimed_total` | counter | queue, topic | heads claimed (a run's follower counted as it starts, P3) |
 * | `later_partitions_active` | gauge | queue, topic | partitions running a head in this process now |
 * | `later_partition_lease_renewals_total` | counter | queue, topic, outcome | partition lease renewals: `renewed`, `lost`, `error` |
 * | `later_partition_workers_live` | gauge | queue | live partition members this process saw at its last heartbeat |
 * | `later_partition_backlog` | gauge | queue, topic | unfinished jobs of the topic, from the counters every 5 s |
 * | `later_partition_oldest_head_age_seconds` | gauge | queue, topic | age of the topic's oldest head (from the time in its id) every 5 s |
 * | `later_partition_queue_depth` | gauge | queue, topic, partition | unfinished jobs per partition, from the counters every 5 s |
 * | `later_retained_log_consumer_lag` | gauge | queue, topic, group | records appended but not committed by the group, every 5 s, for every log topic of the namespace (read from the database) |
 *
 * Label rules (M2): `queue` is the backend's namespace; `worker_id` a small
 * number local to one server (combine with Prometheus's `instance`); no
 * label ever carries a job id, an error text or a server (owner) id. The
 * database-read gauges report the same value on every server: aggregate
 * them with `max`, not `sum`. Durations are in seconds; the wait and job
 * buckets reach a day, the handler's an hour.
 */
import { Registry } from "prom-client";
import { describeValue, InvalidConfigError } from "../errors.js";
import { CellCounter, CellGauge, CellHistogram } from "./metric-cells.js";

/** Handler time buckets (seconds): 5 ms to an hour (the default job timeout is 15 minutes). */
export const HANDLER_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600];
/** Wait and workflow buckets (seconds): 5 ms to a day, for backlogs that drain over hours. */
export const WAIT_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400,
];

/** The metrics of one registry. */
export class LaterMetrics {
  readonly jobTransitions: CellCounter;
  readonly handlerDuration: CellHistogram;
  readonly jobDuration: CellHistogram;
  readonly waitDuration: CellHistogram;
  readonly queueJobs: CellGauge;
  readonly oldestReadyAge: CellGauge;
  readonly queueUnhandled: CellGauge;
  readonly queuePaused: CellGauge;
  readonly limitRunning: CellGauge;
  readonly limitWaiting: CellGauge;
  readonly workerCommands: CellCounter;
  readonly workers: CellGauge;
  readonly partitionClaims: CellCounter;
  readonly headsClaimed: CellCounter;
  readonly partitionsActive: CellGauge;
  readonly leaseRenewals: CellCounter;
  readonly partitionWorkersLive: CellGauge;
  readonly partitionBacklog: CellGauge;
  readonly oldestHeadAge: CellGauge;
  readonly partitionDepth: CellGauge;
  readonly logConsumerLag: CellGauge;

  private constructor(registry: Registry) {
    const m = (name: string, help: string, ...labelNames: string[]) => ({ name, help, labelNames, registry });
    this.jobTransitions = new CellCounter(m("later_job_transitions_total", "Job stage changes written by this process.", "queue", "job_type", "stage"));
    this.handlerDuration = new CellHistogram(
      m("later_job_handler_duration_seconds", "Handler time of each attempt, by outcome and worker.", "queue", "job_type", "outcome", "worker_id"),
      HANDLER_BUCKETS,
    );
    this.jobDuration = new CellHistogram(
      m("later_job_duration_seconds", "Time from a job's creation to its final outcome.", "queue", "job_type", "outcome"),
      WAIT_BUCKETS,
    );
    this.waitDuration = new CellHistogram(
      m("later_job_wait_duration_seconds", "Time from a regular job's due time to the start of its attempt.", "queue", "job_type"),
      WAIT_BUCKETS,
    );
    this.queueJobs = new CellGauge(m("later_queue_jobs", "Jobs per stage in the database (shared: use max across servers).", "queue", "stage"), "max");
    this.oldestReadyAge = new CellGauge(
      m("later_queue_oldest_ready_age_seconds", "How long the oldest ready regular job has been due, 0 when none (shared: use max).", "queue"),
      "max",
    );
    this.queueUnhandled = new CellGauge(
      m("later_queue_unhandled_jobs", "Ready jobs of a job type no live server handles (shared: use max).", "queue", "job_type"),
      "max",
    );
    this.queuePaused = new CellGauge(
      m("later_queue_paused", "1 while the job type is paused, 0 for a handled type that is not (shared: use max).", "queue", "job_type"),
      "max",
    );
    this.limitRunning = new CellGauge(
      m("later_limit_running", "Running jobs of each job type with a stored limit, every server's (shared: use max).", "queue", "job_type"),
      "max",
    );
    this.limitWaiting = new CellGauge(
      m("later_limit_waiting", "Ready jobs of each limited job type held back by its limit (shared: use max).", "queue", "job_type"),
      "max",
    );
    this.workerCommands = new CellCounter(m("later_worker_commands_total", "Attempts handed to each worker, by outcome.", "queue", "worker_id", "outcome"));
    this.workers = new CellGauge(m("later_workers", "Live (active) and busy workers of this process.", "queue", "worker_id", "state"), "sum");
    this.partitionClaims = new CellCounter(m("later_partition_claims_total", "Partition head claim attempts.", "queue", "topic"));
    this.headsClaimed = new CellCounter(m("later_partition_heads_claimed_total", "Partition heads claimed.", "queue", "topic"));
    this.partitionsActive = new CellGauge(m("later_partitions_active", "Partitions running a head in this process.", "queue", "topic"), "sum");
    this.leaseRenewals = new CellCounter(m("later_partition_lease_renewals_total", "Partition lease renewals, by outcome.", "queue", "topic", "outcome"));
    this.partitionWorkersLive = new CellGauge(m("later_partition_workers_live", "Live partition members at this process's last heartbeat.", "queue"), "max");
    this.partitionBacklog = new CellGauge(m("later_partition_backlog", "Unfinished jobs of each topic (shared: use max).", "queue", "topic"), "max");
    this.oldestHeadAge = new CellGauge(
      m("later_partition_oldest_head_age_seconds", "Age of each topic's oldest partition head (shared: use max).", "queue", "topic"),
      "max",
    );
    this.partitionDepth = new CellGauge(
      m("later_partition_queue_depth", "Unfinished jobs per partition (shared: use max).", "queue", "topic", "partition"),
      "max",
    );
    this.logConsumerLag = new CellGauge(
      m("later_retained_log_consumer_lag", "Retained-log records not yet committed by each consumer group.", "queue", "topic", "group"),
      "max",
    );
  }

  /**
   * The metrics of `registry`, made and registered on first use. Throws
   * `InvalidConfigError` when the registry already holds a metric of one of
   * these names that is not ours (another copy of this package, or the
   * application's own).
   */
  static of(registry: Registry): LaterMetrics {
    let metrics = byRegistry.get(registry);
    if (metrics === undefined) {
      for (const name of METRIC_NAMES) {
        if (registry.getSingleMetric(name) !== undefined)
          throw new InvalidConfigError(`\`metricsRegistry\` already holds a metric named ${name} that this server did not register`);
      }
      metrics = new LaterMetrics(registry);
      byRegistry.set(registry, metrics);
    }
    return metrics;
  }
}

const byRegistry = new WeakMap<Registry, LaterMetrics>();

/** Every metric name, as in the table above. */
export const METRIC_NAMES: readonly string[] = [
  "later_job_transitions_total",
  "later_job_handler_duration_seconds",
  "later_job_duration_seconds",
  "later_job_wait_duration_seconds",
  "later_queue_jobs",
  "later_queue_oldest_ready_age_seconds",
  "later_queue_unhandled_jobs",
  "later_queue_paused",
  "later_limit_running",
  "later_limit_waiting",
  "later_worker_commands_total",
  "later_workers",
  "later_partition_claims_total",
  "later_partition_heads_claimed_total",
  "later_partitions_active",
  "later_partition_lease_renewals_total",
  "later_partition_workers_live",
  "later_partition_backlog",
  "later_partition_oldest_head_age_seconds",
  "later_partition_queue_depth",
  "later_retained_log_consumer_lag",
];

/**
 * The server options `metrics` and `metricsRegistry`, checked: the registry
 * to use (the given one, or a new one of the server's own), null with
 * `metrics: false`. The metrics are made in it now, so a clash of names
 * refuses the start before anything is opened.
 */
export function resolveMetricsOptions(metrics: unknown, registry: unknown): { metrics: boolean; metricsRegistry: Registry | null } {
  if (metrics !== undefined && typeof metrics !== "boolean") throw new InvalidConfigError(`\`metrics\` must be true or false, got ${describeValue(metrics)}`);
  if (registry !== undefined) {
    const r = registry as Partial<Registry> | null;
    if (
      r === null ||
      typeof r !== "object" ||
      typeof r.getSingleMetric !== "function" ||
      typeof r.registerMetric !== "function" ||
      typeof r.metrics !== "function"
    )
      throw new InvalidConfigError("`metricsRegistry` must be a prom-client Registry");
    if (metrics === false) throw new InvalidConfigError("`metricsRegistry` was given with `metrics: false`: give one or the other");
  }
  if (metrics === false) return { metrics: false, metricsRegistry: null };
  const chosen = (registry as Registry | undefined) ?? new Registry();
  LaterMetrics.of(chosen);
  return { metrics: true, metricsRegistry: chosen };
}
