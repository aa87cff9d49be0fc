/**
 * The partition statements of the PostgreSQL backend (topics, head claims,
 * fencing, membership), as fixed SQL run as named prepared statements.
 * A partition's jobs are named with `inPartition` and ordered with
 * `partitionOrder`, so that their probes keep to the partition indexes on a
 * table whose statistics are missing or stale.
 *
 * Locks: a head claim locks partition rows first (`FOR UPDATE OF p SKIP
 * LOCKED`: servers skip each other's partitions rather than wait), then
 * reads each head with one probe of `later_jobs_partition_head` (a LATERAL
 * `ORDER BY seq LIMIT 1`), so the jobs queued behind a blocked head are
 * never read. Those heads are read in the statement's snapshot, before the
 * locks are granted, so a claim takes a head only if it is still in the stage
 * and at the attempt it was read at; otherwise (another server claimed, ran
 * and freed the partition meanwhile, or a cancel came between) the claim's
 * transaction is rolled back and run again (see postgres-head-claim.ts).
 * Every writer takes a partition row before that partition's job
 * rows (enqueue reserves sequences before reading parents), and a writer of
 * several partition rows takes them in (topic, partition) order (enqueue,
 * lease renewal), so head claims, finishes, renewals and enqueues cannot
 * deadlock.
 *
 * Runs (P3): a claim reads its heads' followers with one statement (a
 * LATERAL range per partition, {@link PostgresPartitionQueries.behind}) and
 * records each run's last sequence with the lease. A run whose jobs all
 * succeeded takes a one-statement path (`successNext` for a run of one,
 * `runSuccessNext` with followers), which claims the next run and reads its
 * followers too; a run with a failure is one transaction: the followers
 * written as claimed then finished with the head, and the next run claimed.
 */
import { PartitionCountMismatchError } from "../../errors.js";
import type * as B from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import { cancelCandidates, claimedHead, readyAt, renewalCancelled, runFollowers } from "../shared/partition-heads.js";
import { type HeadClaimHost, PostgresHeadClaim } from "./postgres-head-claim.js";
import { PostgresPartitionQueries } from "./postgres-partition-queries.js";
import type { PostgresJobStore } from "./postgres-job-store.js";
import type { Execute } from "./postgres-statement.js";

/** How many followers the next run claimed with a one-statement finish may take: `runMax` less its head. */
const runTail = (params: B.PartitionHeadFinishParams): number => Math.max(0, Math.floor(params.claimNext?.runMax ?? 1) - 1);

/** The result a finish stores (X6): a success's, else none. */
const resultOf = (o: B.JobOutcome): unknown => (o.kind === "success" ? (o.result ?? null) : null);

/** What the store needs of the backend. */
export interface PostgresPartitionHost extends HeadClaimHost {
  readonly execute: Execute;
  /** The done channel `waitFor` listens on (X6). */
  readonly doneChannel: string;
}

export class PostgresPartitionStore implements B.PartitionStore {
  private readonly q: PostgresPartitionQueries;
  private readonly heads: PostgresHeadClaim;

  constructor(
    private readonly host: PostgresPartitionHost,
    /** The job statements, whose finish bodies a head's finish reuses. */
    private readonly jobs: PostgresJobStore,
    schema: string,
  ) {
    this.q = new PostgresPartitionQueries(schema);
    this.heads = new PostgresHeadClaim(host, this.q);
  }

  private get ns(): string {
    return this.host.namespace;
  }

  async topicRegister(params: B.TopicRegisterParams): Promise<void> {
    if (params.topics.length === 0) return;
    await this.host.inTransaction("topic registration", async (execute) => {
      const check = async () => {
        for (const r of await execute(this.q.topicRead, [this.ns, params.topics.map((t) => t.name)])) {
          const t = params.topics.find((x) => x.name === r.topic)!;
          if (Number(r.partitions) !== t.partitions) throw new PartitionCountMismatchError(t.name, Number(r.partitions), t.partitions);
        }
      };
      await check();
      for (const t of [...params.topics].sort((a, b) => (a.name < b.name ? -1 : 1))) {
        await execute(this.q.topicInsert, [this.ns, t.name, t.partitions, params.now]);
      }
      await check(); // another server may have registered a topic meanwhile, with another count
    });
  }

