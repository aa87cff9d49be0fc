/**
 * Runs partitioned jobs: the heads of the partitions this server owns, one
 * at a time per partition, in sequence order.
 *
 * Terminology:
 * - **head**: a partition's unfinished job with the lowest sequence; only
 *   it may run. A retry keeps its place; a delayed head, or a waiting
 *   continuation, blocks the partition until it is ready.
 * - **member**: a server with topics, alive while its heartbeat row is
 *   fresh (`partitionMemberExpiryMs`, default 15 s).
 * - **owner**: the member that rendezvous hashing picks for a partition
 *   among the live members; only the owner claims that partition's heads.
 * - **lease / epoch**: a head claim holds the partition's lease, renewed
 *   every third of `leaseMs`, and carries the partition's fencing epoch,
 *   which every new claim bumps; writes of an older epoch are rejected.
 *
 * ```text
 *   membership loop: heartbeat ─► live members ─► owned partitions (rendezvous)
 *   fetcher: owned, unleased partitions ─► partitionHeadClaim ─► one run per claimed head
 *   run:  claimed ─► handler ─► partitionHeadFinish ─┬─► next head claimed in the same write ─► handler ...
 *                     │                             └─► lease freed (next head not ready, or no longer owned)
 *                     └─(lease lost: renewal found another epoch, or forceFailPartitionHead)─► signal aborts, outcome discarded
 * ```
 *
 * Concurrency: at most `workerCount` heads at once (one per partition), next
 * to the regular worker pool. A membership change moves only the partitions
 * whose winner changed; a head already running finishes under its current
 * owner, which then stops claiming that partition. Shutdown deregisters at
 * once, lets running heads finish until the deadline, then aborts them and
 * leaves their partitions to lease expiry.
 */
import type { Backend, ClaimedPartitionJob, JobOutcome, PartitionClaim, PartitionRef } from "../backend/backend.js";
import { ownedPartitions } from "../core/partition/rendezvous.js";
import { describeThrown, JobTimeoutError, LeaseLostError, PayloadDecodeError, ServerStoppedError } from "../errors.js";
import type { JobPublisher } from "../server/publisher.js";
import { attemptEvent, type ResolvedServerOptions } from "../server/server-options.js";
import { failureOutcome } from "../worker/failure-outcome.js";

interface HeldHead {
  job: ClaimedPartitionJob;
  controller: AbortController;
  /** Resolves when the claim is abandoned (lease lost, shutdown deadline). */
  abandoned: Promise<void>;
  abandon: (reason: Error) => void;
  isAbandoned: boolean;
}

const keyOf = (p: PartitionRef) => `${p.topic}\0${p.partition}`;

export class PartitionRunner<C> {
  private owned: PartitionRef[] = [];
  private ownedKeys = new Set<string>();
  private readonly heads = new Map<string, HeldHead>();
  private readonly runs = new Set<Promise<void>>();
  private readonly jobTypes: string[];
  private readonly slots: number;
  private stopping = false;
  private wakeController = new AbortController();
  private readonly stopController = new AbortController();
  private loops: Promise<void>[] = [];
  private renewLoop: Promise<void> | null = null;
  private readonly renewStop = new AbortController();
  /** Told when a finished head released waiting continuations (they may be regular jobs). */
  onReleased: (() => void) | null = null;

  constructor(
    private readonly options: ResolvedServerOptions<C>,
    private readonly backend: Backend,
    private readonly owner: string,
    private readonly publisher: JobPublisher,
  ) {
    this.jobTypes = Object.keys(options.handlers);
    this.slots = options.workerCount;
  }

  /** Partitions this server owns after its last heartbeat. */
  get ownedPartitions(): readonly PartitionRef[] {
    return this.owned;
  }

  /** Heads running in this process now. */
  get runningCount(): number {
    return this.heads.size;
  }

  /** Joins the members (one heartbeat, so ownership is known at once) and starts the loops. */
  async start(): Promise<void> {
    await this.heartbeat();
    this.loops.push(this.runMembership(), this.runFetcher());
    this.renewLoop = this.runRenewer();
  }

  /** New work may be ready (a local enqueue, another process's commit, released continuations). */
  wake(): void {
    this.wakeController.abort(WAKE);
  }

