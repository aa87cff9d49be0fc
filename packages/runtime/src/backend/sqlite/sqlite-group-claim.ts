/**
 * X9 groups on SQLite: the limited claim of one job type that has a
 * `groupConcurrency`, inside the claim's `immediate` transaction (one
 * writer: the counts and the claim cannot interleave with another
 * server's). The same design as PostgreSQL's (postgres-group-claim.ts): a
 * skip scan of the type's distinct ready groups through
 * `later_jobs_ready_group` (only claimable rows that carry a group; one
 * index probe per group, whatever its backlog), from the type's cursor on;
 * the running jobs per group through `later_jobs_running`; when the walk
 * from the cursor on fills the claim with one job per group, the walk and
 * the claim are one statement ({@link CLAIM_FIRST_PASS}); else each group's
 * share (`GroupRounds`) is claimed oldest first by one probe of the group
 * index, read apart, then all the groups of a pass claimed by one UPDATE. The type's jobs with no group are one group of
 * their own, stored with the key `''` (shared/ungrouped-group.ts): a walk from the start reaches it first, and its
 * share is read in (priority, run_at) order through `later_jobs_ready_ungrouped`. A row stored with no group at all
 * (written before the type's group limit) is not claimed here: the stuck-job rescue moves it to `''`
 * (`limitsUngroupedAdopt`).
 */
import { CLAIMABLE_STAGES } from "../../core/job-stage.js";
import { stageOneOf } from "../shared/stage-list.js";
import { countByGroup, groupCandidates, GroupRounds, groupWalkCap, walkOrder, type WalkedGroup } from "../shared/group-rounds.js";
import type { StoredLimitRow } from "../shared/limit-slots.js";
import type { Row } from "../shared/job-rows.js";
import { UNGROUPED_KEY } from "../shared/ungrouped-group.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { SQLITE_TRANSITIONS as T } from "./sqlite-transition.js";

const CLAIMABLE = stageOneOf(CLAIMABLE_STAGES);

/** The group index's predicate word for word; binds namespace, type. */
const GROUPED = `namespace = ? AND job_type = ? AND ${CLAIMABLE} AND topic IS NULL AND group_key IS NOT NULL`;

/** A job (jobs alias `a`) that a claim may take unless another with its unique key runs (X2). */
const uniqueFree = (a: string) => `(${a}.unique_slot IS NOT 'pending' OR NOT EXISTS (SELECT 1 FROM later_jobs s WHERE s.namespace = ${a}.namespace
  AND s.job_type = ${a}.job_type AND s.unique_key = ${a}.unique_key AND s.unique_slot = 'active'))`;

/** {@link uniqueFree} of the jobs alias `w`. */
const UNIQUE_FREE = uniqueFree("w");

/**
 * The walk. Binds ns, type, after, ns, type, rows (groups + 1, the walk's last row is its end), then now,
 * ns, type, now: `k` per group in key order, and `id`, the id of the group's oldest job a pass could take
 * now (due, not waiting behind its unique key; null: none), in the walk's own statement: the first pass
 * gives most groups a share of one, and those are then claimed without a statement run per group.
 * One index probe per group: a group's first entry in the group index is its oldest row, whose `rowid`
 * the probe reads from the index (it never leaves the statement); the next probe starts after that row's
 * key (one read by `rowid`), and that row is the group's `id` when it is due and free; only when it waits
 * behind its unique key does {@link GROUP_ID}'s probe look further into the group. (A probe for the next
 * key and another for the oldest due row read the index twice per group.) One row, the groups as a JSON
 * array of `[k, id]` in walk order: a row per group cost more to hand over than to read. A group's oldest
 * `run_at` is not returned: only a claim that came back short reads it for the groups that gave none
 * ({@link FIRST_RUN_AT}), for its next due time.
 */
const WALK = `${walkCte()}
SELECT json_group_array(json_array(o.group_key, ${walkedId()}) ORDER BY g.n) AS w
FROM g JOIN later_jobs o ON o.rowid = g.r`;

