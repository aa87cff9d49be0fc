/**
 * Fan-in continuations on SQLite (X5 in docs/semantics.md): a job of
 * several parents (`JobInsert.parentIds`) stores `parents_left`, the number
 * of its parents not yet succeeded, and one edge per parent in
 * `later_job_parents` (deleted with the child by a trigger, migration 18).
 *
 * - Insert: the parents are read and marked (`waiters + 1`, which on SQLite
 *   only fan-in inserts do: a single-parent child is found by `parent_id`
 *   on every success anyway), the child's stage decided by `fanInStage`, the
 *   edges written with whether each parent had already succeeded.
 * - A success of a parent with `waiters > 0` ({@link releaseFanInChildren}):
 *   each of its edges not yet counted is counted once (`succeeded = 1`),
 *   the child's `parents_left` goes down by its count, and a child reaching
 *   0 is released through the `releaseChild` transition.
 * - A parent that fails for good fails its waiting fan-in children
 *   (`failChild`, {@link FAN_IN_SQL.failChildren}) down the chain, as a
 *   single parent does (J5).
 *
 * Every write runs inside the caller's `immediate` transaction: one writer
 * at a time, so no count is lost between a read and its write.
 */
import type { JobInsert } from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import type { StageDeltas } from "./sqlite-stage-counters.js";
import { SQLITE_TRANSITIONS as T } from "./sqlite-transition.js";

/** The statements of fan-in continuations (`?` bound in the order each comment gives). */
export const FAN_IN_SQL = {
  /** The parents' rows: `namespace`, JSON array of ids. */
  parents: "SELECT id, stage, last_error FROM later_jobs WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))",
  /** Marks the parents as having a continuation: `namespace`, JSON array of ids. */
  mark: "UPDATE later_jobs SET waiters = waiters + 1 WHERE namespace = ? AND id IN (SELECT value FROM json_each(?))",
  /** The edges of one child: `namespace`, child id, JSON array of `[parent id, succeeded 0|1]`. */
  edges: `INSERT OR IGNORE INTO later_job_parents (namespace, child_id, parent_id, succeeded)
    SELECT ?, ?, json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)`,
  /** Counts the not yet counted edges of succeeded parents: `namespace`, JSON array of parent ids. Returns `child_id` per edge. */
  countEdges: `UPDATE later_job_parents SET succeeded = 1
    WHERE namespace = ? AND parent_id IN (SELECT value FROM json_each(?)) AND succeeded = 0 RETURNING child_id`,
  /** Counts a waiting child down: `n`, child id, namespace. Returns `parents_left`. */
  countDown: "UPDATE later_jobs SET parents_left = parents_left - ? WHERE id = ? AND namespace = ? AND stage = 'waiting' RETURNING parents_left",
  /** Releases children (`releaseChild`): `now` ×5 (stage, run_at, updated_at, the history's stage and time), JSON array of child ids, namespace. */
  release: `UPDATE later_jobs SET ${T.releaseChild.stage}, run_at = max(run_at, ?), updated_at = ?, ${T.releaseChild.history}
    WHERE id IN (SELECT value FROM json_each(?)) AND namespace = ? AND stage = 'waiting' AND parents_left = 0 RETURNING stage, topic, partition_no`,
  /** Fails the waiting fan-in children of one failed parent (`failChild`): now, expires, reason, now (history), namespace, namespace, parent id. */
  failChildren: `UPDATE later_jobs SET ${T.failChild.stage}, updated_at = ?, expires_at = ?, last_error = ?, ${T.failChild.history}
    WHERE namespace = ? AND stage = 'waiting' AND id IN (SELECT child_id FROM later_job_parents WHERE namespace = ? AND parent_id = ?)
    RETURNING id, topic, partition_no`,
} as const;

/** The parents of a fan-in job read and marked (inside the caller's transaction), by id. */
export function readFanInParents(c: SqliteConnection, namespace: string, job: JobInsert): Map<string, Row> {
  const ids = JSON.stringify(job.parentIds ?? []);
  const parents = new Map(c.all(FAN_IN_SQL.parents, namespace, ids).map((r) => [String(r.id), r]));
  c.run(FAN_IN_SQL.mark, namespace, ids);
  return parents;
}

/** The `edges` JSON of a fan-in job: each parent with whether it had already succeeded. */
export function edgesJson(job: JobInsert, parents: ReadonlyMap<string, Row>): string {
  return JSON.stringify((job.parentIds ?? []).map((id) => [id, parents.get(id)?.stage === "success" ? 1 : 0]));
}

/**
 * Counts the successes of `parentIds` (parents with `waiters > 0`) off
 * their waiting fan-in children and releases those with none left; adds
 * the moves to `deltas` and returns how many were released.
 */
export function releaseFanInChildren(c: SqliteConnection, namespace: string, parentIds: readonly string[], now: number, deltas: StageDeltas): number {
  const counts = new Map<string, number>();
  for (const r of c.all(FAN_IN_SQL.countEdges, namespace, JSON.stringify(parentIds))) counts.set(String(r.child_id), (counts.get(String(r.child_id)) ?? 0) + 1);
  const ready: string[] = [];
  for (const [child, n] of counts) {
    const row = c.get(FAN_IN_SQL.countDown, n, child, namespace);
    if (row && Number(row.parents_left) <= 0) ready.push(child);
  }
  if (ready.length === 0) return 0;
  const rows = c.all(FAN_IN_SQL.release, now, now, now, now, now, JSON.stringify(ready), namespace);
  T.releaseChild.count(deltas, rows, "waiting");
  return rows.length;
}