  /** Deregisters at once, waits up to `deadlineMs` for running heads, then abandons the rest to lease expiry. */
  async shutdown(deadlineMs: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.stopController.abort();
    this.wake();
    await Promise.all(this.loops);
    await this.backend.partitionMemberRemove({ member: this.owner })
      .catch((error) => this.report("partition deregistration", error));
    const deadline = new AbortController();
    const allDone = Promise.all([...this.runs]).then(() => deadline.abort());
    await Promise.race([allDone, this.options.clock.sleep(deadlineMs, deadline.signal)]);
    deadline.abort();
    for (const h of this.heads.values()) h.abandon(new ServerStoppedError(`job ${h.job.id} was still running at the shutdown deadline`));
    await Promise.all([...this.runs]);
    this.renewStop.abort();
    await this.renewLoop;
  }

  // ---- membership ---------------------------------------------------------

  private async heartbeat(): Promise<void> {
    const { clock, partitionMemberExpiryMs, topics } = this.options;
    const now = clock.now();
    const { members } = await this.backend.partitionMemberHeartbeat({ member: this.owner, now, expiresAt: now + partitionMemberExpiryMs });
    const owned = ownedPartitions(this.owner, members, topics);
    const keys = new Set(owned.map(keyOf));
    const gained = owned.some((p) => !this.ownedKeys.has(keyOf(p)));
    this.owned = owned;
    this.ownedKeys = keys;
    if (gained) this.wake();
  }

  private async runMembership(): Promise<void> {
    const { clock, partitionMemberExpiryMs } = this.options;
    const interval = Math.max(1, Math.floor(partitionMemberExpiryMs / 3));
    while (!this.stopping) {
      await clock.sleep(interval, this.stopController.signal);
      if (this.stopping) break;
      await this.heartbeat().catch((error) => this.report("partition heartbeat", error));
    }
  }

  // ---- claims -------------------------------------------------------------

  private async runFetcher(): Promise<void> {
    const { clock, pollIntervalMs, leaseMs } = this.options;
    while (!this.stopping) {
      const signal = this.wakeController.signal;
      let waitMs = pollIntervalMs;
      const free = this.slots - this.heads.size;
      const candidates = free > 0 ? this.owned.filter((p) => !this.heads.has(keyOf(p))) : [];
      if (candidates.length > 0) {
        try {
          const now = clock.now();
          const { claimed, nextRunAt } = await this.backend.partitionHeadClaim({
            owner: this.owner, partitions: candidates, limit: free, now, leaseExpiresAt: now + leaseMs, jobTypes: this.jobTypes,
          });
          for (const job of claimed) this.startHead(job);
          if (nextRunAt !== null) waitMs = Math.max(0, Math.min(waitMs, nextRunAt - clock.now()));
        } catch (error) {
          if (this.stopping) break;
          this.report("partition claim", error);
        }
      }
      if (this.stopping) break;
      if (!signal.aborted) await clock.sleep(waitMs, signal);
      if (signal.aborted) this.wakeController = new AbortController();
    }
  }

  private hold(job: ClaimedPartitionJob): HeldHead {
    let abandon!: (reason: Error) => void;
    const controller = new AbortController();
    const held: HeldHead = {
      job, controller, isAbandoned: false, abandon: (reason) => abandon(reason),
      abandoned: new Promise<void>((resolve) => {
        abandon = (reason) => {
          if (held.isAbandoned) return;
          held.isAbandoned = true;
          controller.abort(reason);
          resolve();
        };
      }),
    };
    this.heads.set(keyOf(job), held);
    return held;
  }

  private startHead(job: ClaimedPartitionJob): void {
    const run: Promise<void> = this.runChain(this.hold(job)).catch((error) => this.report("partition head", error)).finally(() => {
      this.runs.delete(run);
      this.wake();
    });
    this.runs.add(run);
  }

  /** Runs a head, writes its outcome, and goes on with the next head when the same write claimed it. */
  private async runChain(held: HeldHead): Promise<void> {
    const key = keyOf(held.job);
    try {
      for (;;) {
        const outcome = await this.attempt(held);
        if (outcome === null || held.isAbandoned) return;
        const next = await this.finish(held, outcome);
        if (!next) return;
        held = this.hold(next);
      }
    } finally {
      if (this.heads.get(key) === held) this.heads.delete(key);
    }
  }

