import { monotonicFactory } from "ulid";

/**
 * A job id: a lowercase ULID (26 characters, Crockford base32). Lowercasing
 * keeps the lexicographic order, so ids sort by creation time; ids minted in
 * the same millisecond by one process still increase (monotonic factory).
 */
export type JobId = string;

const nextUlid = monotonicFactory();

/** Mints a new job id from the given time (ms since the epoch). */
export function newJobId(nowMs: number): JobId {
  return nextUlid(nowMs).toLowerCase();
}

/** True when `value` has the shape of a job id. */
export function isJobId(value: unknown): value is JobId {
  return typeof value === "string" && /^[0-9a-hjkmnp-tv-z]{26}$/.test(value);
}
