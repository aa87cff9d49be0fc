/**
 * The one options form every enqueue method takes as its optional last
 * argument: the untyped {@link JobPublisher} methods and the generated
 * handles (`enqueue`, `enqueueIn`, `enqueueContinue`, `enqueueToPartition`,
 * ...). A later option joins this list, so it needs no new method names.
 */
import type { JobId } from "../core/job-id.js";
import { RetryPolicy } from "../core/retry/retry-policy.js";
import { describeValue, InvalidArgumentError } from "../errors.js";

/**
 * When and after what a job may run. Every field is optional; `{}` (the
 * default) means "now, after nothing".
 *
 * A continuation (`parentId`) with a delay runs once both hold: its parent
 * has succeeded and its time has come. The time is measured from the
 * enqueue, as for any job; when the parent finishes later than that, the
 * continuation runs at once (it never runs before its parent).
 */
export interface EnqueueOptions {
  /** Not before this many ms from now: a finite number >= 0. Not with `runAt`. */
  delayMs?: number;
  /** Not before this time (a past time means now). Not with `delayMs`. */
  runAt?: Date;
  /**
   * Run only after this job succeeds; fail with it if it fails for good. An
   * unknown id is `PARENT_NOT_FOUND` and writes nothing.
   *
   * An array is a fan-in (X5 in docs/semantics.md): the job runs once every
   * parent succeeded, and fails with the reason of the first parent that
   * fails for good. 1 to {@link MAX_PARENTS} ids; a repeated id counts once
   * (folded), so `[a]` and `[a, a]` are the single-parent `a`.
   */
  parentId?: JobId | readonly JobId[];
  /**
   * This job's retry policy, stored with it: it wins over the policy of the
   * server that runs the job (its job type's `retry` option and its
   * `defaultRetryPolicy`). Default: none stored, so the job follows the
   * running server's policy (a publisher's `defaultRetryPolicy`, when one
   * was given explicitly, is stored instead).
   */
  retryPolicy?: RetryPolicy;
  /**
   * This job's attempt timeout in ms (as pg-boss's `expireInSeconds`),
   * stored with it: an attempt running longer has its `ctx.signal` aborted
   * with a `JobTimeoutError` (`JOB_TIMEOUT`) and counts as a failure, retried
   * per the job's policy. Wins over its job type's `timeoutMs` and the
   * server's `jobTimeoutMs`. An integer from 1 to 2^31 − 1. Default: none
   * stored, so the type's or the server's applies.
   */
  timeoutMs?: number;
  /**
   * X1: the job's priority, an integer from −32768 to 32767; LOWER runs
   * first (as graphile-worker and River). Among the ready regular jobs of a
   * namespace a claim takes the lowest number first, then the oldest
   * (`runAt`); a priority never makes a job run before its time. Default 0.
   * Refused (`INVALID_ARGUMENT` naming `priority`) on a partitioned enqueue:
   * a partition runs its jobs in strict sequence order, so a priority there
   * could only be ignored.
   */
  priority?: number;
  /**
   * X2: at most one unfinished job of this type per key (1 to 200
   * characters): while one is enqueued, delayed, running or requeued,
   * another enqueue with the key does what {@link uniqueMode} says; once it
   * has finished (succeeded or failed for good) the key is free. Race-safe
   * across processes: a unique index decides, not a read before the write.
   * One job per call: `enqueueMany` of more than one payload, a partitioned
   * enqueue, a continuation (`parentId`) and `enqueueIn` refuse it with
   * `INVALID_ARGUMENT`. Default: none.
   */
  uniqueKey?: string;
  /**
   * X2: what an enqueue with a {@link uniqueKey} already held does
   * (needs `uniqueKey`). Default `"keep"`.
   * - `"keep"`: writes nothing; resolves to the unfinished job's id.
   * - `"replace"` (debounce): a job of the key not started yet takes the new
   *   payload and run time (a `delayMs` pushes it back); when the key's job
   *   is already running and none waits, a new job is kept to run after it,
   *   so the latest payload is never lost.
   * - `"afterActive"` (BullMQ's keepLastIfActive): as `"keep"` while the
   *   key's job has not started; while it runs, ONE more job is kept to run
   *   after it: inserted, or, when it is there already, given the latest
   *   payload (its run time kept). A burst of triggers during a run gives
   *   exactly one more run, with the last payload.
   */
  uniqueMode?: UniqueMode;
  /**
   * X9: the job's group (a tenant, a customer, ...): a string of 1 to 200
   * characters. When its job type has a `groupConcurrency` limit, at most
   * that many jobs of one group run at once across every server of the
   * namespace, and claims take the ready groups round-robin, so one group's
   * backlog never delays another group's first job. Without such a limit
   * the group is stored and does nothing. The generated module fills it
   * from the payload field a job's `@group` tag names when not given here.
   * Refused on a partitioned enqueue (partitions run in sequence, never
   * limited). Default: none.
   */
  group?: string;
}

