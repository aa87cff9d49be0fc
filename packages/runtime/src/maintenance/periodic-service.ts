import type { Backend } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import { InvalidConfigError, describeValue } from "../errors.js";
import { errorEvent, type ServerEvent } from "../events/server-event.js";

/** What every maintenance service is given by its server. */
export interface MaintenanceHost {
  backend: Backend;
  clock: Clock;
  onEvent: (event: ServerEvent) => void;
}

/** Throws `InvalidConfigError` unless `value` is an integer >= `min` (a service checks its config when it is made). */
export function checkInt(service: string, name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min)
    throw new InvalidConfigError(`${service}: \`${name}\` must be an integer >= ${min}, got ${describeValue(value)}`);
  return value;
}

/**
 * The lifecycle every maintenance service shares: one loop that sleeps
 * `intervalMs` on the clock, then runs the service's task once.
 *
 * ```text
 *   new ─start()─► running: sleep intervalMs ─► (shared: maintenance.claim won?) ─► runOnce() ─► event ─┐
 *                     ▲                                                                              │
 *                     └──────────────────────────────────────────────────────────────────────────────┘
 *   stop() ─► stopped (idempotent; resolves once the loop has exited; start() after stop() does nothing)
 * ```
 *
 * A shared task (`shared: true`) runs on one server per interval however many
 * servers run it: each asks `maintenance.claim`, which records the last run in
 * the database, so the schedule also survives restarts. A shared task's run
 * that changed something emits `{ type: "maintenance", task, count }`, the
 * event tests wait on; a failed run emits an `error` event (`where` = the
 * task) and the loop goes on.
 */
export abstract class PeriodicService {
  private loop: Promise<void> | null = null;
  private readonly stopController = new AbortController();

  protected constructor(
    protected readonly host: MaintenanceHost,
    /** The task's name, in `maintenance.claim` and in events. */
    readonly task: string,
    readonly intervalMs: number,
    private readonly shared: boolean,
  ) {
    checkInt(task, "intervalMs", intervalMs, 1);
  }

  /** Runs the task once now, whatever the schedule; resolves to how many rows or jobs it changed. */
  abstract runOnce(): Promise<number>;

  /** True once `stop()` was called: long runs check it between batches. */
  protected get stopped(): boolean {
    return this.stopController.signal.aborted;
  }

  /** True while the loop runs (started, not stopped). */
  get running(): boolean {
    return this.loop !== null && !this.stopped;
  }

  start(): void {
    if (this.stopped) return;
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    const { clock, backend, onEvent } = this.host;
    while (!signal.aborted) {
      await clock.sleep(this.intervalMs, signal);
      if (signal.aborted) return;
      try {
        // The claim's interval is a little shorter than ours, so two servers' timers that drift apart do not skip a turn.
        if (this.shared && !(await backend.maintenance.claim({ task: this.task, now: clock.now(), intervalMs: Math.max(1, this.intervalMs - 50) }))) continue;
        const count = await this.runOnce();
        if (this.shared && count > 0) onEvent({ type: "maintenance", task: this.task, count });
      } catch (error) {
        if (!signal.aborted) onEvent(errorEvent(this.task, error));
      }
    }
  }
}
