/**
 * The arithmetic of a limited claim (X9), the same on both dialects: how
 * many jobs of one type a claim may take now, from the type's stored limits
 * (`later_limits`), its running count and its recent starts, and when the
 * next slot opens. The dialects read the row under its lock, count the
 * running jobs, claim, and write the starts back with {@link startsAfter}.
 */
import type { JobTypeLimit } from "../job-limits.js";
import type { JobClaimReadyResult } from "../job-store.js";
import type { Row } from "./job-rows.js";

/** One type's stored limits and recent starts, as a limited claim reads them. */
export interface StoredLimitRow {
  concurrency: number | null;
  rateMax: number | null;
  ratePerMs: number | null;
  /** Claim times (ms) of the type's last `rateMax` starts, oldest first. */
  starts: number[];
  /** At most this many running per group; null: no group limit. */
  groupConcurrency: number | null;
  /** The last group a claim of the type served: the next claim's walk of the ready groups starts after it (null: from the first). */
  groupCursor: string | null;
}

/** Parses a `later_limits` row (`concurrency, rate_max, rate_per_ms, rate_starts, group_concurrency, group_cursor`). */
export function storedLimitRow(r: Record<string, unknown>): StoredLimitRow {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  const starts = JSON.parse(String(r.rate_starts ?? "[]")) as number[];
  return {
    concurrency: num(r.concurrency),
    rateMax: num(r.rate_max),
    ratePerMs: num(r.rate_per_ms),
    starts,
    groupConcurrency: num(r.group_concurrency),
    groupCursor: r.group_cursor === null || r.group_cursor === undefined ? null : String(r.group_cursor),
  };
}

/** What one type's limits allow now. */
export interface LimitSlots {
  /** Jobs the claim may take now (0: none). */
  free: number;
  /** When the rate window lets the next start in, when the window is full now; else null (a finish frees a concurrency slot). */
  nextSlotAt: number | null;
}

/**
 * The slots of one type at `now`, at most `want`: `concurrency − running`,
 * and `rateMax −` the starts in the window `(now − perMs, now]`. When the
 * window is full, the next slot opens `perMs` after the start that leaves
 * it first for a slot to be free.
 */
export function limitSlots(row: StoredLimitRow, running: number, now: number, want: number): LimitSlots {
  let free = want;
  let nextSlotAt: number | null = null;
  if (row.concurrency !== null) free = Math.min(free, Math.max(0, row.concurrency - running));
  if (row.rateMax !== null && row.ratePerMs !== null) {
    const inWindow = row.starts.filter((t) => t > now - row.ratePerMs!);
    nextSlotAt = windowOpensAt(row, inWindow);
    free = Math.min(free, Math.max(0, row.rateMax - inWindow.length));
  }
  return { free, nextSlotAt };
}

/**
 * When a full rate window lets the next start in: `perMs` after the start
 * whose leaving frees a slot (more than `rateMax` are held after the limit
 * was lowered); null when `inWindow` (the starts in the window, oldest
 * first) leaves a slot free now, or the type has no rate limit. A claim
 * that filled its slots asks again with the starts it stored, so the
 * fetcher sleeps until then rather than a poll interval.
 */
export function windowOpensAt(row: StoredLimitRow, inWindow: readonly number[]): number | null {
  if (row.rateMax === null || row.ratePerMs === null || inWindow.length < row.rateMax) return null;
  return inWindow[inWindow.length - row.rateMax]! + row.ratePerMs;
}

/**
 * The time a limited claim counts from, once it holds its types' limits
 * rows: its own `now`, or the latest start a row records when that is later.
 * A claim takes its `now` before it waits for those rows; a claim of another
 * server that held them meanwhile may have stored starts after it. Counted
 * from the earlier time, this claim's starts would be stored after those
 * though earlier, and the list of recent starts would no longer be in time
 * order, which `windowOpensAt` and the trimming of {@link startsAfter} assume.
 */
export function claimNow(rows: Iterable<StoredLimitRow>, now: number): number {
  let latest = now;
  for (const row of rows) for (const t of row.starts) if (t > latest) latest = t;
  return latest;
}

/** The starts to store after claiming `n` at `now`: the window's, plus `n` times `now`, the last `rateMax` kept. */
export function startsAfter(row: StoredLimitRow, now: number, n: number): number[] {
  if (row.rateMax === null || row.ratePerMs === null) return [];
  const kept = row.starts.filter((t) => t > now - row.ratePerMs!);
  for (let i = 0; i < n; i++) kept.push(now);
  return kept.slice(-row.rateMax);
}

/** A limit as a `later_limits` record. */
export function limitRecord(l: JobTypeLimit): Record<string, unknown> {
  return {
    job_type: l.jobType,
    concurrency: l.concurrency,
    rate_max: l.rateLimit?.max ?? null,
    rate_per_ms: l.rateLimit?.perMs ?? null,
    group_concurrency: l.groupConcurrency,
  };
}

/** A `later_limits` row as a {@link JobTypeLimit}. */
export function storedLimit(r: Row): JobTypeLimit {
  const row = storedLimitRow(r);
  return {
    jobType: String(r.job_type),
    concurrency: row.concurrency,
    rateLimit: row.rateMax !== null && row.ratePerMs !== null ? { max: row.rateMax, perMs: row.ratePerMs } : null,
    groupConcurrency: row.groupConcurrency,
  };
}

/** X9: two claims of one call (the limited step's, then the plain one's) as one result; `nextRunAt` the earlier of both when short of `limit`. */
export function joinClaims(first: JobClaimReadyResult, rest: JobClaimReadyResult, limit: number): JobClaimReadyResult {
  const jobs = first.jobs.concat(rest.jobs);
  if (jobs.length >= limit || rest.nextRunAt === undefined) return { jobs }; // full (the rest may be a full batch of fewer)
  const times = [first.nextRunAt, rest.nextRunAt].filter((t): t is number => t !== null && t !== undefined);
  return { jobs, nextRunAt: times.length === 0 ? null : Math.min(...times) };
}