/** {@link EnqueueOptions.uniqueMode}. */
export type UniqueMode = "keep" | "replace" | "afterActive";

/** Every {@link UniqueMode}. */
export const UNIQUE_MODES: readonly UniqueMode[] = ["keep", "replace", "afterActive"];

/** The longest {@link EnqueueOptions.uniqueKey}, in UTF-16 code units. */
export const MAX_UNIQUE_KEY_LENGTH = 200;

/** The longest {@link EnqueueOptions.group}, in UTF-16 code units. */
export const MAX_GROUP_LENGTH = 200;

/** Every key {@link EnqueueOptions} has. Any other key is refused, so a misspelt `delayMS` cannot silently run a job at once. */
export const ENQUEUE_OPTION_KEYS: readonly (keyof EnqueueOptions)[] = [
  "delayMs",
  "runAt",
  "parentId",
  "retryPolicy",
  "timeoutMs",
  "priority",
  "uniqueKey",
  "uniqueMode",
  "group",
];

/** The most parents a fan-in continuation may have (X5): a bound on the rows one insert locks. */
export const MAX_PARENTS = 1000;

/**
 * The parents of a checked `parentId` option: one id (a plain continuation,
 * J5), or the distinct ids of an array, sorted (a fan-in, X5; sorted: the
 * order every writer locks job rows in). An array of one distinct id is that
 * single parent, stored as a plain continuation. Throws
 * `InvalidArgumentError` naming `parentId` for an empty string or array, an
 * array of more than {@link MAX_PARENTS} ids, or an id that is not a
 * non-empty string.
 */
export function parentsOf(parentId: unknown, method = "enqueue"): { parentId: JobId } | { parentIds: JobId[] } {
  if (typeof parentId === "string" && parentId !== "") return { parentId };
  if (!Array.isArray(parentId)) {
    throw new InvalidArgumentError(`${method}: parentId must be a non-empty job id or an array of them, got ${describeValue(parentId)}`);
  }
  if (parentId.length === 0) throw new InvalidArgumentError(`${method}: parentId must not be an empty array (give at least one parent job id)`);
  if (parentId.length > MAX_PARENTS) {
    throw new InvalidArgumentError(`${method}: parentId may hold at most ${MAX_PARENTS} job ids, got ${parentId.length}`);
  }
  const bad = parentId.findIndex((id) => typeof id !== "string" || id === "");
  if (bad >= 0) throw new InvalidArgumentError(`${method}: parentId[${bad}] must be a non-empty job id, got ${describeValue(parentId[bad])}`);
  const ids = [...new Set(parentId as string[])].sort();
  return ids.length === 1 ? { parentId: ids[0]! } : { parentIds: ids };
}

/** The largest timeout: timers fire at once past 2^31 − 1 ms (about 24.8 days). */
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * Checks a `timeoutMs` (an enqueue option or a handler option): an integer
 * from 1 to 2^31 − 1 ms. Returns the problem to report after the field's
 * name, or null when it is valid.
 */
export function timeoutProblem(value: unknown): string | null {
  if (typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_TIMEOUT_MS) return null;
  return `must be an integer number of ms from 1 to ${MAX_TIMEOUT_MS}, got ${describeValue(value)}`;
}

/**
 * Checks an options argument of `method` and returns it (`{}` for
 * undefined). Throws `InvalidArgumentError` for a value that is not an
 * object, a key that is not an option (named), both `delayMs` and `runAt`,
 * or a field of the wrong type.
 */