  async headClaim(params: B.PartitionHeadClaimParams): Promise<B.PartitionHeadClaimResult> {
    if (params.limit <= 0 || params.partitions.length === 0) return { claimed: [], nextRunAt: null };
    const types = new Set(params.jobTypes);
    // Heads that moved since they were read: nothing claimed, and the fetcher comes back at once.
    return this.heads.fresh("partition head claim", { claimed: [], nextRunAt: params.now }, async (execute) => {
      const heads = await execute(this.q.freeHeads, [this.ns, params.partitions.map((p) => p.topic), params.partitions.map((p) => p.partition), params.now]);
      const chosen: Row[] = [];
      let nextRunAt: number | null = null;
      for (const h of heads) {
        if (chosen.length >= params.limit || !types.has(String(h.job_type))) continue;
        const at = readyAt(h, params.now);
        if (at === null) continue;
        if (at > params.now) nextRunAt = nextRunAt === null ? at : Math.min(nextRunAt, at);
        else chosen.push(h);
      }
      if (chosen.length === 0) return { claimed: [], nextRunAt };
      return {
        claimed: await this.heads.claim(execute, {
          heads: chosen,
          owner: params.owner,
          leaseExpiresAt: params.leaseExpiresAt,
          now: params.now,
          jobTypes: params.jobTypes,
          runMax: params.runMax,
        }),
        nextRunAt,
      };
    });
  }

  async headFinish(params: B.PartitionHeadFinishParams): Promise<B.PartitionHeadFinishResult> {
    const { claim, now } = params;
    const followers = params.followers ?? [];
    if (params.outcome.kind === "success" && followers.length === 0) {
      const [row] = await this.host.execute(this.q.successNext(runTail(params)), this.successArgs(params));
      await this.leftOverLease(row, params);
      let released = Number(row?.released ?? 0);
      if (Number(row?.waiters ?? 0) > 0) released += await this.jobs.releaseChildren(this.host.execute, [claim.id], now);
      return { applied: Number(row?.applied ?? 0) > 0, released, next: this.claimedNext(row, params) };
    }
    if (params.outcome.kind === "success" && followers.every((f) => f.outcome.kind === "success")) return this.runSuccessNext(params, followers);
    return this.heads.fresh("partition head finish", null, async (execute) => {
      const [held] = await execute(this.q.held, [this.ns, claim.topic, claim.partition, claim.epoch, params.owner]);
      if (!held) return followers.length > 0 ? { applied: false, released: 0, next: null, followersApplied: 0 } : { applied: false, released: 0, next: null };
      // The followers that ran become `running` first (their claim, at their start), then finish with the head.
      const ran =
        followers.length === 0
          ? []
          : await execute(this.q.followersRun, [
              this.ns,
              params.owner,
              followers.map((f) => f.id),
              followers.map((f) => f.attempt),
              followers.map((f) => f.startedAt),
            ]);
      const written = followers.slice(0, ran.length);
      const byRetention = new Map<number, B.JobFinish[]>([[params.retentionMs, [{ id: claim.id, attempt: claim.attempt, outcome: params.outcome }]]]);
      for (const f of written) {
        const group = byRetention.get(f.retentionMs);
        if (group) group.push(f);
        else byRetention.set(f.retentionMs, [f]);
      }
      let applied = false;
      let released = 0;
      for (const [retentionMs, finishes] of byRetention) {
        const exp = now + retentionMs;
        const result = await this.jobs.finishRows(execute, this.jobs.finishValues(finishes, now, exp, Number.MAX_SAFE_INTEGER), exp, now);
        applied ||= result.applied.some((a) => a.id === claim.id);
        released += result.released;
      }
      const next = await this.claimAfter(execute, params, held);
      return followers.length > 0 ? { applied, released, next, followersApplied: written.length } : { applied, released, next };
    });
  }

