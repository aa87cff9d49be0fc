/**
 * X9 groups on PostgreSQL: the limited claim of one job type that has a
 * `groupConcurrency`, run by `PostgresLimits.claim`: first without a lock,
 * fenced by the version of the type's `later_limits` row (below), else in
 * its transaction under that row's lock (so the limited claims of the type,
 * on every server, run one at a time and each counts what the one before
 * committed).
 *
 * How it avoids scanning a backlog:
 * - the walk: the type's distinct ready groups through `later_jobs_ready_group`
 *   ((namespace, job_type, group_key, run_at), only the claimable rows that
 *   carry a group): a recursive skip scan, one index descent per group
 *   (`group_key > previous ORDER BY group_key, run_at LIMIT 1`, which lands on
 *   the next group's oldest row, its `run_at` with it). It starts after the
 *   type's cursor and stops after `cap` groups (`groupWalkCap`): a group with
 *   100,000 ready rows costs one descent, as one with a single row.
 * - running: the type's running jobs per group, through `later_jobs_running`
 *   (its predicate word for word): the running jobs of the namespace, which
 *   the workers bound; no index of running jobs by group, which every claim
 *   and finish would maintain. Not read when the stage counters' running
 *   jobs of the namespace plus the claim stay within the limits.
 * - `claim`: each group's share (`GroupRounds`) as one LATERAL probe of the
 *   group index, `group_key = g AND run_at <= now ORDER BY run_at LIMIT n`:
 *   it reads the rows it takes. The type's jobs with no group are one group
 *   of their own, stored with the key `''` (shared/ungrouped-group.ts): the
 *   walk from the start finds it first (`first`), so it takes its turn once
 *   a lap, and its share is read through `later_jobs_ready_ungrouped` in
 *   (priority, run_at) order. A row stored with no group at all (written
 *   before the type's group limit) is not claimed here: the stuck-job
 *   rescue moves it to `''` (`limitsUngroupedAdopt`). Reading such rows
 *   here, through `later_jobs_ready` narrowed to the type, read every ready
 *   row ahead of them in (priority, run_at) order at each claim: behind a
 *   100,000-job backlog about 20 ms a claim.
 * Within a group, jobs are taken oldest first (`run_at`); priority (X1)
 * orders the ungrouped group only.
 *
 * Round trips: `read` is the limits row, the running counts and the walk in
 * one statement; `claim` is a pass's shares and the cursor's move in one. In
 * the locked transaction of `PostgresLimits` that is four round trips with
 * BEGIN and COMMIT; without it (`PostgresLimits.claim`'s first try) two: the
 * claim writes the limits row only if it is still the version the read saw
 * (`ctid`, see postgres-limits.ts), else claims nothing and the transaction
 * decides, so the read's counts are true when the claim uses them.
 */
import type * as B from "../backend.js";
import { CLAIMABLE_STAGES, JOB_STAGES } from "../../core/job-stage.js";
import { stageList } from "../shared/stage-list.js";
import { countByGroup, groupCandidates, GroupRounds, type WalkedGroup } from "../shared/group-rounds.js";
import { type StoredLimitRow, storedLimitRow } from "../shared/limit-slots.js";
import { claimedJob } from "../shared/job-rows.js";
import { transition, transitionTail } from "./postgres-transition.js";
import { claimedFromArray } from "./postgres-claim-queries.js";
import { type Execute, type ExecuteArrays, statement, type Statement } from "./postgres-statement.js";

/**
 * The claimable rows that carry a group, in the words of `later_jobs_ready_group`'s predicate (migration
 * 22): the stages a claimable row is not (the same rows, by the stage CHECK). These words prove that
 * index's predicate and not `later_jobs_ready`'s (`stage IN (...)`), so a statement over grouped ready
 * rows cannot be planned through `later_jobs_ready`. With `stage IN (...)` it could, and on a table filled
 * since it was last analyzed (a fresh burst; autoanalyze comes up to a minute later) the planner took it,
 * estimating one row, and sorted every ready job of the namespace for each group probed: a walk of 266
 * groups over 40,000 jobs took 4 s, and 40,000 jobs of 1,000 groups ran at 196 jobs/s until autoanalyze.
 */
export const GROUPED_READY = `stage NOT IN ${stageList(JOB_STAGES.filter((s) => !CLAIMABLE_STAGES.includes(s)))} AND topic IS NULL AND group_key IS NOT NULL`;

