/**
 * Periodic maintenance, run by every server but coordinated through the
 * database (`maintenanceClaim`): in each interval exactly one server runs
 * each shared task, and the last run time survives restarts.
 *
 * | task | interval | what it does |
 * | --- | --- | --- |
 * | `rescue-stuck` | `rescueIntervalMs` | running jobs whose lease expired more than `stuckGraceMs` ago are retried per policy (or failed, retries spent) |
 * | `sweep-expired` | `sweepIntervalMs` | deletes expired terminal rows, `sweepBatchSize` per statement, until none are left |
 * | `vacuum` | `vacuumIntervalMs` | `VACUUM` (SQLite), when configured |
 * | autoscale | `autoscaleIntervalMs` | local: +1 worker when the ready backlog > 20 per worker, -1 after three empty ticks |
 *
 * Lifecycle: `start()` starts one loop per task, `stop()` (idempotent)
 * ends them and resolves once they have exited.
 */
import type { Backend, JobFinish } from "../backend/backend.js";
import { RetryPolicy, type RetryPolicyJson } from "../core/retry/retry-policy.js";
import { describeThrown } from "../errors.js";
import type { ResolvedServerOptions } from "../server/server-options.js";

export interface Scalable {
  readonly workerCount: number;
  /** Claimed jobs waiting in the local buffer for a free worker: backlog the ready count no longer shows. */
  readonly bufferedCount: number;
  addWorker(): number;
  removeWorker(): Promise<boolean>;
  /** Told when maintenance made jobs ready (rescued jobs), so local workers look at once. */
  wake(): void;
}

export class MaintenanceRunner<C> {
  private readonly stopController = new AbortController();
  private loops: Promise<void>[] = [];
  private emptyTicks = 0;

  constructor(
    private readonly options: ResolvedServerOptions<C>,
    private readonly backend: Backend,
    private readonly workers: Scalable,
  ) {}

  start(): void {
    if (this.loops.length > 0) return;
    const o = this.options;
    this.loops.push(this.every(o.rescueIntervalMs, "rescue-stuck", () => this.rescueStuck()));
    this.loops.push(this.every(o.sweepIntervalMs, "sweep-expired", () => this.sweepExpired()));
    if (o.vacuumIntervalMs !== null && this.backend.capabilities.supportsVacuum) {
      this.loops.push(this.every(o.vacuumIntervalMs, "vacuum", async () => {
        await this.backend.databaseVacuum();
        return 1;
      }));
    }
    if (o.workerAutoscale) this.loops.push(this.every(o.autoscaleIntervalMs, null, () => this.autoscale()));
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await Promise.all(this.loops);
  }

  /** Retries or fails running jobs whose workers are gone. Returns how many. */
  async rescueStuck(): Promise<number> {
    const now = this.options.clock.now();
    const leaseExpiredBefore = now - this.options.stuckGraceMs;
    let total = 0;
    for (;;) {
      const stuck = await this.backend.jobListStuck({ leaseExpiredBefore, limit: 100 });
      if (stuck.length === 0) return total;
      const finishes: JobFinish[] = stuck.map((job) => {
        const handler = this.options.handlers[job.jobType];
        let policy: RetryPolicy;
        try {
          policy = handler?.retry ? handler.retry(this.options.context) : RetryPolicy.fromJson(JSON.parse(job.retryPolicy) as RetryPolicyJson);
        } catch {
          policy = this.options.defaultRetryPolicy;
        }
        const error = `worker lost: the lease of attempt ${job.attempt} expired (process crashed or stalled)`;
        const delay = policy.delayBeforeRetry(job.attempt, this.options.random);
        return { id: job.id, attempt: job.attempt, outcome: delay === null ? { kind: "fail", error } : { kind: "retry", runAt: now + delay, error } };
      });
      const { applied } = await this.backend.jobFinishMany({ finishes, now, retentionMs: this.options.retentionMs, leaseExpiredBefore });
      total += applied.length;
      if (applied.length > 0) this.workers.wake();
      if (applied.length === 0 || stuck.length < 100) return total;
    }
  }

  /** Deletes expired rows in batches. Returns how many. */
  async sweepExpired(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.backend.jobDeleteExpired({ now: this.options.clock.now(), limit: this.options.sweepBatchSize });
      total += n;
      if (n < this.options.sweepBatchSize || this.stopController.signal.aborted) return total;
      await new Promise<void>((r) => setImmediate(r));
    }
  }

  /** One autoscale decision. Returns the worker change (+1, -1 or 0). */
  async autoscale(): Promise<number> {
    const bounds = this.options.workerAutoscale;
    if (!bounds) return 0;
    const ready = await this.backend.jobCountReady({ now: this.options.clock.now(), jobTypes: Object.keys(this.options.handlers) });
    const backlog = ready + this.workers.bufferedCount;
    const live = this.workers.workerCount;
    if (backlog === 0) this.emptyTicks++;
    else this.emptyTicks = 0;
    if (backlog > 20 * live && live < bounds.max) {
      this.workers.addWorker();
      return 1;
    }
    if (this.emptyTicks >= 3 && live > bounds.min) {
      this.emptyTicks = 0;
      return (await this.workers.removeWorker()) ? -1 : 0;
    }
    return 0;
  }

  private async every(intervalMs: number, task: string | null, run: () => Promise<number>): Promise<void> {
    const signal = this.stopController.signal;
    const { clock } = this.options;
    while (!signal.aborted) {
      await clock.sleep(intervalMs, signal);
      if (signal.aborted) return;
      try {
        if (task !== null && !(await this.backend.maintenanceClaim({ task, now: clock.now(), intervalMs: Math.max(1, intervalMs - 50) }))) continue;
        const count = await run();
        if (task !== null && count > 0) this.options.onEvent({ type: "maintenance", task, count });
      } catch (error) {
        if (!signal.aborted) this.options.onEvent({ type: "error", where: task ?? "autoscale", error: describeThrown(error) });
      }
    }
  }
}
