/**
 * One server's view of the namespace's paused job types and topics
 * (docs/semantics.md X4), shared by its worker pool and partition runner,
 * which leave paused types out of the `jobTypes` they claim with and skip
 * the partitions of paused topics. The claim statements are not changed:
 * pausing narrows what a server asks for.
 *
 * Cost: the set is read (`control.pausedList`, a primary-key range of a few
 * rows) at most once per poll interval, before a claim, never per claim. A
 * wake-up (a local enqueue, another process's commit) marks it stale only
 * while something is paused, so that a resume, whose commit wakes every
 * server, is seen at once, and a namespace with nothing paused pays no read
 * per wake-up. A pause made elsewhere is seen within one poll interval.
 * A read that fails keeps the set last read (reported as an `error` event);
 * the claims then fail the same way and are tried again.
 *
 * A pause or resume made through this server holds for its own claims once
 * it resolves: the loops pass their claims through {@link PauseWatch.track},
 * and the change waits in {@link PauseWatch.settled} for those made with a
 * set read before it. A claim under way with the old set could otherwise
 * take a job enqueued after the pause resolved (its statement waiting for a
 * connection, say); jobs such a claim took before are under way and run.
 */
import type { Backend } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";

export class PauseWatch {
  private types: ReadonlySet<string> = new Set();
  private topics: ReadonlySet<string> = new Set();
  /** When the set was last read; -Infinity before the first read. */
  private readAt = Number.NEGATIVE_INFINITY;
  private stale = true;
  private reading: Promise<void> | null = null;
  /** Bumped when the set read differs from the one before, so claimable lists are rebuilt only then. */
  private version = 0;
  private readonly claimable = new WeakMap<readonly string[], { version: number; types: string[] }>();
  /** The loops' claims under way (see {@link track}). */
  private readonly claims = new Set<Promise<unknown>>();

  constructor(
    private readonly backend: Backend,
    private readonly clock: Clock,
    /** How old the set may be: the server's `pollIntervalMs`. */
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** A wake-up arrived: while something is paused, read the set again before the next claim (a resume wakes every server). */
  wake(): void {
    if (this.types.size > 0 || this.topics.size > 0) this.stale = true;
  }

  /** This process paused or resumed something: read the set again before the next claim. */
  invalidate(): void {
    this.stale = true;
  }

  /** Tracks a claim made with the set as read now, until it settles; returns it. */
  track<T>(claim: Promise<T>): Promise<T> {
    this.claims.add(claim);
    const drop = () => void this.claims.delete(claim);
    claim.then(drop, drop);
    return claim;
  }

  /**
   * Resolves once every claim made with a set read before this call has settled: the claims under way, and the one
   * a loop makes with a read under way now (a loop claims in the same turn as its read resolves, so one
   * `setImmediate` after that read every such claim is tracked). Never rejects. Claims after it read the set again
   * first (call {@link invalidate} before).
   */
  async settled(): Promise<void> {
    if (this.reading !== null) await this.reading;
    await new Promise<void>((resolve) => setImmediate(resolve));
    await Promise.allSettled([...this.claims]);
  }

  /** True while {@link refresh} would read nothing: the set is not stale and was read within the poll interval. */
  get current(): boolean {
    return !this.stale && this.clock.now() - this.readAt < this.intervalMs;
  }

  /** Reads the set when it is stale or older than the poll interval; resolves at once otherwise. Never rejects. */
  refresh(): Promise<void> {
    if (this.current) return Promise.resolve();
    if (this.reading !== null && !this.stale) return this.reading;
    // Stale with a read in flight: that read began before the pause, resume or wake-up that made the set stale
    // (read() clears `stale` as it starts), so it may miss it; read again after it rather than claim with it.
    this.stale = false;
    const reading: Promise<void> = (this.reading === null ? this.read() : this.reading.then(() => this.read())).finally(() => {
      if (this.reading === reading) this.reading = null;
    });
    this.reading = reading;
    return reading;
  }

  /** `jobTypes` without the paused ones (the same array while nothing of it is paused; cached per set read). */
  claimableTypes(jobTypes: readonly string[]): readonly string[] {
    if (this.types.size === 0) return jobTypes;
    const cached = this.claimable.get(jobTypes);
    if (cached?.version === this.version) return cached.types;
    const types = jobTypes.filter((t) => !this.types.has(t));
    this.claimable.set(jobTypes, { version: this.version, types });
    return types;
  }

  /** The paused job types, as last read. */
  get pausedTypes(): ReadonlySet<string> {
    return this.types;
  }

  topicPaused(topic: string): boolean {
    return this.topics.has(topic);
  }

  /** Whether anything is paused (as last read). */
  get any(): boolean {
    return this.types.size > 0 || this.topics.size > 0;
  }

  private async read(): Promise<void> {
    this.stale = false;
    const startedAt = this.clock.now();
    try {
      const list = await this.backend.control.pausedList();
      const types = new Set(list.filter((p) => p.kind === "type").map((p) => p.name));
      const topics = new Set(list.filter((p) => p.kind === "topic").map((p) => p.name));
      this.readAt = startedAt;
      if (sameSet(types, this.types) && sameSet(topics, this.topics)) return;
      this.types = types;
      this.topics = topics;
      this.version++;
    } catch (error) {
      this.stale = true;
      this.onError(error);
    }
  }
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