/**
 * The claimable rows of the ungrouped group (shared/ungrouped-group.ts), in the words of
 * `later_jobs_ready_ungrouped`'s predicate (migration 24), which serves that group's share in (priority, run_at)
 * order.
 */
const UNGROUPED_READY = `stage NOT IN ${stageList(JOB_STAGES.filter((s) => !CLAIMABLE_STAGES.includes(s)))} AND topic IS NULL AND group_key = ''`;

/** The first pass of a claim made by `readAndClaim`: its jobs, how many of them per group (null: the ungrouped), and the limits row's version it wrote. */
interface FirstPass {
  jobs: B.ClaimedJob[];
  groups: Map<string | null, number>;
  version: string;
}

/** What {@link PostgresGroupClaim.read} found of one type. */
export interface GroupRead {
  /** The type's stored limits; null: no row (the type is not limited now). */
  row: StoredLimitRow | null;
  /** The version of that row the read saw (`ctid`), the fence of a claim made without its lock. */
  version: string | null;
  /** Running jobs per group (null: the ungrouped). */
  running: Map<string | null, number>;
  /** The walk's groups in claim order, from the cursor on, wrapping around once. */
  walked: WalkedGroup[];
}

/** A {@link GroupRead} from the `lim`, `running` and `walked` columns of a read (null `running` or `walked`: none). */
function groupRead(r: Record<string, unknown> | undefined): GroupRead {
  const lim = (r?.lim ?? null) as Record<string, unknown> | null;
  const running = new Map<string | null, number>();
  for (const x of (r?.running ?? []) as { group_key: string | null; n: number }[]) running.set(x.group_key, Number(x.n));
  const walked = ((r?.walked ?? []) as [string, number | string | null][]).map(([k, t]) => ({ key: k, firstRunAt: t === null ? null : Number(t) }));
  return {
    row: lim === null ? null : storedLimitRow({ ...lim, rate_starts: lim.rate_starts === null ? null : String(lim.rate_starts) }),
    version: lim === null ? null : String(lim.v),
    running,
    walked,
  };
}

export class PostgresGroupClaim {
  /**
   * `$1` namespace, `$2` type, `$3` the claim's slots: one row, `lim` (the limits row as JSON, with its
   * `ctid` as `v`), `running` (JSON `[{ group_key, n }]`; empty when the namespace's running jobs of every
   * type, from the stage counters, plus `$3` stay within the group and type limits: no group or type can
   * pass them, and the running rows are not read) and `walked` (JSON `[[k, t], ...]`): the groups
   * after the cursor, then from the first up to the cursor, at most `$3` + the groups at their limit + 16
   * (`groupWalkCap`'s rule), each with its oldest claimable `run_at`, one index probe per group.
   */
  private readonly read: Statement;
  /**
   * `$1` namespace, `$2` now, `$3` shares (JSON `[{ g, n }]`), `$4` type, `$5` owner, `$6` lease
   * expiry, `$7` the limits row's version the shares were dealt from (null: the caller holds its lock),
   * `$8` the cursor to store (null: unchanged): the claimed rows with their `group_key`, then one row with
   * a null id whose `v` is the limits row's new version (null: it was not the version `$7`, and nothing was
   * claimed).
   */
  private readonly claim: Statement;

  /**
   * `read` and the first pass of the claim in one statement (`$1` namespace, `$2` type, `$3` the claim's
   * slots, `$4` now, `$5` owner, `$6` lease expiry), for a claim made without the limits row's lock. When
   * round 1 is all the claim can deal (no rate limit, the type's concurrency not in the way, and either at least
   * `$3` due walked groups with a free slot, the common case when the limits are far from reached, or every due
   * group below its limit has one slot left, the common case when they are reached, so no later round gives any
   * group a second job), it claims each of the first `$3` such groups' oldest row, the very row the walk landed
   * on, by its place (`ctid`, checked against
   * its id: a TID scan, no index descent, where a separate pass probes each group again and a lookup by id
   * descends the primary key), fenced by the limits row's version as `claim` is. A row updated since the walk's
   * snapshot has moved and is not taken there. A group
   * whose row that was is no longer claimable, or waits behind its unique key's running job, or is locked, is
   * probed as `claim` probes it, for its oldest row that can be taken: the same jobs as a pass of `claim`. Returns
   * rows as arrays (no object per row, as the plain claim's): the claimed rows in the columns `claimedFromArray`
   * reads, `group_key` tenth, then one row with a null id: `v` the limits row's new version (null: not claimed),
   * `tried` (whether round 1 was all the claim could deal, so that a null `v` means the row changed), and `read`'s
   * `lim`, `running` and `walked`, from which the caller deals any later pass as after `read` (a group whose row
   * round 1 could not take). `running` and `walked` are null when the pass claimed `$3` jobs: no later pass needs
   * them (a claim of 500 over 1,000 groups sent back and parsed 1,000 entries it did not use).
   */
  private readonly readAndClaim: Statement;

