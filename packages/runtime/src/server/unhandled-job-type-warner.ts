import type { ServerEvent } from "../events/server-event.js";

/**
 * Warns, once per job type, when this server enqueues a type that no live
 * server handles: a `warning` event with code `UNHANDLED_JOB_TYPE` (a web
 * process built from a newer schema enqueues a type no worker has a
 * handler for yet, and the job would wait without a sign).
 *
 * Nothing is read on the enqueue path: {@link noteEnqueued} is a set
 * lookup. A type this server has not warned about is kept as a suspect and
 * checked at the next heartbeat's read of the live servers' types
 * ({@link liveTypesRead}, every 5 s), not against the last read: a server
 * that started since then and handles it has beaten by the next read, so
 * it is not reported by mistake. A type some live server handles is
 * dropped from the suspects and checked again at its next enqueue.
 *
 * ```text
 *   noteEnqueued(type) ─► suspect ─► next liveTypesRead(types): handled ─► forgotten
 *                                                                └ not ─► warning event, never again for the type
 * ```
 */
export class UnhandledJobTypeWarner {
  private readonly warned = new Set<string>();
  private readonly suspects = new Set<string>();
  /** The last read of the live servers' types; null before the first. */
  private handled: ReadonlySet<string> | null = null;

  constructor(private readonly onEvent: (event: ServerEvent) => void) {}

  /** True while some enqueued type waits for the next read of the live servers' types. */
  get hasSuspects(): boolean {
    return this.suspects.size > 0;
  }

  /** A job of `jobType` was enqueued by this server (after its commit). */
  noteEnqueued(jobType: string): void {
    if (this.warned.has(jobType) || this.handled?.has(jobType)) return;
    this.suspects.add(jobType);
  }

  /** The live servers' job types, as the heartbeat just read them: each suspect none of them handles is warned about. */
  liveTypesRead(handled: ReadonlySet<string>): void {
    this.handled = handled;
    for (const jobType of this.suspects) {
      if (handled.has(jobType)) continue;
      this.warned.add(jobType);
      this.onEvent({
        type: "warning",
        code: "UNHANDLED_JOB_TYPE",
        jobType,
        message: `enqueued jobs of type ${JSON.stringify(jobType)} that no live server handles: they wait until a server with a handler for it starts (deploy the workers with the new job type)`,
      });
    }
    this.suspects.clear();
  }
}