  /**
   * A run whose head and followers all succeeded, and the next run claimed (`claimNext`) or the lease freed: one
   * statement (`runSuccessNext`), as `successNext` for a run of one. The continuations of the jobs written that it
   * could not see (committed while it waited for their parent's lock, fan-in) are released by a statement after it.
   */
  private async runSuccessNext(params: B.PartitionHeadFinishParams, followers: readonly B.PartitionFollowerOutcome[]): Promise<B.PartitionHeadFinishResult> {
    const { now } = params;
    const [row] = await this.host.execute(this.q.runSuccessNext(runTail(params)), [
      ...this.successArgs(params),
      followers.map((f) => f.id),
      followers.map((f) => f.attempt),
      followers.map((f) => f.startedAt),
      followers.map((f) => now + f.retentionMs),
      followers.map((f) => resultOf(f.outcome)),
    ]);
    if (!row || Number(row.held) === 0) return { applied: false, released: 0, next: null, followersApplied: 0 };
    await this.leftOverLease(row, params);
    let released = Number(row.released ?? 0);
    if (row.marked) released += await this.jobs.releaseChildren(this.host.execute, String(row.marked).split(","), now);
    return { applied: Number(row.applied) > 0, released, next: this.claimedNext(row, params), followersApplied: Number(row.followers_applied) };
  }

  /**
   * A one-statement finish that read a ready next head but could not claim it (cancelled after the statement's
   * snapshot) moved the lease to the next epoch with no head running: freed here, so the partition goes on now
   * rather than when that lease expires.
   */
  private async leftOverLease(row: Row | undefined, params: B.PartitionHeadFinishParams): Promise<void> {
    const epoch = params.claim.epoch + 1;
    if (!row || row.id || row.epoch === null || row.epoch === undefined || Number(row.epoch) !== epoch) return;
    await this.host.execute(this.q.leaseFree, [this.ns, params.claim.topic, params.claim.partition, epoch]);
  }

  /** `$1`–`$16` of `successNext` and `runSuccessNext` (the same numbering in both): the head's finish and the next run's claim. */
  private successArgs(params: B.PartitionHeadFinishParams): unknown[] {
    const { claim, now } = params;
    const next = params.claimNext;
    return [
      this.ns,
      claim.topic,
      claim.partition,
      claim.epoch,
      params.owner,
      claim.id,
      now,
      now + params.retentionMs,
      claim.attempt,
      next !== undefined,
      next?.jobTypes ?? [],
      next?.leaseExpiresAt ?? null,
      ...this.host.notifyArgs,
      resultOf(params.outcome),
      this.host.doneChannel,
    ];
  }

  /** The next run a one-statement finish claimed (its head and followers), from the statement's row; null when it claimed none. */
  private claimedNext(row: Row | undefined, params: B.PartitionHeadFinishParams): B.ClaimedPartitionJob | null {
    const next = params.claimNext;
    const head = row?.id ? claimedHead(row, params.claim, Number(row.epoch)) : null;
    const behind = (row?.followers ?? []) as Row[];
    if (head && next && behind.length > 0) head.followers = runFollowers(behind, params.claim, head.epoch, params.now, next.jobTypes, behind.length);
    return head;
  }

  /** The partition's next run claimed after a finish (`params.claimNext`), or its lease freed when there is none. */
  private async claimAfter(execute: Execute, params: B.PartitionHeadFinishParams, held: Row): Promise<B.ClaimedPartitionJob | null> {
    const { claim, now } = params;
    let next: B.ClaimedPartitionJob | null = null;
    if (params.claimNext) {
      // The next head and the jobs behind it in one read (the claim then reads no followers of its own).
      const [h, ...behind] = await execute(this.q.ahead(Math.max(1, Math.floor(params.claimNext.runMax ?? 1))), [this.ns, claim.topic, claim.partition]);
      const at = h ? readyAt(h, now) : null;
      if (h && at !== null && at <= now && params.claimNext.jobTypes.includes(String(h.job_type))) {
        const ref = { topic: claim.topic, partition_no: claim.partition };
        [next = null] = await this.heads.claim(execute, {
          heads: [{ ...h, ...held, ...ref }],
          owner: params.owner,
          leaseExpiresAt: params.claimNext.leaseExpiresAt,
          now,
          jobTypes: params.claimNext.jobTypes,
          runMax: params.claimNext.runMax,
          read: behind.map((r) => ({ ...r, ...ref })),
        });
      }
    }
    if (!next) await execute(this.q.leaseFree, [this.ns, claim.topic, claim.partition, claim.epoch]);
    return next;
  }

