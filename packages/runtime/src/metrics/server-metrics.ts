/**
 * What one server records into its registry's {@link LaterMetrics}: the
 * calls on a worker's path, each a cell increment or a histogram cell
 * observation on cells looked up by job type once and kept (M3: one
 * increment per transition, no label hashing per job), and the sources of
 * the gauges read at scrape time (this server's workers and partitions) or
 * set by the {@link QueueGaugeRefresher} (the database's counts).
 *
 * ```text
 *   publisher commit ──► enqueued(jobType, stage) ─────────► later_job_transitions_total
 *   executor: start  ──► attemptStarted ─► running + wait ─► ... _transitions_total, _wait_duration_seconds
 *             end    ──► attemptEnded ──► handler time ───► ..._handler_duration_seconds, later_worker_commands_total
 *   outcome written  ──► outcomeWritten ─► stage + workflow ► ..._transitions_total, later_job_duration_seconds
 *   scrape ──► gauges read this server's sources (workers, partitions) and the refresher's last reading
 * ```
 *
 * `stop()` removes this server's gauge series (counters and histograms keep
 * their totals: they only grow).
 */
import type { ClaimedJob, JobOutcome } from "../backend/backend.js";
import { jobIdTime } from "../core/job-id.js";
import type { JobStage } from "../core/job-stage.js";
import type { LaterMetrics } from "./later-metrics.js";
import type { HistogramCell, ValueCell } from "./metric-cells.js";

/** How an attempt ended, as `later_job_handler_duration_seconds` labels it. */
export type AttemptOutcome = "success" | "retry" | "failed" | "timed_out" | "abandoned" | "cancelled";

/** The cells of one job type, made on first use. */
interface JobTypeCells {
  jobType: string;
  transitions: Partial<Record<JobStage, ValueCell>>;
  wait: HistogramCell | null;
  duration: Partial<Record<"success" | "failed", HistogramCell>>;
  /** By worker id, then outcome. */
  handler: Map<number, Partial<Record<AttemptOutcome, HistogramCell>>>;
}

/** A live worker for `later_workers`. */
export interface WorkerState {
  id: number;
  busy: boolean;
}

/** The database's counts, as the refresher last read them. */
export interface QueueReading {
  stages: Partial<Record<JobStage, number>>;
  /** Seconds; 0 when no regular job is ready. */
  oldestReadyAgeSeconds: number;
  /** Job types with ready jobs and no live server handling them, and how many (see `inspect.unhandledJobTypes`). */
  unhandled: { jobType: string; ready: number }[];
  /** X9: each limited job type's running jobs and ready jobs its limit holds back (see `inspect.limitList`). */
  limits: { jobType: string; running: number; waiting: number }[];
  topics: { topic: string; backlog: number; oldestHeadAgeSeconds: number }[];
  partitions: { topic: string; partition: number; depth: number }[];
  logLag: { topic: string; group: string; lag: number }[];
}

export class ServerMetrics {
  private readonly byType = new Map<string, JobTypeCells>();
  private readonly commands = new Map<number, Record<"success" | "failed" | "discarded", ValueCell>>();
  private readonly topicCounters = new Map<string, { claims: ValueCell; heads: ValueCell; renewals: Record<"renewed" | "lost" | "error", ValueCell> }>();
  private readonly removers: (() => void)[] = [];
  private liveMembers: number | null = null;
  private reading: QueueReading | null = null;

  constructor(
    private readonly metrics: LaterMetrics,
    /** The `queue` label: the backend's namespace. */
    private readonly queue: string,
  ) {}

