/**
 * The dashboard's writes (`backend.activity`): what the servers record so
 * that `backend.inspect` can show throughput, dispatch wait, backlog
 * history and live servers at any backlog with a few index reads (docs/semantics.md
 * D1, D5, D7). None of it is on a job's path: the only hot-path cost is the
 * `entered` column the stage-counter upserts already write (SQLite: each
 * statement's upsert; PostgreSQL: the statement's counter CTE), and an
 * in-process sum per claim; the rest is a few statements per second per
 * server, or per namespace.
 *
 * - throughput: `enteredSample` turns the counters' cumulative `entered`
 *   into a per-second bucket (every server once a second; the marks of the
 *   last sample keep a transition from being placed twice);
 * - dispatch wait: each server sums its claims' waits per second in
 *   process and adds them with `dispatchWaitAdd` once a second;
 * - backlog history: `queueLengthAdd` once a minute (one server per
 *   namespace);
 * - servers: `serverHeartbeat` every few seconds, `serverRemove` on a
 *   graceful stop;
 * - retention: `activitySweep` deletes old buckets and samples in short
 *   statements, and expired server rows.
 */
import type { DispatchWaitBucket } from "./inspect-store.js";

/** The dashboard writes of one backend, scoped to its namespace. */
export interface ActivityStore {
  /**
   * Adds the transitions into each stage since the last sample to the
   * bucket of the second before `now` (`floor(now / 1000) * 1000 - 1000`),
   * read from the cumulative `entered` of the stage counters, and moves the
   * marks (only when something moved, or the marks are half-way to stale:
   * an idle namespace's sample writes nothing). The first sample of a namespace, or one more than
   * `staleAfterMs` after the last, only sets the marks (the transitions
   * since cannot be placed in a second). Serialised per namespace (SQLite:
   * `BEGIN IMMEDIATE`; PostgreSQL: a transaction-scoped advisory lock), so
   * overlapping samplers count each transition once; a sample that finds
   * nothing to write takes no lock. Resolves to the transitions it placed.
   */
  enteredSample(params: EnteredSampleParams): Promise<number>;
  /** Adds one server's claims of second `at` to its buckets: counts and totals add, maxima take the larger. One upsert per kind with claims. */
  dispatchWaitAdd(params: DispatchWaitAddParams): Promise<void>;
  /** Stores the backlog sample of minute `at`; a second sample of the same minute changes nothing. */
  queueLengthAdd(params: QueueLengthAddParams): Promise<void>;
  /** Deletes activity buckets older than `activityBefore`, backlog samples older than `queueLengthBefore`, and server rows expired before `serversBefore`, in statements of at most `spanMs` of rows each. Resolves to the rows deleted. */
  activitySweep(params: ActivitySweepParams): Promise<number>;
  /** Inserts or refreshes this server's row (every server, with or without topics). */
  serverHeartbeat(params: ServerHeartbeatParams): Promise<void>;
  /** Removes this server's row (graceful stop). */
  serverRemove(params: ServerRemoveParams): Promise<void>;
}

export interface EnteredSampleParams {
  now: number;
  /** A last sample older than this places nothing (see {@link ActivityStore.enteredSample}). */
  staleAfterMs: number;
}

export interface DispatchWaitAddParams {
  /** Start of the second, ms since the epoch. */
  at: number;
  regular: DispatchWaitBucket;
  partitioned: DispatchWaitBucket;
}

export interface QueueLengthAddParams {
  /** Start of the minute, ms since the epoch. */
  at: number;
  ready: number;
  partitionBacklog: number;
}

export interface ActivitySweepParams {
  activityBefore: number;
  queueLengthBefore: number;
  serversBefore: number;
  /** Time span of rows one delete statement covers (from the oldest row). */
  spanMs: number;
}

export interface ServerHeartbeatParams {
  instanceId: string;
  host: string;
  pid: number;
  workers: number;
  busy: number;
  now: number;
  /** The row counts as live until this time. */
  expiresAt: number;
  /** The job types this server has handlers for (and workers to run them), published so that unhandled ones show. */
  jobTypes: readonly string[];
}

export interface ServerRemoveParams {
  instanceId: string;
}