/** {@link WALK}'s groups, `g(r, n)`: each group's oldest row (`rowid`) and its place in the walk; binds ns, type, after, ns, type, rows. */
function walkCte(): string {
  return `WITH RECURSIVE g(r, n) AS (
  SELECT (SELECT rowid FROM later_jobs WHERE ${GROUPED} AND group_key > ? ORDER BY group_key, run_at LIMIT 1), 0
  UNION ALL
  SELECT (SELECT rowid FROM later_jobs WHERE ${GROUPED} AND group_key > (SELECT group_key FROM later_jobs WHERE rowid = g.r)
    ORDER BY group_key, run_at LIMIT 1), n + 1 FROM g WHERE g.r IS NOT NULL
  LIMIT ? + 0
)`;
}

/** {@link WALK}'s `id` of the group whose oldest row is `o`; binds now, ns, type, now. */
function walkedId(): string {
  return `CASE WHEN o.run_at > ? THEN NULL WHEN ${uniqueFree("o")} THEN o.id
  ELSE (SELECT id FROM later_jobs w WHERE ${GROUPED} AND group_key = o.group_key AND run_at <= ? AND ${UNIQUE_FREE} ORDER BY run_at LIMIT 1) END`;
}

/**
 * The ungrouped group (`''`, shared/ungrouped-group.ts) when it has a job a pass could take now, for a walk from the
 * start (`> ''` in {@link WALK} passes it by); binds ns, type, now.
 */
const UNGROUPED_FIRST = `SELECT id FROM later_jobs w WHERE ${GROUPED} AND group_key = '' AND run_at <= ? AND ${UNIQUE_FREE} LIMIT 1`;

/**
 * The ungrouped group's rows in (priority, run_at) order (X1), through `later_jobs_ready_ungrouped` (whose predicate
 * this repeats); binds ns, type, now, n. Named (`INDEXED BY`): without statistics SQLite took the group index, one
 * more equality and a range on `run_at`, and sorted the whole group for each share.
 */
const UNGROUPED_IDS = `SELECT id FROM later_jobs w INDEXED BY later_jobs_ready_ungrouped WHERE namespace = ? AND job_type = ? AND group_key = '' AND ${CLAIMABLE} AND topic IS NULL
  AND run_at <= ? AND ${UNIQUE_FREE} ORDER BY priority, run_at LIMIT ? + 0`;

/** A group's oldest claimable `run_at`; binds ns, type, group. */
const FIRST_RUN_AT = `SELECT run_at FROM later_jobs WHERE ${GROUPED} AND group_key = ? ORDER BY run_at LIMIT 1`;

/**
 * The group of each running job of the type (null: the ungrouped group, `''` or none stored) as one JSON array,
 * counted in the caller; `later_jobs_running`'s predicate word for word; binds ns, type. (Counted in SQL, `GROUP BY`
 * sorted the rows and returned a row per group: about 310 µs for 500 running jobs of 500 groups, against 80.)
 */
const RUNNING = `SELECT json_group_array(nullif(group_key, '')) AS g FROM later_jobs WHERE namespace = ? AND stage = 'running' AND topic IS NULL AND job_type = ?`;

const CLAIM_SET = `UPDATE later_jobs SET ${T.claim.stage}, attempt = attempt + 1, lease_owner = ?, lease_expires_at = ?, updated_at = ?,
  ${T.claim.history}, unique_slot = CASE WHEN unique_slot IS NOT NULL THEN 'active' END`;
const CLAIM_RETURNING = `RETURNING id, job_type, payload, attempt, retry_policy, timeout_ms, run_at, json_extract(stages, '$[#-2][0]') AS was, meta, priority, group_key`;

/** One group's share, oldest first: the ids, by one index range of the group index; binds ns, type, group, now, n. */
const GROUP_IDS = `SELECT id FROM later_jobs w WHERE ${GROUPED} AND group_key = ? AND run_at <= ? AND ${UNIQUE_FREE} ORDER BY run_at LIMIT ? + 0`;