  constructor(schema: string) {
    const jobs = `${schema}.later_jobs`;
    const limits = `${schema}.later_limits`;
    // A group's first entry in the group index, (namespace, job_type, group_key, run_at), is its oldest claimable
    // row: one probe gives the next group after `after`, its oldest run_at and (with `id`) that row (GROUPED_READY:
    // only that index can serve it).
    const walk = (id: boolean) => {
      const cols = id ? "k, t, id, c" : "k, t";
      const next = (after: string, extra = "") =>
        `SELECT group_key AS k, run_at AS t${id ? ", id, ctid AS c" : ""} FROM ${jobs} WHERE namespace = $1 AND job_type = $2 AND ${GROUPED_READY} AND group_key > ${after}${extra} ORDER BY group_key, run_at LIMIT 1`;
      // A walk's first group: the ungrouped group ('', which `> ''` passes by) when `ungroupedFirst` holds and it has
      // ready rows, else the next after `after`.
      const first = (after: string, ungroupedFirst: string, extra = "") =>
        `(SELECT * FROM ((SELECT group_key AS k, run_at AS t${id ? ", id, ctid AS c" : ""} FROM ${jobs}
    WHERE namespace = $1 AND job_type = $2 AND ${GROUPED_READY} AND group_key = '' AND ${ungroupedFirst}${extra} ORDER BY run_at LIMIT 1)
    UNION ALL (${next(after, extra)})) a LIMIT 1)`;
      return `WITH RECURSIVE lim AS (
  SELECT ctid::text AS v, concurrency, rate_max, rate_per_ms, rate_starts, group_concurrency, group_cursor FROM ${limits} WHERE namespace = $1 AND job_type = $2
), total AS (
  SELECT coalesce(sum(n), 0)::int AS n FROM ${schema}.later_stage_counts WHERE namespace = $1 AND stage = 'running'
), running AS (
  SELECT nullif(group_key, '') AS group_key, count(*)::int AS n FROM ${jobs} WHERE namespace = $1 AND stage = 'running' AND topic IS NULL AND job_type = $2
    AND NOT EXISTS (SELECT 1 FROM lim, total WHERE total.n + $3::int <= lim.group_concurrency AND (lim.concurrency IS NULL OR total.n + $3::int <= lim.concurrency))
  GROUP BY 1
), at_limit AS (
  SELECT coalesce(array_agg(coalesce(r.group_key, '')), '{}') AS keys FROM running r, lim WHERE r.n >= lim.group_concurrency
), cap AS (
  SELECT $3::int + 16 + cardinality((SELECT keys FROM at_limit)) AS n
), g1 AS (
  ${first("coalesce((SELECT group_cursor FROM lim), '')", "(SELECT group_cursor FROM lim) IS NULL")}
  UNION ALL
  SELECT ${id ? "x.k, x.t, x.id, x.c" : "x.k, x.t"} FROM g1 CROSS JOIN LATERAL (${next("g1.k")}) x
), w1 AS (
  SELECT ${cols} FROM g1 LIMIT (SELECT n FROM cap)
), g2 AS (
  ${first("''", "TRUE", " AND (SELECT group_cursor FROM lim) IS NOT NULL AND (SELECT count(*) FROM w1) < (SELECT n FROM cap)")}
  UNION ALL
  SELECT ${id ? "x.k, x.t, x.id, x.c" : "x.k, x.t"} FROM g2 CROSS JOIN LATERAL (${next("g2.k")}) x WHERE g2.k < (SELECT group_cursor FROM lim)
), w2 AS (
  SELECT ${cols} FROM g2 WHERE k <= (SELECT group_cursor FROM lim) LIMIT greatest(0, (SELECT n FROM cap) - (SELECT count(*) FROM w1))
), walked AS (
  SELECT ${cols}, 1 AS o FROM w1 UNION ALL SELECT ${cols}, 2 FROM w2
)`;
    };
    const readColumns = `(SELECT row_to_json(lim) FROM lim) AS lim,
  (SELECT json_agg(running) FROM running) AS running,
  (SELECT json_agg(json_build_array(w.k, w.t) ORDER BY w.o, w.k) FROM walked w) AS walked`;
    this.read = statement(`${walk(false)}
SELECT ${readColumns}`);
    const uniqueFree = `(unique_slot IS DISTINCT FROM 'pending' OR NOT EXISTS (SELECT 1 FROM ${jobs} s
        WHERE s.namespace = $1 AND s.job_type = w.job_type AND s.unique_key = w.unique_key AND s.unique_slot = 'active'))`;
    // One group's share, oldest first, locked: `type`, `group`, `now`, `n` are SQL expressions.
    // The ungrouped group ('') in (priority, run_at) order through its own index (X1 orders that group), any other oldest first.
    const share = (type: string, group: string, now: string, n: string) =>
      `SELECT * FROM (SELECT id, stage, topic, partition_no FROM ${jobs} w
    WHERE namespace = $1 AND job_type = ${type} AND ${GROUPED_READY} AND group_key = ${group} AND ${group} <> '' AND run_at <= ${now} AND ${uniqueFree}
    ORDER BY run_at LIMIT ${n}
    FOR UPDATE SKIP LOCKED) a
    UNION ALL
    SELECT * FROM (SELECT id, stage, topic, partition_no FROM ${jobs} w
    WHERE namespace = $1 AND job_type = ${type} AND ${UNGROUPED_READY} AND ${group} = '' AND run_at <= ${now} AND ${uniqueFree}
    ORDER BY priority, run_at LIMIT ${n}
    FOR UPDATE SKIP LOCKED) b`;
    const claimedSet = (at: string, owner: string, lease: string) => {
      const t = transition({ kinds: "claim", rows: "claimed", leftRows: "ready", from: "stage", to: "'running'", at });
      return {
        t,
        update: `UPDATE ${jobs} j SET ${t.stage}, attempt = j.attempt + 1, lease_owner = ${owner}, lease_expires_at = ${lease}, updated_at = ${at},
    ${t.history}, unique_slot = CASE WHEN j.unique_slot IS NOT NULL THEN 'active' END
  WHERE j.id = ANY(ARRAY(SELECT id FROM ready))
  RETURNING j.id, j.job_type, j.payload, j.attempt, j.retry_policy, j.run_at, j.topic, j.partition_no, j.timeout_ms, j.meta, j.group_key`,
      };
    };
    const claimedColumns = "id, job_type, payload, attempt, retry_policy, run_at, timeout_ms, meta, group_key";
    const pass = claimedSet("$2::bigint", "$5", "$6");
    this.claim = statement(`WITH bump AS (
  UPDATE ${limits} SET group_cursor = coalesce($8, group_cursor)
  WHERE namespace = $1 AND job_type = $4 AND ($7::text IS NULL OR ctid = $7::text::tid)
  RETURNING ctid::text AS v
), ready AS (
  SELECT r.id, r.stage, r.topic, r.partition_no
  FROM (SELECT * FROM json_to_recordset($3::json) AS q(g text, n integer) WHERE EXISTS (SELECT 1 FROM bump)) q CROSS JOIN LATERAL (
    ${share("$4", "q.g", "$2", "q.n")}
  ) r
), claimed AS (
  ${pass.update}
)${transitionTail(schema, "$1", [pass.t])}
SELECT ${claimedColumns}, NULL AS v FROM claimed
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, (SELECT v FROM bump)`);
    // Round 1 (GroupRounds): a slot each to the walked groups that are due and below their limit, in walk order
    // (`at_limit`: the groups at their limit as one array, usually empty; a join of the walk and the running counts,
    // each estimated at one row, would be planned as a nested loop, hundreds of walked groups times hundreds of
    // running groups; and the counts as one jsonb object read by key cost a lookup per walked group).
    // It is the whole deal when there are `$3` of them (`how` 1: each takes its walked row), or when the due groups'
    // free slots add up to at most `$3` (`how` 2: each takes all its free slots, by a share probe): every round
    // would then give each group one more until it is full, the common case when the limits are reached. A group
    // whose job just finished then gets its next ones in this statement, where a later pass was a second round
    // trip. The free slots are counted only when fewer than `$3` groups are due (`dealt`, the counts as one jsonb
    // object read by key, one lookup per due group; a join of the two, each estimated at one row, would be planned
    // as a nested loop). When the running jobs were not read (within the limits by the stage counters), every due
    // group counts `groupConcurrency` free slots: a claim of at most `$3` still stays within its limit. The type's
    // concurrency, when set, must leave `$3` slots (its running jobs are those counted per group; not counted when
    // the namespace's running jobs from the stage counters plus `$3` stay within the limits, and then it does),
    // and a rate limit sends the claim to the locked transaction.
    const first = claimedSet("$4::bigint", "$5", "$6");
    this.readAndClaim = statement(`${walk(true)}, pick AS (
  SELECT w.k, CASE WHEN w.k <> '' THEN w.id END AS id, w.c, w.o FROM walked w
  WHERE w.t <= $4 AND w.k <> ALL ((SELECT keys FROM at_limit)::text[])
  ORDER BY w.o, w.k LIMIT $3
), dealt AS (
  SELECT p.k, lim.group_concurrency - coalesce((c.j ->> p.k)::int, 0) AS n
  FROM pick p, lim, (SELECT jsonb_object_agg(coalesce(group_key, ''), n) AS j FROM running) c
  WHERE (SELECT count(*) FROM pick) < $3
), how AS (
  SELECT CASE WHEN (SELECT count(*) FROM pick) = $3 THEN 1 WHEN (SELECT sum(n) FROM dealt) <= $3 THEN 2 END AS how
), go AS (
  SELECT 1 FROM lim WHERE lim.rate_max IS NULL AND (SELECT how FROM how) IS NOT NULL
    AND (lim.concurrency IS NULL OR (SELECT coalesce(sum(n), 0) FROM running) + $3 <= lim.concurrency)
), bump AS (
  UPDATE ${limits} SET group_cursor = (SELECT k FROM pick ORDER BY o DESC, k DESC LIMIT 1)
  WHERE namespace = $1 AND job_type = $2 AND ctid = (SELECT v FROM lim)::tid AND EXISTS (SELECT 1 FROM go)
  RETURNING ctid::text AS v
), took AS (
  SELECT p.k, w.id, w.stage, w.topic, w.partition_no
  FROM (SELECT k, id, c FROM pick WHERE EXISTS (SELECT 1 FROM bump) AND (SELECT how FROM how) = 1) p LEFT JOIN LATERAL (
    SELECT id, stage, topic, partition_no, group_key, run_at, job_type, unique_key, unique_slot FROM ${jobs} WHERE ctid = p.c AND id = p.id
    LIMIT 1 FOR UPDATE SKIP LOCKED
  ) w ON ${GROUPED_READY} AND w.run_at <= $4 AND ${uniqueFree}
), ready AS (
  SELECT id, stage, topic, partition_no FROM took WHERE id IS NOT NULL
  UNION ALL
  SELECT r.id, r.stage, r.topic, r.partition_no
  FROM (SELECT k, 1 AS n FROM took WHERE id IS NULL
    UNION ALL SELECT k, n FROM dealt WHERE EXISTS (SELECT 1 FROM bump) AND (SELECT how FROM how) = 2) q
  CROSS JOIN LATERAL (
    ${share("$2", "q.k", "$4", "q.n")}
  ) r
), claimed AS (
  ${first.update}
)${transitionTail(schema, "$1", [first.t])}
SELECT id, job_type, payload, attempt, retry_policy, NULL::bigint, run_at, timeout_ms, meta, group_key,
  NULL::text AS v, NULL::boolean AS tried, NULL::json AS lim, NULL::json AS running, NULL::json AS walked FROM claimed
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, (SELECT v FROM bump), EXISTS (SELECT 1 FROM go), (SELECT row_to_json(lim) FROM lim),
  CASE WHEN (SELECT count(*) FROM claimed) < $3 THEN (SELECT json_agg(running) FROM running) END,
  CASE WHEN (SELECT count(*) FROM claimed) < $3 THEN (SELECT json_agg(json_build_array(w.k, w.t) ORDER BY w.o, w.k) FROM walked w) END`);
  }

