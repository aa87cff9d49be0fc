/**
 * The condition a `failed` row must also meet to be retried from outside
 * (docs/semantics.md X7), as SQL over an unaliased `later_jobs` row: a continuation
 * (`parent_id` set) that never ran (`attempt = 0`) failed because its
 * parent failed, and retrying it would run it without its parent's
 * success, which rule J5 forbids. It is retryable once its parent is `success`
 * (it failed on its own, or was failed as a partition head) or when it ran
 * at least once (it only runs after its parent succeeded). Its refusal
 * says to enqueue the continuation again after retrying the parent.
 * A fan-in continuation (X5, `parents_left` set) that never ran is
 * retryable only once it had been released (`parents_left = 0`, then failed
 * as a partition head): else a parent of it failed.
 * `jobsTable`: the jobs table's name as the dialect writes it (PostgreSQL: schema-qualified).
 */
export function retryableRow(jobsTable = "later_jobs"): string {
  return `(later_jobs.parent_id IS NULL OR later_jobs.attempt > 0 OR EXISTS (
    SELECT 1 FROM ${jobsTable} parent WHERE parent.namespace = later_jobs.namespace AND parent.id = later_jobs.parent_id AND parent.stage = 'success'))
    AND (later_jobs.parents_left IS NULL OR later_jobs.parents_left = 0 OR later_jobs.attempt > 0)`;
}
