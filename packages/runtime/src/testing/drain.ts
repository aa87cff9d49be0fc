import type { JobId } from "../core/job-id.js";
import type { JobStage } from "../core/job-stage.js";
import { DrainLimitError } from "../errors.js";
import type { BackgroundJobServer } from "../server/background-job-server.js";
import type { ManualClock } from "./manual-clock.js";

/** Options of `TestJobs.drain`. */
export interface DrainOptions {
  /**
   * Also advance the clock to delayed jobs (`enqueueDelayed`, `delayMs`,
   * `runAt`), one after another, as for retries, until none is left.
   * Default false: a delayed job runs only once the test has moved the
   * clock past it with `advance(ms)`.
   */
  advanceDelayed?: boolean;
  /** Most attempts one drain runs; one more due rejects with `DrainLimitError` (`DRAIN_LIMIT`). Default 1000. */
  maxAttempts?: number;
}

/** One attempt a drain ran. */
export interface DrainAttempt {
  jobId: JobId;
  /** The job's handle name, as on `jobs` and `enqueued()`. */
  name: string;
  /** Its stored job type (the schema's member name). */
  jobType: string;
  /** 1 for the first run. */
  attempt: number;
  /** `success`; `retry` (requeued: a later attempt will run); `failed` (no retry left, a `PermanentJobError`, or a payload that does not decode). */
  outcome: "success" | "retry" | "failed";
  /** The handler's error of a `retry` or `failed` attempt; null on success. */
  error: string | null;
  /** When the retry runs; null unless `retry`. */
  retryAt: Date | null;
  /** The clock's time when the attempt started. */
  at: Date;
}

/** What a drain ran. */
export interface DrainResult {
  /** Attempts run. */
  ran: number;
  succeeded: number;
  /** Attempts that failed and were requeued (and, within the drain, run again). */
  retried: number;
  /** Attempts that failed the job for good. */
  failed: number;
  /** Every attempt, in the order they ran. */
  attempts: DrainAttempt[];
}

/**
 * The loop behind `TestJobs.drain` (docs/semantics.md X11):
 *
 * ```text
 *   runDueOnce() ──ran one──► record it, again
 *        │ none due
 *        ▼
 *   pollRecurring() ──enqueued some──► again
 *        │ none
 *        ▼
 *   earliest future runAt of a retry (stage requeued), and of a delayed job with advanceDelayed,
 *   of a handled type ──found──► clock.advance to it, again
 *        │ none
 *        ▼
 *   done
 * ```
 *
 * Each attempt runs to its end before the next is claimed, so the order is
 * the claim order: oldest `runAt` first, regular jobs before partition heads.
 */
export async function drainUntilIdle<C, Trx>(
  core: BackgroundJobServer<C, Trx>,
  clock: ManualClock,
  handled: ReadonlySet<string>,
  names: ReadonlyMap<string, string>,
  options: DrainOptions,
): Promise<DrainResult> {
  const maxAttempts = options.maxAttempts ?? 1_000;
  const attempts: DrainAttempt[] = [];
  for (;;) {
    const at = new Date(clock.now());
    const step = await core.runDueOnce();
    if (step !== null) {
      if (attempts.length >= maxAttempts) throw new DrainLimitError(attempts.length);
      const { job, outcome } = step;
      // A null outcome (its lease expired before the start: the clock moved inside a handler) is left to lease recovery.
      if (outcome === null) continue;
      attempts.push({
        jobId: job.id,
        name: names.get(job.jobType) ?? job.jobType,
        jobType: job.jobType,
        attempt: job.attempt,
        outcome: outcome.kind === "fail" ? "failed" : outcome.kind,
        error: outcome.kind === "success" ? null : outcome.error,
        retryAt: outcome.kind === "retry" ? new Date(outcome.runAt) : null,
        at,
      });
      continue;
    }
    if ((await core.pollRecurring()) > 0) continue;
    const stages: JobStage[] = options.advanceDelayed === true ? ["requeued", "delayed"] : ["requeued"];
    const next = await earliestAfter(core, stages, handled, clock.now());
    if (next === null) break;
    clock.advance(next - clock.now());
  }
  const count = (o: DrainAttempt["outcome"]) => attempts.filter((a) => a.outcome === o).length;
  return { ran: attempts.length, succeeded: count("success"), retried: count("retry"), failed: count("failed"), attempts };
}

/** The earliest `runAt` after `now` of the jobs of `handled` types in `stages`; null when none. Reads every such job: a test's database is small. */
async function earliestAfter<C, Trx>(core: BackgroundJobServer<C, Trx>, stages: JobStage[], handled: ReadonlySet<string>, now: number): Promise<number | null> {
  let earliest: number | null = null;
  for (const stage of stages) {
    for (let afterId: JobId | undefined; ; ) {
      const page = await core.backend.inspect.jobList({ stage, order: "asc", limit: PAGE, afterId });
      for (const job of page) if (handled.has(job.jobType) && job.runAt > now && (earliest === null || job.runAt < earliest)) earliest = job.runAt;
      if (page.length < PAGE) break;
      afterId = page[page.length - 1]!.id;
    }
  }
  return earliest;
}

const PAGE = 500;
