/**
 * X9 groups on PostgreSQL: the limited claim of one job type that has a
 * `groupConcurrency`, run by `PostgresLimits.claim` in its transaction,
 * under the type's `later_limits` row lock (so the limited claims of the
 * type, on every server, run one at a time and each counts what the one
 * before committed).
 *
 * How it avoids scanning a backlog:
 * - `walk`: the type's distinct ready groups through `later_jobs_ready_group`
 *   ((namespace, job_type, group_key, run_at), only the claimable rows that
 *   carry a group): a recursive skip scan, one index descent per group
 *   (`group_key > previous ORDER BY group_key LIMIT 1`), each group's oldest
 *   `run_at` a second descent. It starts after the type's cursor and stops
 *   after `cap` groups (`groupWalkCap`): a group with 100,000 ready rows costs
 *   two descents, as one with a single row.
 * - `running`: the type's running jobs per group, through `later_jobs_running`
 *   (its predicate word for word): the running jobs of the namespace, which
 *   the workers bound; no index of running jobs by group, which every claim
 *   and finish would maintain.
 * - `claim`: each group's share (`GroupRounds`) as one LATERAL probe of the
 *   group index, `group_key = g AND run_at <= now ORDER BY run_at LIMIT n`:
 *   it reads the rows it takes. The type's jobs with no group are one group
 *   of their own; not in that index (an ungrouped job gains no index
 *   maintenance), they are read through `later_jobs_ready` narrowed to the
 *   type, as any limited type's claim is, and only when that group has a
 *   share (`$7` > 0): that probe reads the ready rows ahead of them in
 *   (priority, run_at) order, grouped or of other types.
 * Within a group, jobs are taken oldest first (`run_at`); priority (X1)
 * orders the ungrouped group only.
 */
import type * as B from "../backend.js";
import { CLAIMABLE_STAGES } from "../../core/job-stage.js";
import { stageList } from "../shared/stage-list.js";
import { countByGroup, groupCandidates, GroupRounds, groupWalkCap, walkOrder, type WalkedGroup } from "../shared/group-rounds.js";
import type { StoredLimitRow } from "../shared/limit-slots.js";
import { claimedJob } from "../shared/job-rows.js";
import { transition, transitionTail } from "./postgres-transition.js";
import { type Execute, statement, type Statement } from "./postgres-statement.js";

const CLAIMABLE = stageList(CLAIMABLE_STAGES);

export class PostgresGroupClaim {
  /** `$1` namespace, `$2` type, `$3` start after this group (`''`: the first), `$4` at most this many groups: `(k, t)` per group. */
  private readonly walk: Statement;
  /** `$1` namespace, `$2` type: `(group_key, n)` running. */
  private readonly running: Statement;
  /**
   * `$1` namespace, `$2` now, `$3` shares (JSON `[{ g, n }]`), `$4` type, `$5` owner, `$6` lease
   * expiry, `$7` share of the ungrouped: the claimed rows with their `group_key`.
   */
  private readonly claim: Statement;
  /** `$1` namespace, `$2` type, `$3` cursor. */
  private readonly cursor: Statement;

