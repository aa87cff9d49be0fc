import { hostname } from "node:os";
import { errorEvent } from "../events/server-event.js";
import { checkInt, PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** Settings of the {@link ServerHeartbeat}. */
export interface ServerHeartbeatConfig {
  /** This server's id (its lease owner id). */
  instanceId: string;
  /** How often it beats. Default 5000. */
  intervalMs: number;
  /** How long after a beat the server still counts as live. Default 15000: three missed beats. */
  expiryMs: number;
  /** The pool's size and how many jobs run now (regular and partition heads). */
  load: () => { workers: number; busy: number };
  /** The job types this server handles, published with each beat. */
  jobTypes: readonly string[];
  /**
   * Called after each beat with the job types the live servers (this one
   * included) publish: read once a beat, so a caller can check against them
   * without a query of its own. Default: not read.
   */
  onLiveJobTypes?: ((jobTypes: ReadonlySet<string>) => void) | undefined;
  /** Asked before each read for `onLiveJobTypes`: false skips the read this beat. Default: always read. */
  wantsLiveJobTypes?: (() => boolean) | undefined;
}

/**
 * Task `server-heartbeat` (docs/semantics.md D1 `workers`): every server, with or
 * without topics, keeps one row of the namespace's server list fresh:
 * instance id, `os.hostname()`, pid, worker slots, busy workers and the
 * last beat. It beats at `start()` and every `intervalMs`; a row is listed
 * until `expiryMs` after its last beat (a crashed process drops out then);
 * a graceful stop removes it. Each beat also publishes the job types the
 * server handles, and (with `onLiveJobTypes`) reads back the live servers'
 * types, one small read of the server rows, for the unhandled-type warning. (Partition membership keeps its own rows:
 * those drive rendezvous ownership, with their own expiry.)
 */
export class ServerHeartbeat extends PeriodicService {
  readonly expiryMs: number;
  private firstBeat: Promise<unknown> | null = null;

  constructor(
    host: MaintenanceHost,
    private readonly config: ServerHeartbeatConfig,
  ) {
    super(host, "server-heartbeat", config.intervalMs, false);
    this.expiryMs = checkInt(this.task, "expiryMs", config.expiryMs, config.intervalMs);
  }

  /** Beats now (and at once when started). */
  override start(): void {
    if (this.stopped || this.running) return;
    this.firstBeat = this.runOnce().catch((error) => this.host.onEvent(errorEvent(this.task, error)));
    super.start();
  }

  async runOnce(): Promise<number> {
    const now = this.host.clock.now();
    const { workers, busy } = this.config.load();
    await this.host.backend.activity.serverHeartbeat({
      instanceId: this.config.instanceId,
      host: hostname(),
      pid: process.pid,
      workers,
      busy,
      now,
      expiresAt: now + this.expiryMs,
      jobTypes: this.config.jobTypes,
    });
    if (this.config.onLiveJobTypes && (this.config.wantsLiveJobTypes?.() ?? true)) {
      const { workers: live } = await this.host.backend.inspect.workerList({ nowMs: now });
      this.config.onLiveJobTypes(new Set(live.flatMap((w) => w.jobTypes)));
    }
    return 1;
  }

  /** Stops beating and removes this server's row. */
  override async stop(): Promise<void> {
    const wasStarted = this.running;
    await super.stop();
    await this.firstBeat; // a beat still on its way would write the row back
    if (wasStarted)
      await this.host.backend.activity.serverRemove({ instanceId: this.config.instanceId }).catch((error) => this.host.onEvent(errorEvent(this.task, error)));
  }
}
