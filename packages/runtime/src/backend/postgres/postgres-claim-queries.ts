/**
 * The plain claim's statements on PostgreSQL (`backend.jobs.claimReady`):
 * the claim of ready regular jobs in (priority, run_at) order, its batch
 * sizes written into the text ({@link PostgresClaimQueries.claimBatch}), its
 * floored form for a held-back horizon and the check that ends a degraded
 * spell (`ClaimFloor`), and X9's claim of a type under a concurrency limit.
 * Fixed SQL run as named prepared statements, as the other hot statements
 * (`postgres-job-queries.ts`); each stage change goes through the one
 * transition path (`postgres-transition.ts`).
 */
import { CLAIMABLE_STAGES } from "../../core/job-stage.js";
import type { ClaimedJob } from "../job-store.js";
import { stageList } from "../shared/stage-list.js";
import { statement, type Statement, StatementsMadeOnUse } from "./postgres-statement.js";
import { type PgTransition, transition, transitionTail } from "./postgres-transition.js";

const CLAIMABLE = stageList(CLAIMABLE_STAGES);

/**
 * The batch sizes of the plain claim's statements (see {@link PostgresClaimQueries.claimBatch}): every size up
 * to 6, then each at most a third over the one before it, so a claim takes at least three quarters of what it
 * could, in one of 28 prepared statements per connection (a claim of more than 1,024 takes 1,024).
 */
const CLAIM_LADDER = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024];

/** A claimed row of {@link PostgresClaimQueries.claim} read as an array (`id, job_type, payload, attempt, retry_policy, next_run_at, run_at, timeout_ms, meta`, then the limits' extra column if any, then `priority`). */
export function claimedFromArray(r: readonly unknown[]): ClaimedJob {
  return {
    id: r[0] as string,
    jobType: r[1] as string,
    payload: r[2] as string,
    attempt: r[3] as number,
    retryPolicy: r[4] as string | null,
    runAt: Number(r[6]),
    timeoutMs: r[7] === null ? null : Number(r[7]),
    meta: r[8] as string | null,
  };
}

export class PostgresClaimQueries {
  /**
   * Claims a batch in one statement: the CTE picks the oldest ready rows
   * through the partial ready index and locks them `FOR UPDATE SKIP LOCKED`,
   * so concurrent claimers on other connections skip each other's rows
   * instead of queueing behind them; the UPDATE marks them running with a
   * lease and the next attempt number. Rows come back oldest first, with
   * only what a worker needs: `id, job_type, payload, attempt, retry_policy`
   * (then `next_run_at`, `run_at`, `timeout_ms`).
   * When fewer than `$4` were claimed, a last row with a null id carries the
   * earliest `run_at` after now of the claimable rows (null: none), so the
   * fetcher learns how long to sleep without another round trip.
   * `$1` namespace, `$2` now, `$3` job types, `$4` limit, `$5` owner, `$6` lease expiry.
   */
  readonly claim: Statement;
  /**
   * X9: {@link claim} of the one type `$7`, whose stored limit is a concurrency alone, taking at most its free
   * slots, in one statement and no transaction (see `PostgresLimits`). Its next-due row is always returned, with a
   * tenth column: the slots it took from; null when another claim of the type committed after this statement's
   * snapshot, -1 when the type has a group limit and no rate, -2 when it has a rate limit (all three: nothing
   * was claimed; see `PostgresLimits.claim`). Parameters as {@link claim}'s, `$3` being `[$7]`.
   */
  readonly claimUnderConcurrency: Statement;
  /**
   * The check that ends a degraded spell (`ClaimFloor`): the lowest due `run_at` of priority `$4` below the floor
   * `$5` among the claimable rows of types `$3` (`$2` now), one range of the ready index.
   */
  readonly belowFloor: Statement;
  /** The claim's text with a batch size written in ({@link claimBatch}), floored or not. */
  private readonly claimText: (limit: string, lead?: string, extra?: string | null, floored?: boolean) => string;
  /** {@link claim} per rung of {@link CLAIM_LADDER}, made on first use; negative keys: the floored claims. */
  private readonly claimRungs = new StatementsMadeOnUse<number>();

