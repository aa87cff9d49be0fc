/**
 * X9 on PostgreSQL: the limited step of a claim and the limits a starting
 * server stores (`later_limits`, migration 19). Not on the hot path: a
 * server whose handlers have no limit never runs any of this.
 *
 * How a claim respects a limit without scanning the backlog: per limited
 * type, one locked primary-key read of its limits row, one count of its
 * running jobs over the partial index `later_jobs_running` (the running
 * regular jobs of the namespace, every type's, plus dead entries until
 * vacuum; the type is a filter on the rows), and the plain claim statement
 * narrowed to the type with `LIMIT` the free slots, which reads only as
 * many ready rows as it takes. No index of running jobs by type: every
 * claim and finish of every job would maintain it, limited or not, and the
 * servers without limits would pay for it; the count's cost (the
 * namespace's running jobs) is paid only by limited claims. Partitioned
 * jobs (`topic` set) are claimed as partition heads, not here: they are
 * neither limited nor counted. The row lock
 * (`FOR UPDATE`, held until commit) serialises the limited claims of one
 * type across servers: a claim that waited for it counts, in its own
 * statement's snapshot (READ COMMITTED), the jobs the other claim committed.
 * Finishes do not take the lock; a finish committed after the count only
 * makes the claim take fewer, never more. A type with `groupConcurrency`
 * is claimed by `PostgresGroupClaim` instead of the narrowed plain claim,
 * under the same lock and within the same type slots.
 *
 * The common case in one statement: a type whose stored limit is a
 * concurrency alone is first claimed by `claimUnderConcurrency`, with no
 * transaction and no lock wait. Every limited claim writes its type's limits
 * row (the transaction below too: its lock is an UPDATE, not only `FOR
 * UPDATE`), so a claim of the type committed after a statement's snapshot
 * shows as a newer version of that row. The one statement writes the row
 * only if it is still the version its snapshot read (`ctid`), and then its
 * snapshot's running count is true (finishes committed meanwhile only make
 * it take fewer); else it takes nothing and the transaction, which counts
 * after the lock, decides. So the limit holds across servers either way, and
 * a type whose limit is not reached costs one statement, as an unlimited one.
 */
import type * as B from "../backend.js";
import { claimNow, limitRecord, limitSlots, startsAfter, storedLimit, storedLimitRow, type StoredLimitRow, windowOpensAt } from "../shared/limit-slots.js";
import { claimedJob } from "../shared/job-rows.js";
import { adoptUngroupedSql } from "../shared/ungrouped-group.js";
import { stageList } from "../shared/stage-list.js";
import { CLAIMABLE_STAGES } from "../../core/job-stage.js";
import { PostgresGroupClaim } from "./postgres-group-claim.js";
import { claimedFromArray } from "./postgres-claim-queries.js";
import type { PostgresJobQueries } from "./postgres-job-queries.js";
import type { PostgresRunner } from "./postgres-runner.js";
import { type Execute, statement, type Statement } from "./postgres-statement.js";

/** How long what a claim learnt of a type's stored limits is believed before the concurrency statement is tried again (a deploy may change them). */
const KIND_RECHECK_MS = 10_000;

/** The earlier of two due times, null or absent meaning none. */
function earlier(a: number | null, b: number | null | undefined): number | null {
  return b === null || b === undefined || (a !== null && a <= b) ? a : b;
}

/** How a limited type is claimed first: `concurrency` (one statement), `groups` (read, then fenced passes), `locked` (the transaction: a rate limit). */
type LimitKind = "concurrency" | "groups" | "locked";

export class PostgresLimits {
  /** The limits rows of types `$2` (namespace `$1`), locked in type order until commit. */
  private readonly lock: Statement;
  /** Running regular jobs per type of `$2` (namespace `$1`); its predicate is `later_jobs_running`'s, word for word, so that index serves it. */
  private readonly running: Statement;
  /** Stores `$3` as the recent starts of type `$2`. */
  private readonly writeStarts: Statement;
  private readonly read: Statement;
  private readonly remove: Statement;
  /** Deletes the limits rows of types `$2` (namespace `$1`), returning them. */
  private readonly removeAll: Statement;
  private readonly upsert: Statement;
  /** Moves the ready jobs with no group of namespace `$1`'s group-limited types to their ungrouped group (shared/ungrouped-group.ts); one row, `n` how many. */
  private readonly adoptUngrouped: Statement;
  /** X9 groups: the claim of a type with `groupConcurrency`. */
  private readonly groups: PostgresGroupClaim;
  /** What the stored limits of types found with a group or rate limit are, until when that is believed. */
  private readonly kinds = new Map<string, { kind: LimitKind; until: number }>();

