/**
 * The claim of ready regular jobs on SQLite (`backend.jobs.claimReady`), in
 * one `immediate` transaction: the limited types first (X9, `claimLimited`),
 * then one priority's range of the ready index at a time (X1), lowest
 * first; the moves go to the stage counters in the same transaction.
 */
import { CLAIMABLE_STAGES } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { claimedJob, type Row } from "../shared/job-rows.js";
import { stageOneOf } from "../shared/stage-list.js";
import type { SqliteConnection, SqliteHost } from "./sqlite-connection.js";
import { claimLimited } from "./sqlite-limits.js";
import { type SqliteStageCounters, StageDeltas } from "./sqlite-stage-counters.js";
import { SQLITE_TRANSITIONS as T } from "./sqlite-transition.js";

/** The ready index's stage term, word for word (`later_jobs_ready` as migration 20 writes it, a disjunction: see `stageOneOf`). */
const CLAIMABLE = stageOneOf(CLAIMABLE_STAGES);

/** `claimReady`: one priority's range of the ready index (X1), with X2's key check. */
const CLAIM_PRIORITY = `UPDATE later_jobs SET ${T.claim.stage}, attempt = attempt + 1, lease_owner = ?, lease_expires_at = ?, updated_at = ?,
           ${T.claim.history},
           unique_slot = CASE WHEN unique_slot IS NOT NULL THEN 'active' END
         WHERE id IN (SELECT id FROM later_jobs w WHERE namespace = ? AND ${CLAIMABLE} AND topic IS NULL AND priority = ?
                        AND run_at <= ? AND job_type IN (SELECT value FROM json_each(?))
                        AND (unique_slot IS NOT 'pending' OR NOT EXISTS (SELECT 1 FROM later_jobs s WHERE s.namespace = w.namespace
                          AND s.job_type = w.job_type AND s.unique_key = w.unique_key AND s.unique_slot = 'active'))
                        ORDER BY run_at LIMIT ? + 0)
         RETURNING id, job_type, payload, attempt, retry_policy, timeout_ms, run_at, json_extract(stages, '$[#-2][0]') AS was, meta, priority`;

/** `claimReady` when short: the earliest future run time, one probe per priority. */
const NEXT_RUN_AT = `WITH RECURSIVE prio(p) AS (
         SELECT (SELECT priority FROM later_jobs WHERE namespace = ? AND ${CLAIMABLE} AND topic IS NULL ORDER BY priority LIMIT 1)
         UNION ALL
         SELECT (SELECT priority FROM later_jobs WHERE namespace = ? AND ${CLAIMABLE} AND topic IS NULL AND priority > prio.p ORDER BY priority LIMIT 1)
         FROM prio WHERE prio.p IS NOT NULL)
       SELECT min((SELECT run_at FROM later_jobs WHERE namespace = ? AND ${CLAIMABLE} AND topic IS NULL AND priority = prio.p
         AND run_at > ? AND job_type IN (SELECT value FROM json_each(?)) ORDER BY run_at LIMIT 1)) AS t FROM prio WHERE p IS NOT NULL`;

/** The lowest claimable priority above `?`: one probe of the ready index. */
const NEXT_PRIORITY = `SELECT priority FROM later_jobs WHERE namespace = ? AND ${CLAIMABLE} AND topic IS NULL AND priority > ? ORDER BY priority LIMIT 1`;

export class SqliteReadyClaim {
  constructor(
    private readonly host: SqliteHost,
    private readonly counters: SqliteStageCounters,
  ) {}

  private get namespace(): string {
    return this.host.namespace;
  }

  private conn(): SqliteConnection {
    return this.host.conn();
  }

  /**
   * Claims up to `limit` ready jobs in one `immediate` transaction, lowest
   * priority number first, then oldest (X1); when short, also reads the next
   * due time. The ready index is (namespace, priority, run_at): the claim
   * takes one priority at a time, lowest first (the next one found by one
   * index probe, {@link nextPriority}), each as the index range `priority =
   * ? AND run_at <= now` in index order, so neither a sort nor a walk over
   * the delayed rows of the namespace; with priorities unused that is one
   * probe and one UPDATE, as before. X2: a job holding its key's `pending`
   * slot is skipped while the key's `active` slot is held, and the claim
   * moves it to `active` (see `SqliteUniqueInsert`). X9: `limitedTypes` are
   * claimed first in the same transaction, each within its stored limits
   * (`claimLimited`); without them the statements are the ones above.
   */
  async claimReady(params: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    const limited = params.limitedTypes ?? [];
    if (params.limit <= 0 || (params.jobTypes.length === 0 && limited.length === 0)) return { jobs: [] };
    const types = JSON.stringify(params.jobTypes);
    let nextSlotAt: number | null = null;
    // The stage each row left is the one before 'running' in its new stage history.
    const rows = this.conn().immediate(() => {
      const claimed: Row[] = [];
      // X9: the limited types first, each within its stored limits (sqlite-limits.ts), by the same claim narrowed to the type.
      if (limited.length > 0) {
        const lease = { owner: params.owner, leaseExpiresAt: params.leaseExpiresAt, now: params.now };
        const step = claimLimited(this.conn(), this.namespace, limited, params.limit, lease, (type, n, now) =>
          this.claimRows(now === params.now ? params : { ...params, now }, JSON.stringify([type]), n),
        );
        claimed.push(...step.rows);
        nextSlotAt = step.nextSlotAt;
      }
      if (params.jobTypes.length > 0 && claimed.length < params.limit) claimed.push(...this.claimRows(params, types, params.limit - claimed.length));
      const deltas = new StageDeltas();
      T.claim.count(deltas, claimed, (r) => r.was, "running", { topic: null, partition: null });
      this.counters.write(deltas);
      return claimed;
    });
    rows.sort((a, b) => Number(a.priority) - Number(b.priority) || Number(a.run_at) - Number(b.run_at) || (String(a.id) < String(b.id) ? -1 : 1));
    const jobs = rows.map(claimedJob);
    if (jobs.length === params.limit) return { jobs };
    // The earliest future run_at: the first of each priority's range `run_at > now`, one probe per priority.
    const all = limited.length === 0 ? types : JSON.stringify([...params.jobTypes, ...limited]);
    const next = this.conn().get(NEXT_RUN_AT, this.namespace, this.namespace, this.namespace, params.now, all);
    const nextRunAt = next?.t === null || next?.t === undefined ? null : Number(next.t);
    return { jobs, nextRunAt: nextSlotAt !== null && (nextRunAt === null || nextSlotAt < nextRunAt) ? nextSlotAt : nextRunAt };
  }

  /** Up to `limit` ready jobs of `types` (JSON array), lowest priority first, inside the caller's `immediate` transaction. */
  private claimRows(params: B.JobClaimReadyParams, types: string, limit: number): Row[] {
    const claimed: Row[] = [];
    // The next priority is probed only while the batch is short: a full batch costs one probe.
    for (let p = this.nextPriority(null); p !== null; p = claimed.length < limit ? this.nextPriority(p) : null) {
      claimed.push(
        ...this.conn().all(
          CLAIM_PRIORITY,
          params.owner,
          params.leaseExpiresAt,
          params.now,
          params.now,
          this.namespace,
          p,
          params.now,
          types,
          limit - claimed.length,
        ),
      );
    }
    return claimed;
  }

  /** The lowest priority of the namespace's claimable regular jobs above `after` (null: the lowest of all); null when none. One probe of the ready index. */
  private nextPriority(after: number | null): number | null {
    const row = this.conn().get(NEXT_PRIORITY, this.namespace, after ?? -32769);
    return row ? Number(row.priority) : null;
  }
}
