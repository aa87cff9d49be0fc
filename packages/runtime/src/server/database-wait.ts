import type { Clock } from "../core/clock.js";
import { DatabaseUnavailableError } from "../errors.js";
import { errorEvent, type ServerEvent } from "../events/server-event.js";

/** What a {@link DatabaseWait} is given: the server's clock, `databaseWaitMs` and `onEvent`. */
export interface DatabaseWaitConfig {
  clock: Clock;
  /** How long, from construction, a step may be tried again; null: without end. */
  databaseWaitMs: number | null;
  onEvent: (event: ServerEvent) => void;
}

/** First pause between tries, ms; doubled after each failure up to {@link MAX_DELAY_MS}. */
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;

/**
 * The start-up steps of a server that need the database (open, migrate,
 * register topics, join the partition members), run again while the
 * database cannot be reached, so a server started before its database (a
 * deploy, a restart of both) starts once the database does, instead of
 * failing; as the worker loops do once running.
 *
 * Only a `transient` {@link DatabaseUnavailableError} is tried again (refused,
 * reset, the server starting up or shutting down); anything else rejects at
 * once. Each failed try is reported as an `error` event (`where: "start"`,
 * code `DATABASE_UNAVAILABLE`); the pause between tries starts at 0.25 s and
 * doubles up to 5 s. One budget of `databaseWaitMs` is shared by every step
 * of a start; once spent, the last failure rejects, saying how long it waited.
 *
 * ```text
 *   run(step) ──► step ──ok──► resolved
 *                  │ transient DATABASE_UNAVAILABLE, budget left: error event, pause, try again
 *                  └ anything else, or budget spent ──► rejected
 * ```
 */
export class DatabaseWait {
  private readonly deadline: number;
  private delayMs = FIRST_DELAY_MS;

  constructor(private readonly config: DatabaseWaitConfig) {
    this.deadline = config.databaseWaitMs === null ? Number.POSITIVE_INFINITY : config.clock.now() + config.databaseWaitMs;
  }

  /** Runs `step` until it resolves, a failure is not a transient one, or the budget is spent. */
  async run<R>(step: () => Promise<R>): Promise<R> {
    const { clock, databaseWaitMs, onEvent } = this.config;
    for (;;) {
      try {
        return await step();
      } catch (error) {
        if (!(error instanceof DatabaseUnavailableError) || !error.transient) throw error;
        const left = this.deadline - clock.now();
        if (left <= 0) {
          if (databaseWaitMs === 0) throw error;
          throw new DatabaseUnavailableError(`${error.message} (still unreachable after databaseWaitMs, ${databaseWaitMs} ms)`, error.cause ?? error, {
            transient: true,
          });
        }
        onEvent(errorEvent("start", error));
        await clock.sleep(Math.min(this.delayMs, left));
        this.delayMs = Math.min(this.delayMs * 2, MAX_DELAY_MS);
      }
    }
  }
}