  /**
   * Registers this server's gauge sources: its workers (`workers()`, pool
   * workers and running partition heads) and its running heads by topic.
   */
  attach(workers: () => Iterable<WorkerState>, activePartitions: () => ReadonlyMap<string, number>): void {
    const { queue, metrics } = this;
    this.removers.push(
      metrics.workers.addSource(function* () {
        for (const w of workers()) {
          const id = String(w.id);
          yield { labels: { queue, worker_id: id, state: "active" }, value: 1 };
          yield { labels: { queue, worker_id: id, state: "busy" }, value: w.busy ? 1 : 0 };
        }
      }),
      metrics.partitionsActive.addSource(() => [...activePartitions()].map(([topic, n]) => ({ labels: { queue, topic }, value: n }))),
      metrics.partitionWorkersLive.addSource(() => (this.liveMembers === null ? [] : [{ labels: { queue }, value: this.liveMembers }])),
      metrics.queueJobs.addSource(() => Object.entries(this.reading?.stages ?? {}).map(([stage, n]) => ({ labels: { queue, stage }, value: n }))),
      metrics.oldestReadyAge.addSource(() => (this.reading ? [{ labels: { queue }, value: this.reading.oldestReadyAgeSeconds }] : [])),
      metrics.queueUnhandled.addSource(() => (this.reading?.unhandled ?? []).map((u) => ({ labels: { queue, job_type: u.jobType }, value: u.ready }))),
      metrics.limitRunning.addSource(() => (this.reading?.limits ?? []).map((l) => ({ labels: { queue, job_type: l.jobType }, value: l.running }))),
      metrics.limitWaiting.addSource(() => (this.reading?.limits ?? []).map((l) => ({ labels: { queue, job_type: l.jobType }, value: l.waiting }))),
      metrics.partitionBacklog.addSource(() => (this.reading?.topics ?? []).map((t) => ({ labels: { queue, topic: t.topic }, value: t.backlog }))),
      metrics.oldestHeadAge.addSource(() => (this.reading?.topics ?? []).map((t) => ({ labels: { queue, topic: t.topic }, value: t.oldestHeadAgeSeconds }))),
      metrics.partitionDepth.addSource(() =>
        (this.reading?.partitions ?? []).map((p) => ({ labels: { queue, topic: p.topic, partition: String(p.partition) }, value: p.depth })),
      ),
      metrics.logConsumerLag.addSource(() => (this.reading?.logLag ?? []).map((l) => ({ labels: { queue, topic: l.topic, group: l.group }, value: l.lag }))),
    );
  }

  /** X4: `later_queue_paused` from the paused set this server last read: each handled type (0 or 1) and each paused one (1). */
  attachPaused(handled: readonly string[], paused: () => ReadonlySet<string>): void {
    const queue = this.queue;
    this.removers.push(
      this.metrics.queuePaused.addSource(() => {
        const now = paused();
        const types = new Set([...handled, ...now]);
        return [...types].map((t) => ({ labels: { queue, job_type: t }, value: now.has(t) ? 1 : 0 }));
      }),
    );
  }

  /** Removes this server's gauge series. Idempotent. */
  stop(): void {
    for (const remove of this.removers.splice(0)) remove();
  }

  // ---- the worker's path ----------------------------------------------------

  /** A job this process enqueued was committed in `stage`. */
  enqueued(jobType: string, stage: JobStage): void {
    this.transition(this.cellsOf(jobType), stage);
  }

  /**
   * An attempt was handed to a worker at `now` (its claim moved it to
   * `running`); its wait since `runAt` is recorded for a regular job only (a
   * partition head also waits for the heads before it, which its `runAt` does not show).
   */
  attemptStarted(job: ClaimedJob, now: number, regular: boolean): void {
    const cells = this.cellsOf(job.jobType);
    this.transition(cells, "running");
    if (!regular) return;
    cells.wait ??= this.metrics.waitDuration.cell({ queue: this.queue, job_type: job.jobType });
    cells.wait.observe(Math.max(0, now - job.runAt) / 1000);
  }