  constructor(
    private readonly host: PostgresRunner,
    private readonly q: PostgresJobQueries,
  ) {
    const limits = `${host.quoted}.later_limits`;
    this.groups = new PostgresGroupClaim(host.quoted);
    // Locked in type order (the subquery), then written, so that a claim by `claimUnderConcurrency` whose
    // snapshot predates this transaction's commit finds a newer row version and leaves the decision to a transaction.
    this.lock = statement(
      `UPDATE ${limits} l SET concurrency = l.concurrency
FROM (SELECT job_type FROM ${limits} WHERE namespace = $1 AND job_type = ANY($2::text[]) ORDER BY job_type FOR UPDATE) o
WHERE l.namespace = $1 AND l.job_type = o.job_type
RETURNING l.job_type, l.concurrency, l.rate_max, l.rate_per_ms, l.rate_starts, l.group_concurrency, l.group_cursor`,
    );
    this.running = statement(
      `SELECT job_type, count(*)::int AS n FROM ${host.quoted}.later_jobs WHERE namespace = $1 AND stage = 'running' AND topic IS NULL AND job_type = ANY($2::text[]) GROUP BY job_type`,
    );
    this.writeStarts = statement(`UPDATE ${limits} SET rate_starts = $3 WHERE namespace = $1 AND job_type = $2`);
    this.read = statement(
      `SELECT job_type, concurrency, rate_max, rate_per_ms, group_concurrency FROM ${limits} WHERE namespace = $1 AND job_type = ANY($2::text[]) ORDER BY job_type FOR UPDATE`,
    );
    this.removeAll = statement(
      `DELETE FROM ${limits} WHERE namespace = $1 AND job_type = ANY($2::text[]) RETURNING job_type, concurrency, rate_max, rate_per_ms, group_concurrency`,
    );
    this.remove = statement(`DELETE FROM ${limits} WHERE namespace = $1 AND job_type = ANY($2::text[]) AND NOT (job_type = ANY($3::text[]))`);
    this.upsert = statement(`INSERT INTO ${limits} (namespace, job_type, concurrency, rate_max, rate_per_ms, group_concurrency, updated_at)
SELECT $1, r.job_type, r.concurrency, r.rate_max, r.rate_per_ms, r.group_concurrency, $3
FROM json_to_recordset($2::json) AS r(job_type text, concurrency integer, rate_max integer, rate_per_ms bigint, group_concurrency integer)
ON CONFLICT (namespace, job_type) DO UPDATE SET concurrency = EXCLUDED.concurrency, rate_max = EXCLUDED.rate_max,
  rate_per_ms = EXCLUDED.rate_per_ms, group_concurrency = EXCLUDED.group_concurrency, updated_at = EXCLUDED.updated_at`);
    const adopt = adoptUngroupedSql({
      jobs: `${host.quoted}.later_jobs`,
      limits,
      namespace: "$1",
      rows: `stage IN ${stageList(CLAIMABLE_STAGES)} AND topic IS NULL`,
    });
    this.adoptUngrouped = statement(`WITH moved AS (${adopt} RETURNING 1) SELECT count(*)::int AS n FROM moved`);
  }

