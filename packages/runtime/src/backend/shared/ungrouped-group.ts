/**
 * X9: the ungrouped group, as stored. The jobs of a type with a
 * `groupConcurrency` that were enqueued with no group are one group of their
 * own (docs/semantics.md X9). So that the claim's round-robin reaches that
 * group in its turn, as it reaches any other, they are stored with the group
 * key `''` (never a group a user can give: a group is 1 to 200 characters)
 * and so lie in `later_jobs_ready_group` with the others: `''` sorts before
 * every key, so the walk over the type's groups serves it between the last
 * group and the first, once a lap.
 *
 * Terminology:
 * - *ungrouped job*: a job enqueued without `group`; `job.group` is null
 *   whatever is stored.
 * - *the ungrouped group*: the ungrouped jobs of one group-limited type, one
 *   group under the same `groupConcurrency`; stored as `''` when the type's
 *   stored limits had a group limit at the insert, NULL otherwise (the type
 *   had none then: a row written before a server stored the limit, on
 *   PostgreSQL also one whose insert began before the limit committed). A
 *   server that stores a group limit moves the type's ready NULL rows to `''`
 *   (`adoptUngroupedSql`); the claim still serves the rest (NULL rows) after
 *   every group, as one more share, counted with `''` against the limit.
 *
 * Within the ungrouped group jobs are taken by (priority, runAt), through
 * `later_jobs_ready_ungrouped`, as X1 says; within any other group oldest
 * first. Without a limit stored, `''` changes nothing: the type's claim reads
 * `later_jobs_ready`, which holds grouped and ungrouped rows alike.
 */

/** The group key stored for the ungrouped jobs of a type with a group limit. */
export const UNGROUPED_KEY = "";

/**
 * The group a new row stores, as an SQL expression: its own (`group`), else
 * {@link UNGROUPED_KEY} when the row is regular (`topic` null, or no `topic`
 * given: inserts that never write one) and `jobType` has a stored group
 * limit in `namespace`, else NULL. PostgreSQL form: the limits are read once
 * per statement (an uncorrelated `IN`, a hashed subplan), not per row.
 */
export function storedGroupSql(p: { limits: string; namespace: string; jobType: string; group: string; topic?: string }): string {
  const regular = p.topic === undefined ? "" : `${p.topic} IS NULL AND `;
  return `coalesce(${p.group}, CASE WHEN ${regular}${p.jobType} IN (SELECT job_type FROM ${p.limits} WHERE namespace = ${p.namespace} AND group_concurrency IS NOT NULL) THEN '' END)`;
}

/**
 * An UPDATE that moves the ungrouped rows of `namespace`'s group-limited types that are ready (`readyWords`:
 * a predicate over claimable regular rows, written to prove the ready index's) to {@link UNGROUPED_KEY}: run where a
 * server stores its limits, so that rows enqueued before a group limit existed take their turn too.
 */
export function adoptUngroupedSql(p: { jobs: string; limits: string; namespace: string; readyWords: string }): string {
  return `UPDATE ${p.jobs} SET group_key = '' WHERE namespace = ${p.namespace} AND ${p.readyWords} AND group_key IS NULL
  AND job_type IN (SELECT job_type FROM ${p.limits} WHERE namespace = ${p.namespace} AND group_concurrency IS NOT NULL)`;
}

/** A stored group as users see it: the ungrouped group (`''`) and NULL are no group. */
export function groupOfStored(value: unknown): string | null {
  return value === null || value === undefined || value === UNGROUPED_KEY ? null : String(value);
}
