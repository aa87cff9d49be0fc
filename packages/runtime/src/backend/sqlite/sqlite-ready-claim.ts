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

/** How many of the next claimable priorities one claim statement reads ({@link CLAIM_NEXT}). */
const PRIORITIES_PER_STATEMENT = 4;

/**
 * The next {@link PRIORITIES_PER_STATEMENT} claimable priorities above `after` in namespace `ns` (SQL
 * parameters), one probe of the ready index each (a loose index scan): the CTE `prio(p)` of
 * {@link CLAIM_NEXT} and {@link LAST_PROBED}.
 */
const nextPriorities = (ns: string, after: string) => `WITH RECURSIVE prio(p, n) AS (
  SELECT (SELECT priority FROM later_jobs WHERE namespace = ${ns} AND ${CLAIMABLE} AND topic IS NULL AND priority > ${after} ORDER BY priority LIMIT 1), 1
  UNION ALL
  SELECT (SELECT priority FROM later_jobs WHERE namespace = ${ns} AND ${CLAIMABLE} AND topic IS NULL AND priority > prio.p ORDER BY priority LIMIT 1), n + 1
  FROM prio WHERE prio.p IS NOT NULL AND n < ${PRIORITIES_PER_STATEMENT})`;

/**
 * `claimReady`: up to `?9` due jobs of types `?8` (JSON) from the next few priorities above `?6`, in (priority,
 * run_at) order, with X2's key check: each priority's range `run_at <= ?7` of the ready index in index order
 * (SQLite walks the IN list's priorities in order: no sort), so never a walk over the delayed rows. One
 * statement for a claim whose jobs lie in up to that many priorities: a statement per priority, each with its
 * own probe, cost a claim of mixed priorities a tenth more than one of a single priority.
 */
const CLAIM_NEXT = `${nextPriorities("?5", "?6")}
UPDATE later_jobs SET ${T.claim.stage}, attempt = attempt + 1, lease_owner = ?1, lease_expires_at = ?2, updated_at = ?3,
           ${T.claim.history.replace("?", "?4")},
           unique_slot = CASE WHEN unique_slot IS NOT NULL THEN 'active' END
         WHERE id IN (SELECT id FROM later_jobs w WHERE namespace = ?5 AND ${CLAIMABLE} AND topic IS NULL AND priority IN (SELECT p FROM prio WHERE p IS NOT NULL)
                        AND run_at <= ?7 AND job_type IN (SELECT value FROM json_each(?8))
                        AND (unique_slot IS NOT 'pending' OR NOT EXISTS (SELECT 1 FROM later_jobs s WHERE s.namespace = w.namespace
                          AND s.job_type = w.job_type AND s.unique_key = w.unique_key AND s.unique_slot = 'active'))
                        ORDER BY priority, run_at LIMIT ?9 + 0)
         RETURNING id, job_type, payload, attempt, retry_policy, timeout_ms, run_at, json_extract(stages, '$[#-2][0]') AS was, meta, priority`;

/** The last of the priorities {@link CLAIM_NEXT} read (`?` namespace, `?` after); null: none above it. */
const LAST_PROBED = `${nextPriorities("?1", "?2")} SELECT max(p) AS p FROM prio`;

/** `claimReady` when short: the earliest future run time, one probe per priority. */
const NEXT_RUN_AT = `WITH RECURSIVE prio(p) AS (
         SELECT (SELECT priority FROM later_jobs WHERE namespace = ? AND ${CLAIMABLE} AND topic IS NULL ORDER BY priority LIMIT 1)
         UNION ALL
         SELECT (SELECT priority FROM later_jobs WHERE namespace = ? AND ${CLAIMABLE} AND topic IS NULL AND priority > prio.p ORDER BY priority LIMIT 1)
         FROM prio WHERE prio.p IS NOT NULL)
       SELECT min((SELECT run_at FROM later_jobs WHERE namespace = ? AND ${CLAIMABLE} AND topic IS NULL AND priority = prio.p
         AND run_at > ? AND job_type IN (SELECT value FROM json_each(?)) ORDER BY run_at LIMIT 1)) AS t FROM prio WHERE p IS NOT NULL`;

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
    // A few priorities per statement; the next few only while the batch is short (a full batch is one statement).
    for (let after: number | null = -32769; after !== null && claimed.length < limit; ) {
      // Numbered parameters (each read where the text says `?N`) are bound by number.
      const rows = this.conn().all(CLAIM_NEXT, {
        5: this.namespace,
        6: after,
        1: params.owner,
        2: params.leaseExpiresAt,
        3: params.now,
        4: params.now,
        7: params.now,
        8: types,
        9: limit - claimed.length,
      });
      claimed.push(...rows);
      if (claimed.length === limit) break;
      // Short: every due job of these types in the priorities read was taken. Go on after the last priority that
      // gave one (those above it that gave none are read again, harmlessly); when none gave one, nothing changed,
      // and the same probe says the last priority read.
      if (rows.length > 0) after = Math.max(...rows.map((r) => Number(r.priority)));
      else {
        const last: unknown = this.conn().get(LAST_PROBED, { 1: this.namespace, 2: after })?.p;
        after = last === null || last === undefined ? null : Number(last);
      }
    }
    return claimed;
  }
}
