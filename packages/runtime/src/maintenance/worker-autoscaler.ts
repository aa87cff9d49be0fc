import { InvalidConfigError } from "../errors.js";
import { checkInt, PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** What the autoscaler scales: the worker pool. */
export interface Scalable {
  readonly workerCount: number;
  /** Claimed jobs waiting in the local buffer for a free worker: backlog the ready count no longer shows. */
  readonly bufferedCount: number;
  addWorker(): number;
  removeWorker(): Promise<boolean>;
}

/** Settings of the {@link WorkerAutoscaler}: the `workerAutoscale` bounds and its tick. */
export interface WorkerAutoscalerConfig {
  /** Fewest workers it scales down to. Server option `workerAutoscale.min`. */
  min: number;
  /** Most workers it scales up to. Server option `workerAutoscale.max`. */
  max: number;
  /** Tick. Server option `autoscaleIntervalMs`, default 15000. */
  intervalMs: number;
  /** Job types the pool runs (the backlog counted). */
  jobTypes: readonly string[];
}

/** Ready jobs per live worker above which a worker is added. */
const BACKLOG_PER_WORKER = 20;
/** Ticks in a row with no backlog before a worker is removed. */
const EMPTY_TICKS = 3;

/**
 * Task `autoscale` (J14), local: every server scales its own pool, with no
 * coordination. Each tick reads the backlog (ready jobs in the database plus
 * claimed jobs in this pool's buffer): +1 worker when it exceeds ~20 per live
 * worker, up to `max`; -1 after three ticks in a row with no backlog, down to
 * `min`.
 *
 * Events: `{ type: "worker", action: "added", workers }` for a worker it
 * added; the pool reports `removed` once a removed worker finished its job.
 */
export class WorkerAutoscaler extends PeriodicService {
  private emptyTicks = 0;
  readonly min: number;
  readonly max: number;

  constructor(
    host: MaintenanceHost,
    private readonly config: WorkerAutoscalerConfig,
    private readonly workers: Scalable,
  ) {
    super(host, "autoscale", config.intervalMs, false);
    this.min = checkInt(this.task, "min", config.min, 1);
    this.max = checkInt(this.task, "max", config.max, 1);
    if (this.max < this.min) throw new InvalidConfigError(`autoscale: \`max\` (${config.max}) must be >= \`min\` (${config.min})`);
  }

  /** One decision. Resolves to the worker change (+1, -1 or 0). */
  async runOnce(): Promise<number> {
    const ready = await this.host.backend.jobs.countReady({ now: this.host.clock.now(), jobTypes: this.config.jobTypes });
    const backlog = ready + this.workers.bufferedCount;
    const live = this.workers.workerCount;
    if (backlog === 0) this.emptyTicks++;
    else this.emptyTicks = 0;
    if (backlog > BACKLOG_PER_WORKER * live && live < this.max) {
      const workers = this.workers.addWorker();
      this.host.onEvent({ type: "worker", action: "added", workers });
      return 1;
    }
    if (this.emptyTicks >= EMPTY_TICKS && live > this.min) {
      this.emptyTicks = 0;
      return (await this.workers.removeWorker()) ? -1 : 0;
    }
    return 0;
  }
}