export function checkEnqueueOptions(options: unknown, method = "enqueue"): EnqueueOptions {
  if (options === undefined) return {};
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new InvalidArgumentError(`${method}: options must be an object such as { delayMs }, got ${describeValue(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!(ENQUEUE_OPTION_KEYS as readonly string[]).includes(key)) {
      throw new InvalidArgumentError(`${method}: unknown option "${key}"; the options are ${ENQUEUE_OPTION_KEYS.join(", ")}`);
    }
  }
  const { delayMs, runAt, parentId, retryPolicy, timeoutMs } = options as EnqueueOptions;
  if (delayMs !== undefined && runAt !== undefined) throw new InvalidArgumentError(`${method}: give delayMs or runAt, not both`);
  if (delayMs !== undefined && (typeof delayMs !== "number" || !Number.isFinite(delayMs) || delayMs < 0)) {
    throw new InvalidArgumentError(`${method}: delayMs must be a finite number of ms >= 0, got ${describeValue(delayMs)}`);
  }
  if (runAt !== undefined && (!(runAt instanceof Date) || Number.isNaN(runAt.getTime()))) {
    throw new InvalidArgumentError(`${method}: runAt must be a valid Date, got ${describeValue(runAt)}`);
  }
  if (parentId !== undefined) parentsOf(parentId, method);
  if (retryPolicy !== undefined && !(retryPolicy instanceof RetryPolicy)) {
    throw new InvalidArgumentError(
      `${method}: retryPolicy must be a RetryPolicy (RetryPolicy.fixed / exponential / noRetries), got ${describeValue(retryPolicy)}`,
    );
  }
  if (timeoutMs !== undefined) {
    const problem = timeoutProblem(timeoutMs);
    if (problem !== null) throw new InvalidArgumentError(`${method}: timeoutMs ${problem}`);
  }
  const { priority, uniqueKey, uniqueMode } = options as EnqueueOptions;
  if (priority !== undefined && (typeof priority !== "number" || !Number.isInteger(priority) || priority < -32768 || priority > 32767)) {
    throw new InvalidArgumentError(`${method}: priority must be an integer from -32768 to 32767 (lower runs first), got ${describeValue(priority)}`);
  }
  if (uniqueKey !== undefined && (typeof uniqueKey !== "string" || uniqueKey.length === 0 || uniqueKey.length > MAX_UNIQUE_KEY_LENGTH)) {
    throw new InvalidArgumentError(`${method}: uniqueKey must be a string of 1 to ${MAX_UNIQUE_KEY_LENGTH} characters, got ${describeValue(uniqueKey)}`);
  }
  if (uniqueMode !== undefined) {
    if (!(UNIQUE_MODES as readonly unknown[]).includes(uniqueMode)) {
      throw new InvalidArgumentError(`${method}: uniqueMode must be one of ${UNIQUE_MODES.join(", ")}, got ${describeValue(uniqueMode)}`);
    }
    if (uniqueKey === undefined) throw new InvalidArgumentError(`${method}: uniqueMode needs a uniqueKey`);
  }
  const { group } = options as EnqueueOptions;
  if (group !== undefined && (typeof group !== "string" || group.length === 0 || group.length > MAX_GROUP_LENGTH)) {
    throw new InvalidArgumentError(`${method}: group must be a string of 1 to ${MAX_GROUP_LENGTH} characters, got ${describeValue(group)}`);
  }
  return options as EnqueueOptions;
}

/**
 * The options of a short form (`enqueueDelayed(payload, ms, options)`):
 * `options`, checked, with the short form's own argument added. The types
 * leave that field out of `options`; given anyway (from JavaScript), it is
 * refused rather than silently overridden.
 */
export function withShortForm(method: string, options: unknown, fixed: EnqueueOptions): EnqueueOptions {
  const checked = checkEnqueueOptions(options, method);
  const given = (key: keyof EnqueueOptions) => checked[key] !== undefined;
  const clash = (Object.keys(fixed) as (keyof EnqueueOptions)[]).find((k) => given(k) || (k !== "parentId" && (given("delayMs") || given("runAt"))));
  if (clash !== undefined)
    throw new InvalidArgumentError(`${method}: ${clash === "parentId" ? "the parent" : "the time"} is an argument here; leave it out of options`);
  return checkEnqueueOptions({ ...checked, ...fixed }, method);
}

/** The job's earliest start in epoch ms for checked options: `now`, `now + delayMs` (rounded up) or `runAt` (not before `now`). */
export function runAtOf(options: EnqueueOptions, now: number): number {
  if (options.delayMs !== undefined) return now + Math.ceil(options.delayMs);
  if (options.runAt !== undefined) return Math.max(now, options.runAt.getTime());
  return now;
}