/**
 * {@link GROUP_IDS} for a share of one, the usual one (a round gives each group one job), without the `n`.
 * (Measured when the limit was bound bare, `LIMIT ?`: 4 µs a run against 19; the difference was SQLite
 * preparing the statement again at every run, which `LIMIT ? + 0` no longer causes: see `unplanned`.)
 */
const GROUP_ID = `SELECT id FROM later_jobs w WHERE ${GROUPED} AND group_key = ? AND run_at <= ? AND ${UNIQUE_FREE} ORDER BY run_at LIMIT 1`;

/**
 * The claim of the jobs whose ids a pass read ({@link GROUP_IDS}, in the same `immediate` transaction, so
 * no other writer comes between): one UPDATE by primary key for every group of the pass. Binds owner, lease
 * expiry, now, now, then the ids as a JSON array. (One UPDATE per group costs a statement run per job when
 * each group gives one; one UPDATE over a compound SELECT of the groups' ranges costs about four times the
 * reads done apart.) By id, not `rowid`: a `rowid` can pass 2^53 (sqlite-row-places.ts), past what a
 * JavaScript number holds exactly.
 */
const CLAIM_IDS = `${CLAIM_SET}
  WHERE id IN (SELECT value FROM json_each(?))
  ${CLAIM_RETURNING}`;

const WRITE_CURSOR = "UPDATE later_limits SET group_cursor = ? WHERE namespace = ? AND job_type = ?";

/**
 * The first pass in one statement, when it alone fills the claim from the cursor on: the usual claim while more
 * groups are ready than it takes and none is at its limit (`claimGroups` runs it only then, so every walked
 * group has a free slot). {@link WALK} after the cursor, and the first `want` walked groups with a job to give,
 * one job each, claimed by id; nothing when fewer than `want` (a lap's end, few groups due: the passes of
 * `claimGroups` then decide). Binds {@link WALK}'s ns, type, after, ns, type, rows, now, ns, type, now, then
 * want, the claim's owner, lease expiry, now, now, and want. (The walk's groups and their ids handed to the
 * claim and back, dealt in between, cost about 1.5 µs a job more, 20,000 jobs over 1,000 groups.)
 */
const CLAIM_FIRST_PASS = `${walkCte()}, picks AS MATERIALIZED (
  SELECT id FROM (SELECT ${walkedId()} AS id, g.n AS n FROM g JOIN later_jobs o ON o.rowid = g.r)
  WHERE id IS NOT NULL ORDER BY n LIMIT ? + 0
)
${CLAIM_SET}
  WHERE id IN (SELECT id FROM picks) AND (SELECT count(*) FROM picks) = ?
  ${CLAIM_RETURNING}`;

/** The cursor to the last of the groups `?` (JSON) in the walk's order (the database's); binds groups, ns, type. */
const WRITE_CURSOR_LAST = "UPDATE later_limits SET group_cursor = (SELECT max(value) FROM json_each(?)) WHERE namespace = ? AND job_type = ?";

/** Who claims, and when: the claim's owner, lease expiry and time. */
export interface GroupClaimLease {
  owner: string;
  leaseExpiresAt: number;
  now: number;
}

/**
 * Up to `want` ready jobs of `type` (limits `row`, with a group limit), at
 * most `row.groupConcurrency` running per group, dealt round-robin over the
 * due groups from the cursor on; moves the cursor to the last group served.
 * Returns the claimed rows (with `was`) and the earliest oldest row of a
 * walked group not yet due (null: none).
 */