  /**
   * The limited step of `claimReady` (see `JobStore.claimReady`): up to `params.limit` jobs of `params.limitedTypes`,
   * each type first without a transaction (`claimUnderConcurrency` for a concurrency alone, the group claim's read
   * and fenced claim for a group limit), then the types that could not be decided so, or have a rate limit, in one
   * transaction.
   */
  async claim(params: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    const jobs: B.ClaimedJob[] = [];
    const undecided: string[] = [];
    let next: number | null = null;
    for (const type of [...(params.limitedTypes ?? [])].sort()) {
      const want = params.limit - jobs.length;
      if (want <= 0) break;
      const known = this.kinds.get(type);
      const kind = known !== undefined && known.until > params.now ? known.kind : "concurrency";
      const step =
        kind === "concurrency"
          ? await this.claimPlainLimited(params, type, want)
          : kind === "groups"
            ? await this.claimGroupsUnlocked(params, type, want)
            : null;
      if (step === null) undecided.push(type);
      else {
        jobs.push(...step.jobs);
        next = earlier(next, step.nextRunAt);
      }
    }
    if (undecided.length > 0 && jobs.length < params.limit) {
      const rest = await this.claimLocked({ ...params, limit: params.limit - jobs.length, limitedTypes: undecided });
      jobs.push(...rest.jobs);
      next = earlier(next, rest.nextRunAt);
    }
    return jobs.length === params.limit ? { jobs } : { jobs, nextRunAt: next };
  }

  /** Remembers what `type`'s stored limits are, for {@link KIND_RECHECK_MS} (a deploy may change them). */
  private learn(type: string, kind: LimitKind, now: number): void {
    this.kinds.set(type, { kind, until: now + KIND_RECHECK_MS });
  }

  /**
   * `claimUnderConcurrency` of one type: its jobs and next due time, or null when the statement could not decide
   * (it then claimed nothing): another claim of the type committed meanwhile, or the type has a group or rate limit
   * (learnt).
   */
  private async claimPlainLimited(params: B.JobClaimReadyParams, type: string, want: number): Promise<B.JobClaimReadyResult | null> {
    const rows = await this.host.executeArrays(this.q.claims.claimUnderConcurrency, [
      this.host.namespace,
      params.now,
      [type],
      want,
      params.owner,
      params.leaseExpiresAt,
      type,
    ]);
    const jobs: B.ClaimedJob[] = [];
    let nextRunAt: number | null = null;
    let free: unknown = null;
    for (const r of rows) {
      if (r[0] === null) {
        free = r[9];
        nextRunAt = r[5] === null ? null : Number(r[5]);
      } else jobs.push(claimedFromArray(r));
    }
    if (free === null) return null; // a concurrent claim of the type committed: the transaction decides this once
    if (Number(free) < 0) {
      this.learn(type, Number(free) === -1 ? "groups" : "locked", params.now);
      return null;
    }
    return { jobs, nextRunAt };
  }

  /**
   * A type with a group limit (and no rate), claimed without the limits row's lock: one read, then each pass
   * fenced by the row's version (postgres-group-claim.ts); the read makes the first pass itself when round 1
   * fills the claim (the limits far from reached). Null when it could not decide (nothing claimed).
   */
  private async claimGroupsUnlocked(params: B.JobClaimReadyParams, type: string, want: number): Promise<B.JobClaimReadyResult | null> {
    const made = await this.groups.readAndClaimFirst(this.host.executeArrays, this.host.namespace, params, type, want);
    if (made === null) return null; // round 1 was the whole deal, but another claim of the type committed meanwhile
    const { read, first } = made;
    if (first !== null) return this.groups.claimShares(this.host.execute, this.host.namespace, params, type, read, want, true, first);
    if (read.row === null || read.row.groupConcurrency === null) {
      this.kinds.delete(type); // no longer a group limit: the concurrency statement next time
      return null;
    }
    if (read.row.rateMax !== null) {
      this.learn(type, "locked", params.now);
      return null;
    }
    let running = 0;
    for (const n of read.running.values()) running += n;
    const slots = limitSlots(read.row, running, params.now, want);
    if (slots.free === 0) return { jobs: [], nextRunAt: null }; // claims nothing: no fence needed
    return this.groups.claimShares(this.host.execute, this.host.namespace, params, type, read, slots.free, true);
  }