  constructor(schema: string) {
    const jobs = `${schema}.later_jobs`;
    // The group index's predicate word for word, so the planner proves it.
    const grouped = `namespace = $1 AND job_type = $2 AND stage IN ${CLAIMABLE} AND topic IS NULL AND group_key IS NOT NULL`;
    this.walk = statement(`WITH RECURSIVE g AS (
  (SELECT group_key AS k FROM ${jobs} WHERE ${grouped} AND group_key > $3 ORDER BY group_key LIMIT 1)
  UNION ALL
  SELECT (SELECT group_key FROM ${jobs} WHERE ${grouped} AND group_key > g.k ORDER BY group_key LIMIT 1) FROM g WHERE g.k IS NOT NULL
)
SELECT k, (SELECT run_at FROM ${jobs} WHERE ${grouped} AND group_key = g.k ORDER BY run_at LIMIT 1) AS t FROM g WHERE k IS NOT NULL LIMIT $4`);
    this.running = statement(
      `SELECT group_key, count(*)::int AS n FROM ${jobs} WHERE namespace = $1 AND stage = 'running' AND topic IS NULL AND job_type = $2 GROUP BY group_key`,
    );
    const uniqueFree = `(unique_slot IS DISTINCT FROM 'pending' OR NOT EXISTS (SELECT 1 FROM ${jobs} s
        WHERE s.namespace = $1 AND s.job_type = w.job_type AND s.unique_key = w.unique_key AND s.unique_slot = 'active'))`;
    const claimed = transition({ kinds: "claim", rows: "claimed", leftRows: "ready", from: "stage", to: "'running'", at: "$2::bigint" });
    this.claim = statement(`WITH ready AS (
  SELECT r.id, r.stage, r.topic, r.partition_no FROM json_to_recordset($3::json) AS q(g text, n integer) CROSS JOIN LATERAL (
    SELECT id, stage, topic, partition_no FROM ${jobs} w
    WHERE namespace = $1 AND job_type = $4 AND stage IN ${CLAIMABLE} AND topic IS NULL AND group_key IS NOT NULL AND group_key = q.g
      AND run_at <= $2 AND ${uniqueFree}
    ORDER BY run_at LIMIT q.n
    FOR UPDATE SKIP LOCKED
  ) r
  UNION ALL
  SELECT u.id, u.stage, u.topic, u.partition_no FROM (
    SELECT id, stage, topic, partition_no FROM ${jobs} w
    WHERE namespace = $1 AND stage IN ${CLAIMABLE} AND topic IS NULL AND job_type = $4 AND group_key IS NULL AND run_at <= $2 AND ${uniqueFree}
    ORDER BY priority, run_at LIMIT $7
    FOR UPDATE SKIP LOCKED
  ) u
), claimed AS (
  UPDATE ${jobs} j SET ${claimed.stage}, attempt = j.attempt + 1, lease_owner = $5, lease_expires_at = $6, updated_at = $2,
    ${claimed.history}, unique_slot = CASE WHEN j.unique_slot IS NOT NULL THEN 'active' END
  WHERE j.id = ANY(ARRAY(SELECT id FROM ready))
  RETURNING j.id, j.job_type, j.payload, j.attempt, j.retry_policy, j.run_at, j.topic, j.partition_no, j.timeout_ms, j.meta, j.group_key
)${transitionTail(schema, "$1", [claimed])}
SELECT id, job_type, payload, attempt, retry_policy, run_at, timeout_ms, meta, group_key FROM claimed`);
    this.cursor = statement(`UPDATE ${schema}.later_limits SET group_cursor = $3 WHERE namespace = $1 AND job_type = $2`);
  }

  /**
   * Up to `want` ready jobs of `type` (whose limits row `row`, with a group
   * limit, the caller holds locked), at most `row.groupConcurrency` running
   * per group, dealt round-robin over the due groups from the cursor on;
   * moves the cursor to the last group served. `nextRunAt`: the earliest
   * oldest row of a walked group not yet due (null: none).
   */
  async run(
    execute: Execute,
    namespace: string,
    params: B.JobClaimReadyParams,
    type: string,
    row: StoredLimitRow,
    want: number,
  ): Promise<B.JobClaimReadyResult> {
    const running = new Map<string | null, number>();
    for (const r of await execute(this.running, [namespace, type])) running.set(r.group_key === null ? null : String(r.group_key), Number(r.n));
    const cap = groupWalkCap(want, running, row.groupConcurrency!);
    const walked = async (after: string, n: number): Promise<WalkedGroup[]> =>
      (await execute(this.walk, [namespace, type, after, n])).map((r) => ({ key: String(r.k), firstRunAt: Number(r.t) }));
    const afterCursor = await walked(row.groupCursor ?? "", cap);
    const fromStart = afterCursor.length < cap && row.groupCursor !== null ? await walked("", cap - afterCursor.length) : [];
    const { candidates, nextRunAt } = groupCandidates(walkOrder(afterCursor, fromStart, cap), running, row.groupConcurrency!, params.now);
    const rounds = new GroupRounds(candidates, want);
    const jobs: B.ClaimedJob[] = [];
    for (let shares = rounds.shares(); shares.length > 0; shares = rounds.shares()) {
      const groupShares = shares.filter((s) => s.key !== null).map((s) => ({ g: s.key, n: s.n }));
      const ungrouped = shares.find((s) => s.key === null)?.n ?? 0;
      const rows = await execute(this.claim, [namespace, params.now, JSON.stringify(groupShares), type, params.owner, params.leaseExpiresAt, ungrouped]);
      jobs.push(...rows.map(claimedJob));
      rounds.took(countByGroup(rows));
    }
    if (rounds.lastServed !== null && rounds.lastServed !== row.groupCursor) await execute(this.cursor, [namespace, type, rounds.lastServed]);
    return { jobs, nextRunAt };
  }
}