  async headRelease(params: B.PartitionHeadReleaseParams): Promise<B.PartitionHeadReleaseResult> {
    if (params.claims.length === 0) return { released: [] };
    const cs = params.claims;
    const rows = await this.host.execute(this.q.headRelease, [
      this.ns,
      params.owner,
      cs.map((c) => c.topic),
      cs.map((c) => c.partition),
      cs.map((c) => c.epoch),
      cs.map((c) => c.id),
      cs.map((c) => c.attempt),
      params.now,
      ...this.host.notifyArgs,
      params.reason ?? null,
    ]);
    const put = new Set(rows.map((r) => String(r.id)));
    return { released: cs.filter((c) => put.has(c.id)) };
  }

  async leaseRenew(params: B.PartitionLeaseRenewParams): Promise<B.PartitionLeaseRenewResult> {
    if (params.claims.length === 0) return { renewed: [] };
    const sorted = [...params.claims].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
    const rows = await this.host.execute(this.q.renew, [
      params.leaseExpiresAt,
      this.ns,
      params.owner,
      sorted.map((c) => c.topic),
      sorted.map((c) => c.partition),
      sorted.map((c) => c.epoch),
    ]);
    const kept = new Set(rows.map((r) => `${String(r.topic)}\0${Number(r.partition_no)}\0${Number(r.epoch)}`));
    const renewed = params.claims.filter((k) => kept.has(`${k.topic}\0${k.partition}\0${k.epoch}`));
    const followers = params.followers ?? [];
    if (renewed.length === params.claims.length && followers.length === 0) return { renewed };
    const lost = params.claims.filter((k) => !renewed.includes(k));
    return { renewed, cancelled: renewalCancelled(lost, followers, await this.jobs.cancelledClaims(cancelCandidates(lost, followers))) };
  }

  async memberHeartbeat(params: B.PartitionMemberHeartbeatParams): Promise<B.PartitionMemberHeartbeatResult> {
    const rows = await this.host.execute(this.q.heartbeat, [this.ns, params.member, params.expiresAt, params.now]);
    return { members: rows.map((r) => String(r.member_id)) };
  }

  async memberRemove(params: B.PartitionMemberRemoveParams): Promise<void> {
    await this.host.execute(this.q.memberRemove, [this.ns, params.member]);
  }

  async headForceFail(params: B.PartitionHeadForceFailParams): Promise<string | null> {
    const expires = params.now + params.retentionMs;
    return this.host.inTransaction("partition head force-fail", async (execute) => {
      // The partition row first (every writer's lock order), then the head read in a statement of its own,
      // whose snapshot sees a finish that committed while the lock was awaited.
      await execute(this.q.lock, [this.ns, params.topic, params.partition]);
      const [h] = await execute(this.q.headOf, [this.ns, params.topic, params.partition]);
      if (!h) return null; // no head: nothing changes, the lease and epoch stay (as on SQLite)
      const id = String(h.id);
      await execute(this.q.forceFail, [this.ns, id, params.now, expires, params.reason, this.host.doneChannel]);
      await this.jobs.failWaitingChildren(execute, [{ id, error: params.reason }], params.now, expires);
      await execute(this.q.bumpEpoch, [this.ns, params.topic, params.partition]);
      return id;
    });
  }

  async historyTruncate(params: B.PartitionHistoryTruncateParams): Promise<number> {
    const rows = await this.host.execute(this.q.truncate, [this.ns, params.topic, params.partition, params.keep]);
    return rows.length;
  }
}
