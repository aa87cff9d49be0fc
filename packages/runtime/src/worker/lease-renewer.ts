import type { Backend, ClaimKey } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";

/**
 * Renews the execution leases of every claim this server holds, in one write,
 * every third of the lease. A claim missing from the renewed set has been
 * lost (its lease expired and the stuck-job sweep took it): `onLost` is told,
 * so the handler's signal aborts and its result is discarded.
 *
 * Lifecycle: `start()` begins the loop, `stop()` ends it (idempotent) and
 * resolves once the loop has exited.
 */
export class LeaseRenewer {
  private loop: Promise<void> | null = null;
  private readonly stopController = new AbortController();

  constructor(
    private readonly backend: Backend,
    private readonly clock: Clock,
    private readonly owner: string,
    private readonly leaseMs: number,
    private readonly heldClaims: () => ClaimKey[],
    private readonly onLost: (lost: ClaimKey[]) => void,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
  }

  /** Renews now; exposed for tests. */
  async renewOnce(): Promise<void> {
    const claims = this.heldClaims();
    if (claims.length === 0) return;
    const { renewed } = await this.backend.leaseRenew({ owner: this.owner, claims, leaseExpiresAt: this.clock.now() + this.leaseMs });
    const kept = new Set(renewed.map((c) => `${c.id}/${c.attempt}`));
    const lost = claims.filter((c) => !kept.has(`${c.id}/${c.attempt}`));
    if (lost.length > 0) this.onLost(lost);
  }

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    const interval = Math.max(1, Math.floor(this.leaseMs / 3));
    // Renewals keep a schedule (every `interval` from start), so time spent in
    // the renewal write, or a clock that moved meanwhile, does not push the
    // next one back; after a stall it renews once and goes on from then.
    let due = this.clock.now() + interval;
    while (!signal.aborted) {
      await this.clock.sleep(due - this.clock.now(), signal);
      due = Math.max(due, this.clock.now()) + interval;
      if (signal.aborted) break;
      try {
        await this.renewOnce();
      } catch (error) {
        this.onError(error);
      }
    }
  }
}
