/**
 * X9 on SQLite: the limited step of a claim and the limits a starting
 * server stores (`later_limits`, migration 19), run inside the claim's
 * `immediate` transaction: SQLite has one writer, so the count of running
 * jobs and the claim that follows cannot interleave with another server's.
 * Per limited type: one primary-key read of its limits row, one count of its
 * running jobs over the partial index `later_jobs_running` (the namespace's
 * running regular jobs, the type a filter on them: no index by type, which
 * every claim and finish of every job would maintain), and the plain claim
 * narrowed to the type with `LIMIT` the free slots (see
 * `SqliteReadyClaim.claimReady`). A server whose handlers have no limit never
 * runs any of this. Partitioned jobs are neither limited nor counted.
 *
 * A limit far from reached costs no count: the namespace's running jobs, of
 * every type, are one read of the stage counters (`later_stage_counts`,
 * written in the same transactions as the rows), and no type or group runs
 * more than that. When that many plus the claim's slots stay within every
 * `concurrency` being claimed, none can be passed, and the count by type (a
 * read of each running row) is skipped; only `concurrency` needs it. The
 * same holds per type for the count by group and `groupConcurrency`
 * (sqlite-group-claim.ts).
 */
import type * as B from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import { claimNow, limitRecord, limitSlots, startsAfter, storedLimit, type StoredLimitRow, storedLimitRow, windowOpensAt } from "../shared/limit-slots.js";
import { adoptUngroupedSql, groupLimitedTypesSql } from "../shared/ungrouped-group.js";
import { stageOneOf } from "../shared/stage-list.js";
import { CLAIMABLE_STAGES } from "../../core/job-stage.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { claimGroups, type GroupClaimLease } from "./sqlite-group-claim.js";

const READ = `SELECT job_type, concurrency, rate_max, rate_per_ms, rate_starts, group_concurrency, group_cursor FROM later_limits
  WHERE namespace = ? AND job_type IN (SELECT value FROM json_each(?)) ORDER BY job_type`;
/** `later_jobs_running`'s predicate word for word (`stage = 'running' AND topic IS NULL`), so that index serves the count. */
const RUNNING = `SELECT job_type, count(*) AS n FROM later_jobs WHERE namespace = ? AND stage = 'running' AND topic IS NULL
  AND job_type IN (SELECT value FROM json_each(?)) GROUP BY job_type`;
/** The namespace's running jobs of every type (the stage counters): a bound on any type's or group's running count. */
const RUNNING_TOTAL = "SELECT coalesce(sum(n), 0) AS n FROM later_stage_counts WHERE namespace = ? AND stage = 'running'";
const WRITE_STARTS = "UPDATE later_limits SET rate_starts = ? WHERE namespace = ? AND job_type = ?";
const REMOVE = `DELETE FROM later_limits WHERE namespace = ? AND job_type IN (SELECT value FROM json_each(?))
  AND job_type NOT IN (SELECT value FROM json_each(?))`;
const UPSERT = `INSERT INTO later_limits (namespace, job_type, concurrency, rate_max, rate_per_ms, group_concurrency, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (namespace, job_type) DO UPDATE SET concurrency = excluded.concurrency, rate_max = excluded.rate_max,
    rate_per_ms = excluded.rate_per_ms, group_concurrency = excluded.group_concurrency, updated_at = excluded.updated_at`;

/** The group-limited types' ready jobs with no group, moved to their ungrouped group (shared/ungrouped-group.ts); binds ns, ns, ns. */
const ADOPT_UNGROUPED = adoptUngroupedSql({
  jobs: "later_jobs",
  limits: "later_limits",
  namespace: "?",
  rows: `${stageOneOf(CLAIMABLE_STAGES)} AND topic IS NULL`,
});

/**
 * The limited step, inside the caller's `immediate` transaction: up to
 * `limit` jobs of `types`, each type within its stored limits; `claim`
 * claims up to `n` ready jobs of one type (the plain claim), or, for a type
 * with `groupConcurrency`, `claimGroups` (sqlite-group-claim.ts) under the
 * same type slots. Returns the claimed rows and the earliest time a rate
 * window opens or a walked group's oldest job comes due (null: none).
 */