  /**
   * {@link claim} for a claim of up to `limit` jobs: the largest rung of {@link CLAIM_LADDER} not over it, and
   * the statement with that batch size written in its `LIMIT`s (`$4`, bound to the same value, still says
   * whether the batch came back short). PostgreSQL
   * plans a prepared statement for its values five times, then keeps a generic plan only if that costs no more
   * than those did, and it estimates a bound `LIMIT` as a tenth of the rows: the claim with `LIMIT $4` was
   * planned anew on every run (about 0.5 ms, as long as running it for a batch of 50). With the size written
   * in, the generic plan costs what the custom ones do and is kept.
   *
   * `floored`: one priority's part of the ready index read from a floor (`ClaimFloor`), two more parameters:
   * `$7` the lowest `run_at` read of priority `$8`.
   */
  claimBatch(limit: number, floored = false): [number, Statement] {
    let rung = CLAIM_LADDER[0]!;
    for (const r of CLAIM_LADDER) if (r <= limit) rung = r;
    return [rung, this.claimRungs.of(floored ? -rung : rung, (r) => this.claimText(String(Math.abs(r)), "", null, r < 0))];
  }

  constructor(schema: string) {
    const jobs = `${schema}.later_jobs`;
    const tail = (ns: string, transitions: PgTransition[]) => transitionTail(schema, ns, transitions);
    // The UPDATE finds its rows by `id = ANY(ARRAY(...))`, an index probe of the primary key per
    // claimed id. Joined with `FROM ready` instead, the planner hashed the whole table to find
    // 500 rows (a sequential scan of every job, finished ones included, per claim: 5 of a 12 ms
    // claim of 500 among 20,000 jobs). Every row of `ready` is updated (this statement holds
    // their locks), so the counters take the old stages from `ready`.
    // X1: the ready index is (namespace, priority, run_at). `prio` walks its distinct priorities
    // (one index descent each, lowest first: a loose index scan, as PostgreSQL 15 has no skip
    // scan), and `ready` reads each priority's due rows as one index range `run_at <= now`, in
    // run_at order, until $4 are taken: a plain `ORDER BY priority, run_at` with `run_at <= $2`
    // no longer a range bound would walk every delayed row of the namespace whenever the claim
    // comes back short. Rows come out in (priority, run_at) order, the nested loop's, and the
    // outer LIMIT stops pulling (and locking) there. X2: a row still holding its key's
    // `pending` slot is skipped while the key's `active` slot is held (it runs after that job;
    // claiming it would also break the unique index), and the claim moves it to `active`.
    const claimed = transition({ kinds: "claim", rows: "claimed", leftRows: "ready", from: "stage", to: "'running'", at: "$2::bigint" });
    /**
     * The claim's text with `limit` (SQL) as its batch size; `lead`, CTEs put before its own (ending with a comma);
     * `extra`, one more column (SQL, of the statement's own CTEs) on the next-due row, which is then always returned.
     */
    // Floored (see `ClaimFloor`; `$7` a floor on run_at for priority `$8`, where the claim before stopped): the
    // priorities below and above `$8` are read as the full claim reads them; `$8` itself from `($8, $7)` in the
    // index, so neither its probe nor its `ready` range meets its entries below the floor. A probe that passes
    // from below `$8` to it is split at `$8` for that reason.
    const base = `namespace = $1 AND stage IN ${CLAIMABLE} AND topic IS NULL`;
    const after = (p: string) => `CASE WHEN ${p} < $8::int THEN coalesce(
    (SELECT priority FROM ${jobs} WHERE ${base} AND priority > ${p} AND priority < $8::int ORDER BY priority LIMIT 1),
    (SELECT priority FROM ${jobs} WHERE ${base} AND (priority, run_at) >= ($8::int, $7::bigint) ORDER BY priority LIMIT 1))
  ELSE (SELECT priority FROM ${jobs} WHERE ${base} AND priority > ${p} ORDER BY priority LIMIT 1) END`;
    const probes = (floored: boolean) =>
      floored
        ? {
            first: `SELECT ${after("-32769")} AS p`,
            next: after("prio.p"),
            from: " AND run_at >= CASE WHEN prio.p = $8::int THEN $7::bigint ELSE -9223372036854775808 END",
          }
        : {
            first: `SELECT priority AS p FROM ${jobs} WHERE ${base} ORDER BY priority LIMIT 1`,
            next: `(SELECT priority FROM ${jobs} WHERE ${base} AND priority > prio.p ORDER BY priority LIMIT 1)`,
            from: "",
          };
    const claimText = (limit: string, lead = "", extra: string | null = null, floored = false) => {
      const probe = probes(floored);
      return `WITH RECURSIVE ${lead}prio AS (
  (${probe.first})
  UNION ALL
  SELECT ${probe.next}
  FROM prio WHERE prio.p IS NOT NULL
), ready AS (
  SELECT r.id, r.stage, r.topic, r.partition_no FROM prio CROSS JOIN LATERAL (
    SELECT id, stage, topic, partition_no FROM ${jobs} w
    WHERE namespace = $1 AND stage IN ${CLAIMABLE} AND topic IS NULL AND priority = prio.p${probe.from} AND run_at <= $2 AND job_type = ANY($3::text[])
      AND (unique_slot IS DISTINCT FROM 'pending' OR NOT EXISTS (SELECT 1 FROM ${jobs} s
        WHERE s.namespace = $1 AND s.job_type = w.job_type AND s.unique_key = w.unique_key AND s.unique_slot = 'active'))
    ORDER BY run_at LIMIT ${limit}
    FOR UPDATE SKIP LOCKED
  ) r LIMIT ${limit}
), claimed AS (
  UPDATE ${jobs} j SET ${claimed.stage}, attempt = j.attempt + 1, lease_owner = $5, lease_expires_at = $6, updated_at = $2,
    ${claimed.history}, unique_slot = CASE WHEN j.unique_slot IS NOT NULL THEN 'active' END
  WHERE j.id = ANY(ARRAY(SELECT id FROM ready))
  RETURNING j.id, j.job_type, j.payload, j.attempt, j.retry_policy, j.run_at, j.topic, j.partition_no, j.timeout_ms, j.meta, j.priority
)${tail("$1", [claimed])}
(SELECT id, job_type, payload, attempt, retry_policy, NULL::bigint AS next_run_at, run_at, timeout_ms, meta${extra === null ? "" : ", NULL::int AS extra"}, priority FROM claimed ORDER BY priority, run_at, id)
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, (
  SELECT min((SELECT run_at FROM ${jobs}
    WHERE namespace = $1 AND stage IN ${CLAIMABLE} AND topic IS NULL AND priority = prio.p AND run_at > $2 AND job_type = ANY($3::text[])
    ORDER BY run_at LIMIT 1)) FROM prio
), NULL, NULL, NULL${extra === null ? ", NULL WHERE (SELECT count(*) FROM claimed) < $4" : `, ${extra}, NULL`}`;
    };
    this.claim = statement(claimText("$4"));
    this.claimText = claimText;
    this.belowFloor = statement(`SELECT run_at FROM ${jobs}
  WHERE ${base} AND priority = $4::int AND run_at < $5::bigint AND run_at <= $2 AND job_type = ANY($3::text[])
  ORDER BY run_at LIMIT 1`);
    // X9, a type whose stored limit is a concurrency alone (see postgres-limits.ts): its limits row is written (a
    // new row version) only if it is still the version this statement's snapshot read, which the snapshot's count
    // of the type's running jobs is then true for; `free` is null when it is not (another claim of the type
    // committed meanwhile), when the type has a rate or group limit, or, with no limits row, the batch size.
    // The namespace's running jobs of every type (the stage counters, a few rows) bound the type's: when they
    // and the batch stay within the limit, the type's running rows are not counted (a read of each).
    const limits = `${schema}.later_limits`;
    this.claimUnderConcurrency = statement(
      claimText(
        "(SELECT coalesce(f, 0) FROM free)",
        `lim AS (
  SELECT ctid AS c, concurrency, rate_max, rate_max IS NULL AND group_concurrency IS NULL AS plain FROM ${limits} WHERE namespace = $1 AND job_type = $7
), bump AS (
  UPDATE ${limits} l SET concurrency = l.concurrency FROM lim
  WHERE l.namespace = $1 AND l.job_type = $7 AND l.ctid = lim.c AND lim.plain
  RETURNING l.concurrency
), free AS (
  SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM lim) THEN $4::int
    WHEN NOT EXISTS (SELECT 1 FROM bump) THEN NULL
    WHEN (SELECT coalesce(sum(n), 0) FROM ${schema}.later_stage_counts WHERE namespace = $1 AND stage = 'running') + $4::int <= (SELECT concurrency FROM bump)
      THEN $4::int
    ELSE greatest(0, least($4::int, (SELECT concurrency FROM bump) - (SELECT count(*) FROM ${jobs}
      WHERE namespace = $1 AND stage = 'running' AND topic IS NULL AND job_type = $7)))::int
    END AS f
), `,
        "(SELECT CASE WHEN EXISTS (SELECT 1 FROM lim WHERE rate_max IS NOT NULL) THEN -2 WHEN EXISTS (SELECT 1 FROM lim WHERE NOT plain) THEN -1 ELSE f END FROM free)",
      ),
    );
  }
}
