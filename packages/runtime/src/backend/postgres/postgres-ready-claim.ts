/**
 * The claim of ready regular jobs on PostgreSQL (`backend.jobs.claimReady`):
 * the limited types first (X9, `PostgresLimits`), then the plain claim, one
 * statement of `postgres-claim-queries.ts` with its batch size from the
 * ladder, floored while the ready index holds entries PostgreSQL may not yet
 * remove (`ClaimFloor`, docs/storage.md "A held-back horizon"), whose
 * degraded spells end with a check run beside the claims.
 */
import type * as B from "../backend.js";
import { joinClaims } from "../shared/limit-slots.js";
import { ClaimFloor, type Floor } from "./claim-floor.js";
import { claimedFromArray } from "./postgres-claim-queries.js";
import type { PostgresJobQueries } from "./postgres-job-queries.js";
import { PostgresLimits } from "./postgres-limits.js";
import type { PostgresRunner } from "./postgres-runner.js";

export class PostgresReadyClaim {
  /** X9: the limited claim step and the stored limits. */
  readonly limits: PostgresLimits;

  /** The plain claim's floor while the ready index holds dead entries (internal: tests replace it to force a degraded spell). */
  floor = new ClaimFloor();

  constructor(
    private readonly host: PostgresRunner,
    private readonly q: PostgresJobQueries,
  ) {
    this.limits = new PostgresLimits(host, q);
  }

  private get ns(): string {
    return this.host.namespace;
  }

  /**
   * One statement (`claim`), the next due time included when short; rows come back as arrays.
   * X9: limited types first, in a transaction of their own (`PostgresLimits.claim`), then the rest.
   */
  async claimReady(params: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    if (params.limit <= 0) return { jobs: [] };
    if (params.limitedTypes === undefined || params.limitedTypes.length === 0) return this.claimPlain(params);
    const first = await this.limits.claim(params);
    if (first.jobs.length === params.limit || params.jobTypes.length === 0) return first;
    const rest = await this.claimPlain({ ...params, limit: params.limit - first.jobs.length });
    return joinClaims(first, rest, params.limit);
  }

  private async claimPlain(params: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    if (params.jobTypes.length === 0) return { jobs: [] };
    // The batch size from the ladder (see `PostgresClaimQueries.claimBatch`): a full batch of it is a full claim.
    // A floor while the ready index holds entries PostgreSQL may not yet remove (see `ClaimFloor`).
    const floor = this.floor.floorFor(params.jobTypes);
    const check = this.floor.checkDue(params.now, floor);
    if (check !== null) void this.checkBelowFloor(check, params);
    const [batch, claim] = this.q.claims.claimBatch(params.limit, floor !== null);
    const values = [this.ns, params.now, params.jobTypes, batch, params.owner, params.leaseExpiresAt];
    if (floor !== null) values.push(floor.runAt, floor.priority);
    const started = performance.now();
    const rows = await this.host.executeArrays(claim, values);
    const tookMs = floor === null ? performance.now() - started : null;
    const jobs: B.ClaimedJob[] = [];
    let lastRow: unknown[] | undefined;
    let nextRunAt: number | null | undefined;
    for (const r of rows) {
      if (r[0] === null) nextRunAt = r[5] === null ? null : Number(r[5]);
      else jobs.push(claimedFromArray((lastRow = r)));
    }
    const last = lastRow && { runAt: Number(lastRow[6]), priority: lastRow[9] as number };
    this.floor.claimed(params.now, params.jobTypes, batch, jobs.length, last, tookMs, floor);
    return nextRunAt === undefined ? { jobs } : { jobs, nextRunAt };
  }

  /** The check that ends a degraded spell, beside the claims (see `ClaimFloor`); a failed check ends the spell. */
  private async checkBelowFloor(floor: Floor, params: B.JobClaimReadyParams): Promise<void> {
    const started = performance.now();
    try {
      const [row] = await this.host.execute(this.q.claims.belowFloor, [this.ns, params.now, params.jobTypes, floor.priority, floor.runAt]);
      const tookMs = performance.now() - started;
      this.floor.checked(floor, row ? Number(row.run_at) : null, tookMs, params.now + tookMs);
    } catch {
      this.floor.checked(floor, null, null, params.now);
    }
  }
}
