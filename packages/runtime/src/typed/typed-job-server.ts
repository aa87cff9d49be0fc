import type { Backend, TransactionHandle } from "../backend/backend.js";
import type { BackgroundJobServer } from "../server/background-job-server.js";
import type { ShutdownOptions } from "../server/shutdown-options.js";
import type { JobContext } from "../config/handler-registration.js";
import type { ShutdownOnSignalsOptions } from "../server/shutdown-on-signals.js";
import type { LogGroupLag } from "../retained-log/log-record.js";
import type { RetainedLog } from "../retained-log/retained-log.js";
import { JobControl } from "./job-control.js";
import type { PauseTarget } from "../publisher/pause-controller.js";

/** A handler's context in the generated module: {@link JobContext} plus typed `jobs` handles. */
export type TypedJobContext<C, H, Trx = TransactionHandle> = JobContext<C, Trx> & {
  /** Enqueue declared jobs from inside a handler: `ctx.jobs.sendEmail.enqueue(...)`. */
  readonly jobs: H;
};

/**
 * A running server of the generated module (`JobsServer<C>`): the typed
 * `jobs` handles over one {@link BackgroundJobServer}, and the job and
 * schedule operations of {@link JobControl}.
 */
export class TypedJobServer<C, H, Trx = TransactionHandle, P extends PauseTarget = PauseTarget> extends JobControl<P> {
  constructor(
    /** The untyped server underneath. */
    readonly core: BackgroundJobServer<C, Trx>,
    /** One typed handle per declared job. */
    readonly jobs: H,
  ) {
    super(core.publisher);
  }

  /** This server's id: the lease owner written on its claims. */
  get instanceId(): string {
    return this.core.instanceId;
  }

  get backend(): Backend<Trx> {
    return this.core.backend;
  }

  /** The retained log over the server's `logTopics`; without them, `InvalidConfigError` (see `BackgroundJobServer.log`). */
  get log(): RetainedLog<Trx> {
    return this.core.log;
  }

  /** The Prometheus text of the server's metrics (see `BackgroundJobServer.metrics`); empty with `metrics: false`. */
  metrics(): Promise<string> {
    return this.core.metrics();
  }

  /** The consumer lag of the server's `logTopics`, per topic and group (see `BackgroundJobServer.logLag`). */
  logLag(): Promise<LogGroupLag[]> {
    return this.core.logLag();
  }

  /** Live workers in this process. */
  get workerCount(): number {
    return this.core.workerCount;
  }

  /** Adds one worker at once; returns the new count. */
  addWorker(): number {
    return this.core.addWorker();
  }

  /** Removes one worker once its current job is done; false (and no change) when it is the last one. */
  removeWorker(): Promise<boolean> {
    return this.core.removeWorker();
  }

  /** Stops claiming, lets running handlers finish until `deadlineMs` (default 30000), then aborts the rest and puts their jobs back (attempt not counted). Idempotent. */
  shutdown(options?: ShutdownOptions): Promise<void> {
    return this.core.shutdown(options);
  }

  /** Shuts down gracefully on SIGTERM/SIGINT (deadline default 30 s), as `BackgroundJobServer.shutdownOnSignals`; returns a function that removes the listeners. */
  shutdownOnSignals(options?: ShutdownOnSignalsOptions): () => void {
    return this.core.shutdownOnSignals(options);
  }
}
