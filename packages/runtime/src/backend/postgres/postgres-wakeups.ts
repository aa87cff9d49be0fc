import { createHash, randomBytes } from "node:crypto";
import type pg from "pg";
import { reportWarning, type PostgresBackendOptions, type PostgresBackendWarning } from "./postgres-backend-options.js";
import { startProbedListener, type PostgresListener } from "./postgres-listener.js";

/** Sender of writes into a caller-owned transaction: no backend's own, so every listener, this process's too, wakes on its commit. */
const FOREIGN_SENDER = "-";

/** The `pg_notify` payload of a write into a caller-owned transaction on `namespace`. */
export function foreignNotifyPayload(namespace: string): string {
  return `${FOREIGN_SENDER} ${namespace}`;
}

/** Sender of a cancel notification (X3): a running job was cancelled, its server should renew its leases now. */
const CANCEL_SENDER = "~";

/**
 * The `pg_notify` payload `cancelMany` sends on the wake-up channel when it
 * cancelled a running job. Every listener of `namespace` (this process's too)
 * tells its cancel subscribers, not its wake-up ones; a release before
 * cancel existed reads it as a foreign wake-up (one extra claim).
 */
export function cancelNotifyPayload(namespace: string): string {
  return `${CANCEL_SENDER} ${namespace}`;
}

/**
 * The `told` CTE of a cancel statement (X3): one `pg_notify(channel,
 * payload)` (the {@link cancelNotifyPayload}) when one of `rows` (the
 * cancelled rows, with the `old_stage` each left) was `running`. It is not a
 * stage change's wake-up (nothing became ready by it; that one is the
 * transition's `notified` CTE, postgres-transition.ts): it tells the servers
 * of the namespace to renew their leases now, so the one running the job
 * finds it cancelled and aborts the attempt. The statement must read `told`.
 */
export function cancelNotice(rows: string, channel: string, payload: string): string {
  return `told AS (
  SELECT pg_notify(${channel}, ${payload}) FROM ${rows} WHERE old_stage = 'running' LIMIT 1
)`;
}

/**
 * The wake-ups of one PostgreSQL backend: what its statements send with
 * `pg_notify`, and what its LISTEN connection hands to the worker pool.
 *
 * Payloads are `"<sender> <namespace>"`. A notification wakes the
 * subscribers when it is for this namespace and from another backend (this
 * backend's own writes wake its workers directly, without the round trip).
 * Notifications parsed from one socket read are coalesced into one wake-up,
 * delivered as a microtask so the claim goes out before any other I/O
 * callback runs; after the listener reconnects, subscribers are woken once,
 * since what was sent meanwhile is lost.
 *
 * ```text
 *   start(pool) ──listen: false──────────────────────► off (polling only)
 *        │ listener up, probe NOTIFY came back ──────► listening
 *        └ probe lost or connection refused ─────────► fell back (polling only, onWarning)
 * ```
 */
export class PostgresWakeups {
  /** Identifies this backend's own notifications. */
  private readonly sender = randomBytes(6).toString("hex");
  private readonly subscribers = new Set<() => void>();
  private readonly cancelSubscribers = new Set<() => void>();
  private listener: PostgresListener | null = null;
  private fellBack = false;
  private scheduled = false;
  /** The channel and payload of this backend's own `pg_notify` calls: every write passes them. */
  readonly notifyArgs: readonly [string, string];
  /**
   * The done channel of this schema and namespace (X6): the statements that
   * make an awaited job terminal notify it, and `waitFor` listens on it
   * (`PostgresDoneListener`). One per namespace, so waiters never hear other
   * namespaces' jobs; a hash keeps it within an identifier's 63 bytes. Made
   * once: every finish passes it.
   */
  readonly doneChannel: string;

  constructor(
    private readonly options: Pick<PostgresBackendOptions, "listen" | "listenCheckTimeoutMs" | "applicationName" | "onWarning">,
    private readonly channel: string,
    private readonly namespace: string,
  ) {
    this.notifyArgs = [channel, `${this.sender} ${namespace}`];
    this.doneChannel = doneChannelOf(channel, namespace);
  }

  /** True while LISTEN/NOTIFY is in use: `listen` is on and the probe at the last start succeeded. */
  get active(): boolean {
    return this.options.listen !== false && !this.fellBack;
  }

  subscribe(listener: () => void): () => void {
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  /** Called on each cancel notification for this namespace, from any backend (this one's too). */
  subscribeCancel(listener: () => void): () => void {
    this.cancelSubscribers.add(listener);
    return () => this.cancelSubscribers.delete(listener);
  }

  /**
   * Opens the LISTEN connection with the pool's settings and checks with a
   * probe (sent through the pool) that notifications come back within
   * `listenCheckTimeoutMs` (default 2000); when they do not, polling only,
   * reported through `onWarning` (default: a process warning). The LISTEN
   * connection opens at once; the probe waits for `reachable` (the caller's
   * own check of the database), whose rejection this rethrows, listener
   * closed and no warning given.
   */
  async start(pool: pg.Pool, reachable?: Promise<unknown>): Promise<void> {
    this.fellBack = false;
    if (this.options.listen === false) return;
    const started = await startProbedListener(
      {
        clientConfig: { ...pool.options, application_name: pool.options.application_name ?? this.options.applicationName ?? "later" },
        channel: this.channel,
        onNotification: (payload) => this.onNotification(payload),
        onReconnected: () => this.schedule(),
      },
      (payload) => pool.query("SELECT pg_notify($1, $2)", [this.channel, payload]),
      this.options.listenCheckTimeoutMs ?? 2_000,
      reachable,
    );
    if ("listener" in started) {
      this.listener = started.listener;
      return;
    }
    this.fellBack = true;
    const warning: PostgresBackendWarning = {
      code: "LISTEN_UNAVAILABLE",
      message: `later: LISTEN/NOTIFY wake-ups are unavailable (${started.unavailable}); other processes' jobs are found by polling only. Pass listen: false to silence this.`,
    };
    reportWarning(this.options, warning);
  }

  /** Closes the LISTEN connection, if any. */
  async stop(): Promise<void> {
    const listener = this.listener;
    this.listener = null;
    await listener?.stop();
  }

  private onNotification(payload: string): void {
    const space = payload.indexOf(" ");
    if (space < 0 || payload.slice(space + 1) !== this.namespace || payload.slice(0, space) === this.sender) return;
    if (payload.slice(0, space) === CANCEL_SENDER) {
      for (const listener of this.cancelSubscribers) listener();
      return;
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      for (const listener of this.subscribers) listener();
    });
  }
}

/** `later_done:` and a hash of the wake-up channel (which names the schema) and the namespace. */
export function doneChannelOf(channel: string, namespace: string): string {
  return `later_done:${createHash("sha1").update(`${channel}\0${namespace}`).digest("hex").slice(0, 24)}`;
}
