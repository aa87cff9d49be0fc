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
 *   stored limits had a group limit at the insert (PostgreSQL: read by the
 *   insert statement, {@link storedGroupSql}; SQLite: once per insert
 *   transaction, {@link withUngroupedKey}), NULL otherwise (the type had
 *   none then: a row written before a server stored the limit, on
 *   PostgreSQL also one whose insert began before the limit committed). A
 *   server that stores a group limit moves the type's ready NULL rows to `''`
 *   (`adoptUngroupedSql`), and the stuck-job rescue moves any left each
 *   interval (`limitsUngroupedAdopt`); a group claim reads `''` only. NULL
 *   and `''` running rows count together against the limit.
 *
 * Within the ungrouped group jobs are taken by (priority, runAt), through
 * `later_jobs_ready_ungrouped`, as X1 says; within any other group oldest
 * first. Without a limit stored, `''` changes nothing: the type's claim reads
 * `later_jobs_ready`, which holds grouped and ungrouped rows alike.
 */

/** The group key stored for the ungrouped jobs of a type with a group limit. */
export const UNGROUPED_KEY = "";

/** SQL: the job types of `namespace` (an SQL expression) with a stored group limit, from the limits table `limits`. */
export function groupLimitedTypesSql(limits: string, namespace: string): string {
  return `SELECT job_type FROM ${limits} WHERE namespace = ${namespace} AND group_concurrency IS NOT NULL`;
}

/**
 * The group a new row stores, as an SQL expression (PostgreSQL): its own
 * (`group`), else {@link UNGROUPED_KEY} when the row is regular (`topic`
 * null, or no `topic` given: inserts that never write one) and `jobType` has
 * a stored group limit in `namespace`, else NULL. The limits are read once
 * per statement: whether the namespace has any group limit (an InitPlan,
 * which ends the expression for every row when it has none, the common
 * case), then the types (an uncorrelated `IN`, a hashed subplan).
 */
export function storedGroupSql(p: { limits: string; namespace: string; jobType: string; group: string; topic?: string }): string {
  const limited = groupLimitedTypesSql(p.limits, p.namespace);
  const regular = p.topic === undefined ? "" : ` AND ${p.topic} IS NULL`;
  return `coalesce(${p.group}, CASE WHEN EXISTS (${limited})${regular} AND ${p.jobType} IN (${limited}) THEN '' END)`;
}

/**
 * An UPDATE that moves the rows `rows` (a predicate over regular rows) stored with no group of `namespace`'s
 * group-limited types to {@link UNGROUPED_KEY}, placeholders in the order `namespace`, `namespace`, `rows`',
 * `namespace`. Run, over the ready rows (written to prove the ready index's predicate), where a server stores its
 * limits and by the stuck-job rescue (`limitsUngroupedAdopt`), so that rows written with no group (before a group
 * limit existed) take their turn too; over its own rows by an insert in a caller's SQLite transaction. The
 * namespace's group limits are read first (PostgreSQL: an InitPlan, so nothing else is read when it has none).
 */
export function adoptUngroupedSql(p: { jobs: string; limits: string; namespace: string; rows: string }): string {
  const limited = groupLimitedTypesSql(p.limits, p.namespace);
  return `UPDATE ${p.jobs} SET group_key = '' WHERE EXISTS (${limited}) AND namespace = ${p.namespace} AND ${p.rows}
  AND group_key IS NULL AND job_type IN (${limited})`;
}

/**
 * `jobs`, with {@link UNGROUPED_KEY} as the group of each regular job enqueued with none whose type is in
 * `groupLimited` (the types with a stored group limit, as the insert's transaction reads them); the same array when
 * there is none (SQLite: its inserts read the limits once per transaction, cheaper than a per-row probe in SQL).
 */
export function withUngroupedKey<J extends { jobType: string; group?: string | null; topic?: string }>(
  jobs: readonly J[],
  groupLimited: ReadonlySet<string>,
): readonly J[] {
  if (groupLimited.size === 0) return jobs;
  return jobs.map((j) =>
    (j.group === undefined || j.group === null) && j.topic === undefined && groupLimited.has(j.jobType) ? { ...j, group: UNGROUPED_KEY } : j,
  );
}

/** A stored group as users see it: the ungrouped group (`''`) and NULL are no group. */
export function groupOfStored(value: unknown): string | null {
  return value === null || value === undefined || value === UNGROUPED_KEY ? null : String(value);
}