  /** The limits row, running counts and walk of `type` for a claim of `want` slots (see {@link GroupRead}), in one statement. */
  async readGroups(execute: Execute, namespace: string, type: string, want: number): Promise<GroupRead> {
    const [r] = await execute(this.read, [namespace, type, want]);
    return groupRead(r);
  }

  /**
   * A claim made without the limits row's lock: {@link readGroups} and, when round 1 is all the claim can deal, its
   * first pass, in one statement (see `readAndClaim`). `first`: the rows that pass claimed and the limits row's
   * version it wrote (null: round 1 was not the whole deal, nothing claimed; deal the passes from `read`).
   * Null when round 1 was all it could deal but the limits row changed since the statement's snapshot (nothing
   * claimed): the caller's transaction decides, as when a pass's fence fails.
   */
  async readAndClaimFirst(
    executeArrays: ExecuteArrays,
    namespace: string,
    params: B.JobClaimReadyParams,
    type: string,
    want: number,
  ): Promise<{ read: GroupRead; first: FirstPass | null } | null> {
    const rows = await executeArrays(this.readAndClaim, [namespace, type, want, params.now, params.owner, params.leaseExpiresAt]);
    const at = rows.findIndex((r) => r[0] === null);
    const [v, tried, lim, running, walked] = rows.splice(at, 1)[0]!.slice(10);
    const read = groupRead({ lim, running, walked });
    if (v === null || v === undefined) return tried === true ? null : { read, first: null };
    return { read, first: { jobs: rows.map(claimedFromArray), groups: countByGroup(rows.map((r) => r[9])), version: String(v) } };
  }