  /** The limited step in one transaction, every type under its locked (and written) limits row. */
  private claimLocked(claim: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    const types = [...(claim.limitedTypes ?? [])].sort();
    const ns = this.host.namespace;
    return this.host.inTransaction("claim", async (execute) => {
      const rows = new Map((await execute(this.lock, [ns, types])).map((r) => [String(r.job_type), storedLimitRow(r)]));
      const now = claimNow(rows.values(), claim.now);
      const params = now === claim.now ? claim : { ...claim, now };
      const running = new Map((await execute(this.running, [ns, types])).map((r) => [String(r.job_type), Number(r.n)]));
      const jobs: B.ClaimedJob[] = [];
      let next: number | null = null;
      const earliest = (t: number | null | undefined) => (next = earlier(next, t));
      for (const type of types) {
        const want = params.limit - jobs.length;
        if (want <= 0) break;
        const row: StoredLimitRow | undefined = rows.get(type);
        const slots = row ? limitSlots(row, running.get(type) ?? 0, params.now, want) : { free: want, nextSlotAt: null };
        earliest(slots.nextSlotAt);
        if (slots.free === 0) continue;
        // X9 groups: within the type's slots, at most groupConcurrency running per group, round-robin (postgres-group-claim.ts).
        const claimed =
          row && row.groupConcurrency !== null
            ? await this.groups
                .claimShares(execute, ns, params, type, await this.groups.readGroups(execute, ns, type, slots.free), slots.free, false)
                .then((r) => r ?? { jobs: [], nextRunAt: null }) // under the lock: never undecided
            : await this.claimType(execute, params, type, slots.free);
        jobs.push(...claimed.jobs);
        earliest(claimed.nextRunAt);
        if (row && row.rateMax !== null && claimed.jobs.length > 0) {
          const starts = startsAfter(row, params.now, claimed.jobs.length);
          await execute(this.writeStarts, [ns, type, JSON.stringify(starts)]);
          // Took every slot it had: more may be ready, and the window this claim filled opens then.
          if (claimed.jobs.length === slots.free) earliest(windowOpensAt(row, starts));
        }
      }
      return jobs.length === params.limit ? { jobs } : { jobs, nextRunAt: next };
    });
  }

  /** The plain claim statement, narrowed to one type. */
  private async claimType(execute: Execute, params: B.JobClaimReadyParams, type: string, limit: number): Promise<B.JobClaimReadyResult> {
    const rows = await execute(this.q.claims.claim, [this.host.namespace, params.now, [type], limit, params.owner, params.leaseExpiresAt]);
    const jobs: B.ClaimedJob[] = [];
    let nextRunAt: number | null = null;
    for (const r of rows) {
      if (r.id === null) nextRunAt = r.next_run_at === null ? null : Number(r.next_run_at);
      else jobs.push(claimedJob(r));
    }
    return { jobs, nextRunAt };
  }

  /** `JobStore.limitsUngroupedAdopt`: one statement. */
  async adopt(): Promise<B.LimitsUngroupedAdoptResult> {
    const [row] = await this.host.execute(this.adoptUngrouped, [this.host.namespace]);
    return { moved: Number(row?.n ?? 0) };
  }

  /**
   * `JobStore.limitsSet`: read (locked), delete the rows of types without a limit, upsert the others, in one
   * transaction. With no limit to store (most servers), one statement: the rows deleted are what was stored.
   */
  async set(params: B.LimitsSetParams): Promise<B.LimitsSetResult> {
    const ns = this.host.namespace;
    if (params.limits.length === 0) {
      const removed = await this.host.execute(this.removeAll, [ns, params.jobTypes]);
      return { previous: removed.map(storedLimit).sort((a, b) => (a.jobType < b.jobType ? -1 : a.jobType > b.jobType ? 1 : 0)) };
    }
    return this.host.inTransaction("limits", async (execute) => {
      const before = await execute(this.read, [ns, params.jobTypes]);
      const limited = params.limits.map((l) => l.jobType);
      await execute(this.remove, [ns, params.jobTypes, limited]);
      if (params.limits.length > 0) await execute(this.upsert, [ns, JSON.stringify(params.limits.map(limitRecord)), params.now]);
      // X9: ready jobs enqueued with no group before a group limit was stored join their type's ungrouped group.
      if (params.limits.some((l) => l.groupConcurrency !== null)) await execute(this.adoptUngrouped, [ns]);
      return { previous: before.map(storedLimit) };
    });
  }
}