  /** Stores the outcome (retrying a failed write until shutdown); the next head when it was claimed in the same write. */
  private async finish(held: HeldHead, outcome: JobOutcome): Promise<ClaimedPartitionJob | null> {
    const { clock, leaseMs, retentionMs } = this.options;
    const { job } = held;
    const claim: PartitionClaim = { id: job.id, attempt: job.attempt, topic: job.topic, partition: job.partition, epoch: job.epoch };
    for (;;) {
      const now = clock.now();
      const claimNext = !this.stopping && this.ownedKeys.has(keyOf(job)) ? { leaseExpiresAt: now + leaseMs, jobTypes: this.jobTypes } : undefined;
      try {
        const result = await this.backend.partitionHeadFinish({ owner: this.owner, claim, outcome, now, retentionMs, claimNext });
        if (result.applied) this.emit(job, outcome);
        if (result.released > 0) this.onReleased?.();
        return result.next;
      } catch (error) {
        this.report("partition complete", error);
        if (this.stopping || held.isAbandoned) return null; // nothing written: the lease expires and the head runs again
        await clock.sleep(50, this.stopController.signal);
      }
    }
  }

  /** Runs the handler once. Null when the claim was abandoned meanwhile (its outcome must not be written). */
  private async attempt(held: HeldHead): Promise<JobOutcome | null> {
    const { job } = held;
    const handler = this.options.handlers[job.jobType]!;
    let payload: unknown;
    try {
      payload = (handler.decode ?? JSON.parse)(job.payload);
    } catch (cause) {
      return { kind: "fail", error: new PayloadDecodeError(job.jobType, describeThrown(cause), cause).message };
    }
    this.emit(job, "running");
    const ctx = {
      app: this.options.context, jobId: job.id, jobType: job.jobType, attempt: job.attempt, publisher: this.publisher,
      signal: held.controller.signal, partition: { topic: job.topic, partition: job.partition },
    };
    const timeoutMs = this.options.jobTimeoutMs;
    const timerStop = new AbortController();
    const contenders: Promise<unknown>[] = [Promise.resolve().then(() => handler.handle(ctx, payload)), held.abandoned];
    if (timeoutMs !== null) {
      contenders.push(this.options.clock.sleep(timeoutMs, timerStop.signal).then(() => {
        if (!timerStop.signal.aborted) throw new JobTimeoutError(job.id, timeoutMs);
      }));
    }
    try {
      await Promise.race(contenders);
      return held.isAbandoned ? null : { kind: "success" };
    } catch (thrown) {
      if (held.isAbandoned) return null;
      if (thrown instanceof JobTimeoutError) held.controller.abort(thrown);
      return failureOutcome(this.options, handler, job, describeThrown(thrown));
    } finally {
      timerStop.abort();
      contenders[0]!.catch(() => undefined);
    }
  }

  // ---- leases -------------------------------------------------------------

  private async runRenewer(): Promise<void> {
    const { clock, leaseMs } = this.options;
    const interval = Math.max(1, Math.floor(leaseMs / 3));
    let due = clock.now() + interval;
    while (!this.renewStop.signal.aborted) {
      await clock.sleep(due - clock.now(), this.renewStop.signal);
      due = Math.max(due, clock.now()) + interval;
      if (this.renewStop.signal.aborted) break;
      await this.renewOnce().catch((error) => this.report("partition lease renewal", error));
    }
  }

  /** Renews every held head's lease now; a head whose epoch moved on is abandoned. */
  async renewOnce(): Promise<void> {
    const held = [...this.heads.values()].filter((h) => !h.isAbandoned);
    if (held.length === 0) return;
    const claims = held.map(({ job }) => ({ id: job.id, attempt: job.attempt, topic: job.topic, partition: job.partition, epoch: job.epoch }));
    const { renewed } = await this.backend.partitionLeaseRenew({ owner: this.owner, claims, leaseExpiresAt: this.options.clock.now() + this.options.leaseMs });
    const kept = new Set(renewed.map((c) => `${keyOf(c)}\0${c.epoch}`));
    for (const h of held) {
      if (!kept.has(`${keyOf(h.job)}\0${h.job.epoch}`)) h.abandon(new LeaseLostError(h.job.id));
    }
  }

  // ---- events -------------------------------------------------------------

  private emit(job: ClaimedPartitionJob, outcome: JobOutcome | "running"): void {
    if (this.options.eventsEnabled) this.options.onEvent(attemptEvent(job, outcome));
  }

  private report(where: string, error: unknown): void {
    this.options.onEvent({ type: "error", where, error: describeThrown(error) });
  }
}

/** The abort reason of a wake-up (not an error; nobody reads it). */
const WAKE = Symbol("wake");
