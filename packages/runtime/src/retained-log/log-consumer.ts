/**
 * A member of a consumer group (docs/semantics.md L3), started by `RetainedLog.consume()`.
 *
 * ```text
 *   consume() ──► running: heartbeat, lease the partitions it wins, read a batch,
 *                 run the handler, commit ──stop()──► stopped (leases freed, deregistered)
 * ```
 *
 * Members of one group share the topic's partitions by rendezvous hashing
 * over the group's live members (heartbeat every 5 s, expiry 15 s as
 * servers, P5): each member leases the partitions it wins, so a member
 * joining moves only the partitions it wins, and a member leaving (stop, or
 * its heartbeat expiring) frees its partitions for their new winners. A
 * partition is held under a 30 s lease with an epoch, renewed every 10 s
 * while the member runs (handler included). When the lease is lost (another
 * member took it after it expired) the handler's `signal` aborts and its
 * commit is refused with `STALE_EPOCH`: the new holder resumes from the last
 * commit, so records after it are handled again (at-least-once), none
 * skipped. A member handles one batch at a time, partitions in turn, each
 * partition in offset order.
 *
 * A handler that throws (or rejects): the batch is not committed and that
 * partition waits, then is delivered again from the same offset; the wait
 * doubles from 1 s to at most 30 s per failure in a row, and an `error`
 * event (`where: "log handler"`) says what failed. Other partitions go on.
 */
import { randomUUID } from "node:crypto";
import type { LogStore } from "../backend/log-store.js";
import type { Clock } from "../core/clock.js";
import { ownedPartitions } from "../core/partition/rendezvous.js";
import { OffsetOutOfRangeError, StaleEpochError } from "../errors.js";
import { errorEvent, type ServerEvent } from "../events/server-event.js";
import type { LogRecord } from "./log-record.js";

/** How long a member's partition lease lasts without renewal, ms. */
export const LOG_LEASE_MS = 30_000;
/** How long a member counts as live after its last heartbeat, ms (as servers, P5). */
export const LOG_MEMBER_EXPIRY_MS = 15_000;
/** First wait before a failed batch is delivered again, ms; doubles per failure in a row up to {@link LOG_RETRY_MAX_MS}. */
export const LOG_RETRY_BASE_MS = 1_000;
/** Longest wait before a failed batch is delivered again, ms. */
export const LOG_RETRY_MAX_MS = 30_000;

/** What a consumer's handler gets: one batch of one partition. */
export interface LogBatch {
  partition: number;
  /** In offset order, at least one. */
  records: LogRecord[];
  /** The lease epoch the batch's commit is fenced with. */
  epoch: number;
  /** Aborted when the member loses the partition's lease: the commit would be refused. */
  signal: AbortSignal;
}

/** Options of `RetainedLog.consume()`. */
export interface ConsumeOptions {
  topic: string;
  group: string;
  /** Handles one batch; when it resolves, the offset after the batch is committed. */
  handler: (batch: LogBatch) => Promise<void> | void;
  /** Most records per batch. Default 100. */
  maxBatch?: number;
  /** Where a group with no commit on a partition starts: `"oldest"` retained record (default) or `"latest"` (the end when the member takes it). */
  startFrom?: "oldest" | "latest";
  /** How long a member waits before looking again when it has nothing to handle, ms. Default 1000. */
  pollIntervalMs?: number;
}

interface Held {
  epoch: number;
  next: number;
  abort: AbortController;
  failures: number;
  retryAt: number;
}

/** Settings a {@link LogConsumer} runs with, checked by `RetainedLog.consume()`. */
export interface LogConsumerSettings {
  topic: string;
  partitions: number;
  group: string;
  handler: ConsumeOptions["handler"];
  maxBatch: number;
  startFrom: "oldest" | "latest";
  pollIntervalMs: number;
  store: LogStore;
  clock: Clock;
  read: (partition: number, fromOffset: number, limit: number) => Promise<LogRecord[]>;
  onEvent: (event: ServerEvent) => void;
}

/** One running member of a consumer group; see the module doc. */
export class LogConsumer {
  /** This member's id in the group (a random UUID). */
  readonly memberId = randomUUID();
  private readonly held = new Map<number, Held>();
  private readonly stopping = new AbortController();
  private members: string[] = [];
  private nextHeartbeat = 0;
  private nextRenewal = 0;
  private loop: Promise<void> = Promise.resolve();
  private renewals: Promise<void> = Promise.resolve();
  /** Lease changes (claim, renewal, release) of the two loops, one at a time: a renewal never re-takes a lease the main loop just freed. */
  private leaseTurn: Promise<unknown> = Promise.resolve();

  constructor(private readonly s: LogConsumerSettings) {}

  /** Registers the member (its first heartbeat) and starts its loops. */
  async start(): Promise<void> {
    await this.heartbeat();
    this.loop = this.run();
    this.renewals = this.renewLoop();
  }

  /** The partitions this member holds now, ascending. */
  assigned(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /**
   * Graceful stop: lets the batch in flight finish and commit, then frees
   * this member's leases and deregisters it at once, so the others take its
   * partitions on their next look. Idempotent. There is no deadline: a
   * handler that never settles keeps `stop()` waiting (its lease expires
   * meanwhile, and the batch goes to another member).
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    await this.renewals;
    for (const partition of [...this.held.keys()]) await this.release(partition);
    await this.s.store.memberRemove({ topic: this.s.topic, group: this.s.group, memberId: this.memberId });
  }

  private get key() {
    return { topic: this.s.topic, group: this.s.group, memberId: this.memberId };
  }

  private async heartbeat(): Promise<void> {
    const now = this.s.clock.now();
    await this.s.store.memberHeartbeat({ ...this.key, expiresAt: now + LOG_MEMBER_EXPIRY_MS, now });
    this.members = await this.s.store.memberList({ topic: this.s.topic, group: this.s.group, now });
    this.nextHeartbeat = now + LOG_MEMBER_EXPIRY_MS / 3;
  }

  /** Renews the leases held (and the heartbeat) on time while a handler runs; the main loop does the same between batches. */
  private async renewLoop(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      await this.s.clock.sleep(Math.min(LOG_LEASE_MS / 3, LOG_MEMBER_EXPIRY_MS / 3), this.stopping.signal);
      if (this.stopping.signal.aborted) return;
      await this.guard("log lease renewal", () => this.exclusive(() => this.upkeep()));
    }
  }

