/**
 * X9: the types of the job store's limit methods (`jobs.limitsSet`,
 * `jobs.limitsUngroupedAdopt`; the limited claim is `jobs.claimReady` with
 * `limitedTypes`), apart from job-store.ts so that file stays the claim,
 * finish and insert contract.
 */

/** X9: one job type's limits (null: no such limit). */
export interface JobTypeLimit {
  jobType: string;
  /** At most this many running at once across the namespace's servers. */
  concurrency: number | null;
  /** At most `max` starts (claims) in any window of `perMs`. */
  rateLimit: { max: number; perMs: number } | null;
  /** At most this many running at once per group (`group_key`; the type's jobs with none are one group). */
  groupConcurrency: number | null;
}

export interface LimitsSetParams {
  /** Every job type the server handles. */
  jobTypes: readonly string[];
  /** The types of `jobTypes` that have a limit. */
  limits: readonly JobTypeLimit[];
  now: number;
}

export interface LimitsUngroupedAdoptResult {
  /** How many jobs joined their type's ungrouped group. */
  moved: number;
}

export interface LimitsSetResult {
  /** The limits stored before, of the types of `jobTypes` that had a row. */
  previous: JobTypeLimit[];
}