  /**
   * Up to `want` ready jobs of `type` (whose limits `read.row` has a group
   * limit), at most `groupConcurrency` running per group, dealt round-robin
   * over the due groups from the cursor on; moves the cursor to the last
   * group served. `fenced`: without the limits row's lock, each pass claims
   * only if the row is still the version the read saw (then the version it
   * wrote); null when the first pass found it changed (nothing claimed).
   * `nextRunAt`: the earliest oldest row of a walked group not yet due.
   */
  async claimShares(
    execute: Execute,
    namespace: string,
    params: B.JobClaimReadyParams,
    type: string,
    read: GroupRead,
    want: number,
    fenced: boolean,
    first: FirstPass | null = null,
  ): Promise<B.JobClaimReadyResult | null> {
    // Round 1 filled the claim: nothing more to deal (and `read` has no walk). Else a group whose row round 1 could not take is dealt again.
    if (first !== null && first.jobs.length >= want) return { jobs: first.jobs };
    const { candidates, nextRunAt } = groupCandidates(read.walked, read.running, read.row!.groupConcurrency!, params.now);
    const rounds = new GroupRounds(candidates, want);
    const jobs: B.ClaimedJob[] = [];
    let version = fenced ? read.version : null;
    let cursor = read.row!.groupCursor;
    let shares = rounds.shares();
    if (first !== null) {
      // Round 1 was claimed by readAndClaimFirst: the same shares (one each to the first `want` due groups with a
      // free slot), the cursor moved to the last of them. A group whose row it could not take leaves, as after any pass.
      version = first.version;
      cursor = rounds.lastServed;
      jobs.push(...first.jobs);
      rounds.took(first.groups);
      shares = rounds.shares();
    }
    for (; shares.length > 0; shares = rounds.shares()) {
      const groupShares = shares.map((s) => ({ g: s.key, n: s.n }));
      const served = rounds.lastServed !== cursor ? rounds.lastServed : null;
      const rows = await execute(this.claim, [namespace, params.now, JSON.stringify(groupShares), type, params.owner, params.leaseExpiresAt, version, served]);
      const at = rows.findIndex((r) => r.id === null);
      const marker = at < 0 ? undefined : rows.splice(at, 1)[0];
      if (marker?.v === null || marker?.v === undefined) return jobs.length === 0 ? null : { jobs, nextRunAt };
      if (fenced) version = String(marker.v);
      if (served !== null) cursor = served;
      jobs.push(...rows.map(claimedJob));
      rounds.took(countByGroup(rows.map((r) => r.group_key)));
    }
    return { jobs, nextRunAt };
  }
}