export function claimGroups(
  c: SqliteConnection,
  namespace: string,
  lease: GroupClaimLease,
  type: string,
  row: StoredLimitRow,
  want: number,
  /** No group can reach its limit in this claim (the namespace's running jobs plus `want` are within it): the counts by group are not read. */
  farFromLimit = false,
): { rows: Row[]; nextRunAt: number | null } {
  const running = farFromLimit ? new Map<string | null, number>() : countByGroup(JSON.parse(String(c.get(RUNNING, namespace, type)?.g ?? "[]")) as unknown[]);
  const cap = groupWalkCap(want, running, row.groupConcurrency!);
  const set = [lease.owner, lease.leaseExpiresAt, lease.now, lease.now];
  // The first pass in one statement while no walked group can be at its limit (the usual claim while the limits are
  // far from reached). With groups at their limit the walk is longer by as many, and when that claim comes back short
  // the passes below walk again: they decide alone. (The ungrouped group is not walked after the cursor.)
  const someFull = [...running].some(([key, n]) => key !== null && n >= row.groupConcurrency!);
  if (row.groupCursor !== null && !someFull) {
    const walk = [namespace, type, row.groupCursor, namespace, type, cap + 1, lease.now, namespace, type, lease.now];
    const claimed = c.all(CLAIM_FIRST_PASS, ...walk, want, ...set, want);
    if (claimed.length > 0) {
      c.run(WRITE_CURSOR_LAST, JSON.stringify(claimed.map((r) => r.group_key)), namespace, type);
      return { rows: claimed, nextRunAt: null };
    }
  }
  // Each walked group's first job, read with the walk: the first pass's shares of one take it (no other writer
  // comes between, in this transaction); later passes, and larger shares, read their ids by GROUP_ID(S).
  const firstIds = new Map<string, unknown>();
  // From the start (`after` null) the walk begins with the ungrouped group, when it has a job to give now.
  const walked = (after: string | null, n: number): WalkedGroup[] => {
    const ungrouped =
      after === null && n > 0 && c.get(UNGROUPED_FIRST, namespace, type, lease.now) !== undefined ? [{ key: UNGROUPED_KEY, firstRunAt: null }] : [];
    const w = c.get(WALK, namespace, type, after ?? "", namespace, type, n - ungrouped.length + 1, lease.now, namespace, type, lease.now)?.w;
    const groups: WalkedGroup[] = ungrouped;
    for (const [k, id] of JSON.parse(String(w ?? "[]")) as [string, string | null][]) {
      firstIds.set(k, id);
      groups.push({ key: k, firstRunAt: null });
    }
    return groups;
  };
  const afterCursor = walked(row.groupCursor, cap);
  const fromStart = afterCursor.length < cap && row.groupCursor !== null ? walked(null, cap - afterCursor.length) : [];
  const { candidates } = groupCandidates(walkOrder(afterCursor, fromStart, cap), running, row.groupConcurrency!, lease.now);
  const rounds = new GroupRounds(candidates, want);
  const taken = new Set<string | null>();
  const rows: Row[] = [];
  for (let shares = rounds.shares(), first = true; shares.length > 0; shares = rounds.shares(), first = false) {
    const pass: Row[] = [];
    const ids: unknown[] = [];
    for (const s of shares) {
      if (s.key === UNGROUPED_KEY) for (const r of c.all(UNGROUPED_IDS, namespace, type, lease.now, s.n)) ids.push(r.id);
      else if (s.n === 1) {
        const id = first ? firstIds.get(s.key) : c.get(GROUP_ID, namespace, type, s.key, lease.now)?.id;
        if (id !== undefined && id !== null) ids.push(id);
      } else for (const r of c.all(GROUP_IDS, namespace, type, s.key, lease.now, s.n)) ids.push(r.id);
    }
    if (ids.length > 0) pass.push(...c.all(CLAIM_IDS, ...set, JSON.stringify(ids)));
    rows.push(...pass);
    const got = countByGroup(pass.map((r) => r.group_key));
    for (const key of got.keys()) taken.add(key);
    rounds.took(got);
  }
  if (rounds.lastServed !== null && rounds.lastServed !== row.groupCursor) c.run(WRITE_CURSOR, rounds.lastServed, namespace, type);
  // Short: the earliest oldest row of the walked groups with a free slot that gave nothing (not due yet, or locked).
  let nextRunAt: number | null = null;
  if (rows.length < want) {
    for (const g of candidates) {
      if (g.free === 0 || taken.has(g.key)) continue;
      const t = c.get(FIRST_RUN_AT, namespace, type, g.key)?.run_at;
      if (t !== undefined && t !== null && Number(t) > lease.now && (nextRunAt === null || Number(t) < nextRunAt)) nextRunAt = Number(t);
    }
  }
  return { rows, nextRunAt };
}