export function claimLimited(
  c: SqliteConnection,
  namespace: string,
  types: readonly string[],
  limit: number,
  lease: GroupClaimLease,
  claim: (type: string, n: number, now: number) => Row[],
): { rows: Row[]; nextSlotAt: number | null } {
  const sorted = [...types].sort();
  const json = JSON.stringify(sorted);
  const limits = new Map(c.all(READ, namespace, json).map((r) => [String(r.job_type), storedLimitRow(r)]));
  const now = claimNow(limits.values(), lease.now);
  const held = now === lease.now ? lease : { ...lease, now };
  const total = Number(c.get(RUNNING_TOTAL, namespace)?.n ?? 0);
  // A type's running count bounds its `concurrency` alone (`limitSlots`; a group limit counts by group, in
  // `claimGroups`). Every such limit far from reached: the bound stands for the counts (a type's running jobs
  // are at most all of them), and the running rows are not read.
  const far = (l: StoredLimitRow) => l.concurrency === null || total + limit <= l.concurrency;
  const running = [...limits.values()].every(far)
    ? new Map(sorted.map((t) => [t, total]))
    : new Map(c.all(RUNNING, namespace, json).map((r) => [String(r.job_type), Number(r.n)]));
  const rows: Row[] = [];
  let nextSlotAt: number | null = null;
  for (const type of sorted) {
    const want = limit - rows.length;
    if (want <= 0) break;
    const row = limits.get(type);
    const slots = row ? limitSlots(row, running.get(type) ?? 0, now, want) : { free: want, nextSlotAt: null };
    if (slots.nextSlotAt !== null && (nextSlotAt === null || slots.nextSlotAt < nextSlotAt)) nextSlotAt = slots.nextSlotAt;
    if (slots.free === 0) continue;
    let claimed: Row[];
    if (row && row.groupConcurrency !== null) {
      const grouped = claimGroups(c, namespace, held, type, row, slots.free, total + slots.free <= row.groupConcurrency);
      claimed = grouped.rows;
      if (grouped.nextRunAt !== null && (nextSlotAt === null || grouped.nextRunAt < nextSlotAt)) nextSlotAt = grouped.nextRunAt;
    } else claimed = claim(type, slots.free, now);
    rows.push(...claimed);
    if (row && row.rateMax !== null && claimed.length > 0) {
      const starts = startsAfter(row, now, claimed.length);
      c.run(WRITE_STARTS, JSON.stringify(starts), namespace, type);
      // Took every slot it had: more may be ready, and the window this claim filled opens then.
      const opens = claimed.length === slots.free ? windowOpensAt(row, starts) : null;
      if (opens !== null && (nextSlotAt === null || opens < nextSlotAt)) nextSlotAt = opens;
    }
  }
  return { rows, nextSlotAt };
}

/** The namespace's types with a stored group limit (X9); binds ns. Read by each insert transaction (shared/ungrouped-group.ts). */
const GROUP_LIMITED_TYPES = groupLimitedTypesSql("later_limits", "?");

/** {@link GROUP_LIMITED_TYPES} as a set, inside the caller's transaction. */
export function groupLimitedTypes(c: SqliteConnection, namespace: string): Set<string> {
  return new Set(c.all(GROUP_LIMITED_TYPES, namespace).map((r) => String(r.job_type)));
}

/** `JobStore.limitsSet` inside the caller's `immediate` transaction. */
export function setLimits(c: SqliteConnection, namespace: string, params: B.LimitsSetParams): B.LimitsSetResult {
  const types = JSON.stringify(params.jobTypes);
  const previous = c.all(READ, namespace, types).map(storedLimit);
  c.run(REMOVE, namespace, types, JSON.stringify(params.limits.map((l) => l.jobType)));
  for (const l of params.limits) {
    const r = limitRecord(l);
    c.run(UPSERT, namespace, r.job_type, r.concurrency, r.rate_max, r.rate_per_ms, r.group_concurrency, params.now);
  }
  // X9: ready jobs enqueued with no group before a group limit was stored join their type's ungrouped group.
  if (params.limits.some((l) => l.groupConcurrency !== null)) c.run(ADOPT_UNGROUPED, namespace, namespace, namespace);
  return { previous };
}

/** `JobStore.limitsUngroupedAdopt` inside the caller's `immediate` transaction: nothing run when the namespace has no group limit. */
export function adoptUngrouped(c: SqliteConnection, namespace: string): B.LimitsUngroupedAdoptResult {
  if (groupLimitedTypes(c, namespace).size === 0) return { moved: 0 };
  return { moved: c.run(ADOPT_UNGROUPED, namespace, namespace, namespace) };
}
