import type pg from "pg";
import type { PostgresBackendOptions } from "./postgres-backend-options.js";
import { PostgresListener } from "./postgres-listener.js";

/**
 * The done channel's LISTEN side (X6, `waitFor`): one dedicated connection
 * per backend, opened by the first `waitFor` and kept until the backend
 * closes (a process that waits once is likely to wait again; opening a
 * connection per wait would cost more than the wait). Every waiter of the
 * process shares it: a notification, or a reconnect (notifications sent
 * meanwhile are lost), calls every subscriber once per microtask, and the
 * waiters then re-read all their rows in one statement.
 *
 * Kept apart from the wake-up listener (`PostgresWakeups`), whose channel
 * every worker of the schema hears: done notifications go only to the
 * processes that wait, and workers never parse them.
 *
 * With `listen: false`, or when the connection cannot be opened, nothing
 * listens: waiters then find the outcome by their safety poll only.
 */
export class PostgresDoneListener {
  private listener: PostgresListener | null = null;
  private starting: Promise<void> | null = null;
  private readonly subscribers = new Set<(discarded?: readonly string[]) => void>();
  private scheduled = false;
  /** J11: ids named by the notifications since the subscribers were last called (deleted successes). */
  private discarded: string[] = [];

  constructor(
    private readonly channel: () => string,
    private readonly options: Pick<PostgresBackendOptions, "listen" | "applicationName">,
  ) {}

  /** Adds `listener`; resolves (to its unsubscribe) once LISTEN is in place, so a commit after that is heard. */
  async subscribe(pool: pg.Pool, listener: (discarded?: readonly string[]) => void): Promise<() => void> {
    this.subscribers.add(listener);
    const unsubscribe = () => {
      this.subscribers.delete(listener);
    };
    if (this.options.listen === false || this.listener?.listening) return unsubscribe;
    this.starting ??= this.start(pool).finally(() => {
      this.starting = null;
    });
    await this.starting;
    return unsubscribe;
  }

  /** Closes the connection, if any. */
  async stop(): Promise<void> {
    await this.starting;
    const listener = this.listener;
    this.listener = null;
    await listener?.stop();
  }

  private async start(pool: pg.Pool): Promise<void> {
    await this.listener?.stop(); // one that lost its first connection and stopped reconnecting
    const listener = new PostgresListener({
      clientConfig: { ...pool.options, application_name: pool.options.application_name ?? this.options.applicationName ?? "later" },
      channel: this.channel(),
      onNotification: (payload) => {
        // A non-empty payload names awaited successes its statement deleted (J11, `successMs: 0`).
        if (payload !== "") this.discarded.push(...payload.split(","));
        this.schedule();
      },
      onReconnected: () => this.schedule(),
    });
    try {
      await listener.start();
      this.listener = listener;
    } catch {
      // The database is unreachable now: the waiters' safety poll finds the outcome, and the next waitFor tries again.
      await listener.stop();
    }
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      const discarded = this.discarded.length > 0 ? this.discarded : undefined;
      this.discarded = [];
      for (const listener of this.subscribers) listener(discarded);
    });
  }
}
