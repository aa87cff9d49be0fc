import type { Backend, ClaimedPartitionJob } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import type { HeldClaim } from "./held-claim.js";

/**
 * Writes new lease expiries for held claims; resolves to the claims still
 * held and, of the others, those whose job was cancelled (X3) with the
 * cancel's reason (the rest are lost).
 */
export type RenewLeases = (claims: readonly HeldClaim[], leaseExpiresAt: number) => Promise<RenewedLeases>;

/** What one renewal found. */
export interface RenewedLeases {
  kept: ReadonlySet<HeldClaim>;
  /** Lost because their job was cancelled: the reason given to `cancel` (null: none). */
  cancelled: ReadonlyMap<HeldClaim, string | null>;
}

/** What a {@link LeaseRenewer} is given. */
export interface LeaseRenewerConfig {
  clock: Clock;
  /** Lease length; renewals go every third of it. */
  leaseMs: number;
  /** The claims to renew now (unwritten, not abandoned). */
  heldClaims: () => readonly HeldClaim[];
  /** What renewing is: {@link LeaseRenewer.jobLeases} or {@link LeaseRenewer.partitionLeases}. */
  renew: RenewLeases;
  /** Claims a renewal found lost: their signal must abort and their outcome must not be written. */
  onLost: (lost: HeldClaim[]) => void;
  /** Claims whose job a renewal found `cancelled` (X3), with the reason: abort as cancelled, write nothing. */
  onCancelled: (cancelled: ReadonlyMap<HeldClaim, string | null>) => void;
  onError: (error: unknown) => void;
}

/**
 * Renews the leases of every claim one runner holds, in one write, every
 * third of the lease: regular claims through `jobs.leaseRenew` (the job row's
 * lease), partition heads through `partitions.leaseRenew` (the partition's
 * lease, fenced by epoch). Each renewed claim's `leaseExpiresAt` moves on
 * to the new expiry; a claim missing from the renewed set has been lost
 * (the stuck-job sweep or another partition owner took it), and `onLost`
 * is told, so the handler's signal aborts and its result is discarded; one
 * lost because its job was cancelled (X3: the row is `cancelled`, the
 * renewal says so) goes to `onCancelled` instead.
 *
 * ```text
 *   start() ──► every leaseMs/3: renew held claims ─┬─► kept: leaseExpiresAt = now + leaseMs
 *                                                    └─► missing: onLost
 *   stop() ──► loop exits (idempotent; resolves once it has)
 * ```
 */
export class LeaseRenewer {
  private loop: Promise<void> | null = null;
  private readonly stopController = new AbortController();

  constructor(private readonly config: LeaseRenewerConfig) {}

  /** Regular claims: the job rows' leases, held by `owner`. */
  static jobLeases(backend: Backend, owner: string): RenewLeases {
    return async (claims, leaseExpiresAt) => {
      const { renewed, cancelled = [] } = await backend.jobs.leaseRenew({ owner, claims, leaseExpiresAt });
      const kept = new Set(renewed.map((c) => `${c.id}/${c.attempt}`));
      const gone = new Map(cancelled.map((c) => [`${c.id}/${c.attempt}`, c.reason]));
      return {
        kept: new Set(claims.filter((c) => kept.has(`${c.id}/${c.attempt}`))),
        cancelled: new Map(claims.filter((c) => gone.has(`${c.id}/${c.attempt}`)).map((c) => [c, gone.get(`${c.id}/${c.attempt}`) ?? null])),
      };
    };
  }

  /**
   * Partition heads: the partitions' leases, held by `owner` under each
   * claim's epoch. A claim of a run's follower (P3) renews its partition's
   * lease as the head's did, and is also looked up as a follower: one found
   * `cancelled` (X3) is reported so, though the lease is kept.
   */
  static partitionLeases(backend: Backend, owner: string): RenewLeases {
    const key = (c: { topic: string; partition: number; epoch: number }) => `${c.topic}\0${c.partition}\0${c.epoch}`;
    return async (claims, leaseExpiresAt) => {
      const heads = claims.flatMap((c) => (c.head ? [c.head] : []));
      const followers = claims.flatMap((c) => (c.head && (c.job as ClaimedPartitionJob).follower ? [c.head] : []));
      const { renewed, cancelled = [] } = await backend.partitions.leaseRenew({ owner, claims: heads, leaseExpiresAt, followers });
      const kept = new Set(renewed.map(key));
      const gone = new Map(cancelled.map((c) => [key(c), c.reason]));
      return {
        kept: new Set(claims.filter((c) => c.head !== null && kept.has(key(c.head)))),
        cancelled: new Map(claims.filter((c) => c.head !== null && gone.has(key(c.head))).map((c) => [c, gone.get(key(c.head!)) ?? null])),
      };
    };
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
  }

  /** Renews now (the loop calls it; also a cancel notification, X3; exposed for tests and `renewPartitionLeases`). */
  async renewOnce(): Promise<void> {
    const claims = this.config.heldClaims();
    if (claims.length === 0) return;
    const leaseExpiresAt = this.config.clock.now() + this.config.leaseMs;
    const { kept, cancelled } = await this.config.renew(claims, leaseExpiresAt);
    const lost: HeldClaim[] = [];
    for (const c of claims) {
      if (cancelled.has(c)) continue; // a cancelled follower keeps its partition's lease, but not its attempt
      if (kept.has(c)) c.leaseExpiresAt = Math.max(c.leaseExpiresAt, leaseExpiresAt);
      else lost.push(c);
    }
    if (cancelled.size > 0) this.config.onCancelled(cancelled);
    if (lost.length > 0) this.config.onLost(lost);
  }

  private async run(): Promise<void> {
    const { clock, leaseMs } = this.config;
    const signal = this.stopController.signal;
    const interval = Math.max(1, Math.floor(leaseMs / 3));
    // Renewals keep a schedule (every `interval` from start), so time spent in
    // the renewal write, or a clock that moved meanwhile, does not push the
    // next one back; after a stall it renews once and goes on from then.
    let due = clock.now() + interval;
    while (!signal.aborted) {
      await clock.sleep(due - clock.now(), signal);
      due = Math.max(due, clock.now()) + interval;
      if (signal.aborted) break;
      try {
        await this.renewOnce();
      } catch (error) {
        this.config.onError(error);
      }
    }
  }
}