  /** Worker `workerId`'s handler for `job` ended after `ms` (not for a skipped claim: see {@link attemptDiscarded}). */
  attemptEnded(job: ClaimedJob, workerId: number, outcome: AttemptOutcome, ms: number): void {
    const byWorker = this.cellsOf(job.jobType).handler;
    let cells = byWorker.get(workerId);
    if (cells === undefined) byWorker.set(workerId, (cells = {}));
    const cell = (cells[outcome] ??= this.metrics.handlerDuration.cell({ queue: this.queue, job_type: job.jobType, outcome, worker_id: String(workerId) }));
    cell.observe(Math.max(0, ms) / 1000);
    const commands = this.commandsOf(workerId);
    // Abandoned and cancelled (X3) attempts write nothing: discarded, not failed.
    (outcome === "success" ? commands.success : outcome === "abandoned" || outcome === "cancelled" ? commands.discarded : commands.failed).value++;
  }

  /** Worker `workerId` was handed a claim it did not run (its lease had expired). */
  attemptDiscarded(workerId: number): void {
    this.commandsOf(workerId).discarded.value++;
  }

  /** `job`'s outcome was written at `now`. */
  outcomeWritten(job: ClaimedJob, outcome: JobOutcome, now: number): void {
    const cells = this.cellsOf(job.jobType);
    if (outcome.kind === "retry") {
      this.transition(cells, "requeued");
      return;
    }
    const stage = outcome.kind === "success" ? "success" : "failed";
    this.transition(cells, stage);
    const cell = (cells.duration[stage] ??= this.metrics.jobDuration.cell({ queue: this.queue, job_type: job.jobType, outcome: stage }));
    cell.observe(Math.max(0, now - jobIdTime(job.id)) / 1000);
  }

  // ---- partitions -----------------------------------------------------------

  /** One head claim attempt over `topics` (each counted once) found `claimed` heads, by topic. */
  partitionClaim(topics: Iterable<string>, claimed: Iterable<string>): void {
    for (const topic of topics) this.topicOf(topic).claims.value++;
    for (const topic of claimed) this.topicOf(topic).heads.value++;
  }

  /** A partition lease renewal of a head of `topic` ended so. */
  leaseRenewal(topic: string, outcome: "renewed" | "lost" | "error"): void {
    this.topicOf(topic).renewals[outcome].value++;
  }

  /** The live partition members this server's last heartbeat saw. */
  membersSeen(count: number): void {
    this.liveMembers = count;
  }

  /** The refresher's latest reading of the database's counts. */
  queueRead(reading: QueueReading): void {
    this.reading = reading;
  }

  // ---- cells ------------------------------------------------------------------

  private transition(cells: JobTypeCells, stage: JobStage): void {
    const cell = cells.transitions[stage];
    if (cell !== undefined) cell.value++;
    else (cells.transitions[stage] = this.metrics.jobTransitions.cell({ queue: this.queue, job_type: cells.jobType, stage })).value++;
  }

  private cellsOf(jobType: string): JobTypeCells {
    let cells = this.byType.get(jobType);
    if (cells === undefined) {
      cells = { jobType, transitions: {}, wait: null, duration: {}, handler: new Map() };
      this.byType.set(jobType, cells);
    }
    return cells;
  }

  private commandsOf(workerId: number): Record<"success" | "failed" | "discarded", ValueCell> {
    let cells = this.commands.get(workerId);
    if (cells === undefined) {
      const cell = (outcome: string) => this.metrics.workerCommands.cell({ queue: this.queue, worker_id: String(workerId), outcome });
      cells = { success: cell("success"), failed: cell("failed"), discarded: cell("discarded") };
      this.commands.set(workerId, cells);
    }
    return cells;
  }

  private topicOf(topic: string) {
    let cells = this.topicCounters.get(topic);
    if (cells === undefined) {
      const { queue, metrics } = this;
      const renewal = (outcome: string) => metrics.leaseRenewals.cell({ queue, topic, outcome });
      cells = {
        claims: metrics.partitionClaims.cell({ queue, topic }),
        heads: metrics.headsClaimed.cell({ queue, topic }),
        renewals: { renewed: renewal("renewed"), lost: renewal("lost"), error: renewal("error") },
      };
      this.topicCounters.set(topic, cells);
    }
    return cells;
  }
}
