import type { Backend } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import { errorEvent, type ServerEvent } from "../events/server-event.js";
import { UnhandledJobTypeWarner } from "../server/unhandled-job-type-warner.js";

/** How long after a commit the live servers' types are read: one heartbeat interval, so a server starting beside the publisher has written its row. */
const CHECK_DELAY_MS = 5_000;

/**
 * The enqueue-only publisher's side of the `UNHANDLED_JOB_TYPE` warning (a
 * web process built from a newer schema enqueues a type no worker handles
 * yet). A server learns the live servers' types from its own heartbeat; a
 * publisher has none, so after it commits jobs of a type it has neither
 * seen handled nor warned about, it reads the live servers' types once,
 * {@link CHECK_DELAY_MS} later, and the {@link UnhandledJobTypeWarner}
 * warns for each such type that none of them handles (once per type).
 *
 * Cost: nothing on the enqueue path but a set lookup per job; one read of
 * the live servers per batch of new types, none while every type enqueued
 * is known to be handled or already warned about. A failed read is
 * reported as an `error` event and tried again at the next new type.
 *
 * ```text
 *   noted(types) ─► suspects? ─► wait CHECK_DELAY_MS ─► read live servers' types ─► warner.liveTypesRead
 *                                     └─ close(): the wait ends, nothing read
 * ```
 */
export class PublisherUnhandledCheck {
  private readonly warner: UnhandledJobTypeWarner;
  private readonly stopped = new AbortController();
  private running: Promise<void> | null = null;

  /** `sleepClock` paces the wait (an unref'd clock, so a script may exit); `now` is the clock live servers are judged by. */
  constructor(
    private readonly backend: Backend<unknown>,
    private readonly sleepClock: Clock,
    private readonly now: () => number,
    private readonly onEvent: (event: ServerEvent) => void,
  ) {
    this.warner = new UnhandledJobTypeWarner(onEvent);
  }

  /** Jobs of these types were committed by the publisher. */
  noted(jobTypes: Iterable<string>): void {
    for (const jobType of jobTypes) this.warner.noteEnqueued(jobType);
    if (this.warner.hasSuspects && this.running === null && !this.stopped.signal.aborted) this.running = this.check();
  }

  /** Ends a wait in progress; resolves once no read is in flight. Idempotent. */
  async close(): Promise<void> {
    this.stopped.abort();
    await this.running;
  }

  private async check(): Promise<void> {
    try {
      await this.sleepClock.sleep(CHECK_DELAY_MS, this.stopped.signal);
      if (this.stopped.signal.aborted) return;
      const { workers } = await this.backend.inspect.workerList({ nowMs: this.now() });
      this.warner.liveTypesRead(new Set(workers.flatMap((w) => w.jobTypes)));
    } catch (error) {
      if (!this.stopped.signal.aborted) this.onEvent(errorEvent("unhandled job type check", error));
    } finally {
      this.running = null;
    }
  }
}