  /** Heartbeat and lease renewal, when due. */
  private async upkeep(): Promise<void> {
    const now = this.s.clock.now();
    if (now >= this.nextHeartbeat) await this.heartbeat();
    if (now >= this.nextRenewal) {
      this.nextRenewal = now + LOG_LEASE_MS / 3;
      for (const [partition, h] of [...this.held]) {
        const lease = await this.claim(partition);
        if (!lease || lease.epoch !== h.epoch) this.lose(partition);
      }
    }
  }

  private async run(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      let handled = false;
      await this.guard("log partition claim", () => this.exclusive(() => this.rebalance()));
      for (const partition of this.assigned()) {
        if (this.stopping.signal.aborted) break;
        handled = (await this.guard("log batch", () => this.batch(partition))) || handled;
      }
      if (!handled) await this.s.clock.sleep(this.s.pollIntervalMs, this.stopping.signal);
    }
  }

  /** Frees the partitions this member no longer wins; takes the ones it wins and does not hold (those still leased elsewhere: next time). */
  private async rebalance(): Promise<void> {
    await this.upkeep();
    const wins = new Set(ownedPartitions(this.memberId, this.members, [{ name: this.s.topic, partitions: this.s.partitions }]).map((p) => p.partition));
    for (const partition of this.assigned()) if (!wins.has(partition)) await this.release(partition);
    for (const partition of wins) {
      if (this.held.has(partition) || this.stopping.signal.aborted) continue;
      const lease = await this.claim(partition);
      if (!lease) continue;
      let next = lease.committedOffset;
      if (next === null) {
        const lag = (await this.s.store.lagList({ topic: this.s.topic, group: this.s.group })).find((r) => r.partition === partition);
        next = this.s.startFrom === "latest" ? (lag?.endOffset ?? 0) : (lag?.startOffset ?? 0);
        // "latest": the start is fixed now, so a member taking over later starts there too.
        if (this.s.startFrom === "latest") await this.commit(partition, lease.epoch, next);
      }
      this.held.set(partition, { epoch: lease.epoch, next, abort: new AbortController(), failures: 0, retryAt: 0 });
    }
  }

  private exclusive<T>(step: () => Promise<T>): Promise<T> {
    const turn = this.leaseTurn.then(step);
    this.leaseTurn = turn.catch(() => {});
    return turn;
  }

  private claim(partition: number) {
    const now = this.s.clock.now();
    return this.s.store.leaseClaim({ ...this.key, partition, expiresAt: now + LOG_LEASE_MS, now });
  }

  /** Reads one batch of `partition`, runs the handler, commits. Resolves true when it handled records. */
  private async batch(partition: number): Promise<boolean> {
    const h = this.held.get(partition);
    if (!h || this.s.clock.now() < h.retryAt) return false;
    let records: LogRecord[];
    try {
      records = await this.s.read(partition, h.next, this.s.maxBatch);
    } catch (error) {
      if (!(error instanceof OffsetOutOfRangeError)) throw error;
      // Retention deleted records this group had not read: go on from the oldest retained one.
      h.next = error.oldestOffset;
      return true;
    }
    if (records.length === 0) return false;
    try {
      await this.s.handler({ partition, records, epoch: h.epoch, signal: h.abort.signal });
    } catch (error) {
      h.failures += 1;
      h.retryAt = this.s.clock.now() + Math.min(LOG_RETRY_MAX_MS, LOG_RETRY_BASE_MS * 2 ** (h.failures - 1));
      this.event("log handler", error);
      return false;
    }
    h.failures = 0;
    const next = records.at(-1)!.offset + 1;
    if (await this.commit(partition, h.epoch, next)) h.next = next;
    return true;
  }

  /** Commits fenced by `epoch`; a stale epoch drops the partition (another member holds it now). Resolves false then. */
  private async commit(partition: number, epoch: number, offset: number): Promise<boolean> {
    try {
      await this.s.store.offsetCommit({ topic: this.s.topic, group: this.s.group, partition, epoch, offset, now: this.s.clock.now() });
      return true;
    } catch (error) {
      if (!(error instanceof StaleEpochError)) throw error;
      this.event("log commit", error);
      this.lose(partition);
      return false;
    }
  }

  /** The lease is gone: abort the handler's signal and forget the partition (no release: it is not ours). */
  private lose(partition: number): void {
    this.held.get(partition)?.abort.abort();
    this.held.delete(partition);
  }

  /** Gives the partition up: another member may take it at once. */
  private async release(partition: number): Promise<void> {
    this.held.delete(partition);
    await this.s.store.leaseRelease({ ...this.key, partition });
  }

  /** Runs a step; a failure is an `error` event and the loop goes on. */
  private async guard<T>(where: string, step: () => Promise<T>): Promise<T | false> {
    try {
      return await step();
    } catch (error) {
      this.event(where, error);
      return false;
    }
  }

  private event(where: string, error: unknown): void {
    this.s.onEvent(errorEvent(where, error));
  }
}
