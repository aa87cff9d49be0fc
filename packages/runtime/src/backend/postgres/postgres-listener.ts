import { randomBytes } from "node:crypto";
import type pg from "pg";
import { loadDriver } from "../load-driver.js";

/** Options of {@link PostgresListener}. */
export interface PostgresListenerOptions {
  /** How to open the dedicated connection (the pool's own settings). */
  clientConfig: pg.ClientConfig;
  /** The channel to LISTEN on. */
  channel: string;
  /** Called with the payload of every notification on the channel (probes excluded). */
  onNotification(payload: string): void;
  /** Called once after each successful reconnect: notifications sent while disconnected are lost. */
  onReconnected(): void;
  /** First reconnect delay, ms; doubled per failed attempt. Default 50. */
  minRetryDelayMs?: number;
  /** Longest reconnect delay, ms. Default 5000. */
  maxRetryDelayMs?: number;
}

/**
 * The LISTEN side of PostgreSQL wake-ups: one dedicated `pg.Client` (never
 * a pool client, which the pool could hand to someone else or close while
 * idle) listening on one channel.
 *
 * ```text
 *   start() ──► connecting ──► listening ──(error / end: killed, server restart)──► waiting
 *                  ▲                                                                │ backoff 50 ms … 5 s
 *                  └────────────────────────────────────────────────────────────────┘
 *   stop() from any state ──► stopped
 * ```
 *
 * After a reconnect `onReconnected` fires once, since notifications sent
 * while the connection was down are gone. The reconnect timer is unref'd:
 * a listener alone never keeps a process alive.
 */
export class PostgresListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryDelayMs: number;
  private readonly probes = new Map<string, (arrived: boolean) => void>();

  constructor(private readonly options: PostgresListenerOptions) {
    this.retryDelayMs = options.minRetryDelayMs ?? 50;
  }

  /** True while the connection is up and listening. */
  get listening(): boolean {
    return this.client !== null;
  }

  /** Connects and LISTENs; rejects when this first connection fails. */
  async start(): Promise<void> {
    await this.connect();
  }

  /**
   * Sends a probe through `notify` (on another connection) and resolves
   * true when it comes back on this one within `timeoutMs`: behind a
   * transaction-mode pooler LISTEN is accepted but nothing ever arrives.
   */
  async probe(notify: (payload: string) => Promise<unknown>, timeoutMs: number): Promise<boolean> {
    const token = `probe:${randomBytes(8).toString("hex")}`;
    let timer: NodeJS.Timeout | undefined;
    const arrived = new Promise<boolean>((resolve) => {
      this.probes.set(token, resolve);
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      await notify(token);
      return await arrived;
    } finally {
      clearTimeout(timer);
      this.probes.delete(token);
    }
  }

  /** Closes the connection and stops reconnecting. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const client = this.client;
    this.client = null;
    for (const resolve of this.probes.values()) resolve(false);
    if (client) await client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const pg = loadDriver("pg", "PostgreSQL"); // loaded (and cached) by postgres() already
    const client = new pg.Client(this.options.clientConfig);
    // Both fire when the server kills the connection; either starts one reconnect.
    client.on("error", () => this.lost(client));
    client.on("end", () => this.lost(client));
    client.on("notification", (message) => {
      if (message.channel !== this.options.channel) return;
      const payload = message.payload ?? "";
      const probe = this.probes.get(payload);
      if (probe) probe(true);
      else if (!payload.startsWith("probe:")) this.options.onNotification(payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(this.options.channel)}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
  }

  private lost(client: pg.Client): void {
    if (client !== this.client) return;
    this.client = null;
    void client.end().catch(() => undefined);
    if (!this.stopped) this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect().then(
        () => {
          if (this.stopped) return;
          this.retryDelayMs = this.options.minRetryDelayMs ?? 50;
          this.options.onReconnected();
        },
        () => {
          if (this.stopped) return;
          this.retryDelayMs = Math.min(this.retryDelayMs * 2, this.options.maxRetryDelayMs ?? 5_000);
          this.scheduleReconnect();
        },
      );
    }, this.retryDelayMs);
    this.retryTimer.unref();
  }
}

/**
 * Starts a listener and, once `reachable` resolves, checks with a probe
 * sent through `notify` that notifications arrive. Resolves to the running
 * listener, or (stopped) to the reason wake-ups are unavailable; rejects
 * (stopped) with `reachable`'s error.
 */
export async function startProbedListener(
  options: PostgresListenerOptions,
  notify: (payload: string) => Promise<unknown>,
  timeoutMs: number,
  reachable: Promise<unknown> = Promise.resolve(),
): Promise<{ listener: PostgresListener } | { unavailable: string }> {
  const listener = new PostgresListener(options);
  // The LISTEN connection opens while the caller checks the database, which
  // saves a connection set-up at start; a database found unreachable
  // rejects here (the caller reports it) instead of counting as no wake-ups.
  const listening = listener.start();
  const settled = listening.catch(() => undefined); // a failed start is reported below, not as an unhandled rejection meanwhile
  try {
    await reachable;
  } catch (error) {
    await settled;
    await listener.stop();
    throw error;
  }
  let unavailable: string;
  try {
    await listening;
    if (await listener.probe(notify, timeoutMs)) return { listener };
    unavailable = `no notification came back within ${timeoutMs} ms (a transaction-mode pooler?)`;
  } catch (error) {
    unavailable = (error as Error).message;
  }
  await listener.stop();
  return { unavailable };
}
