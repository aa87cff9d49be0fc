import { randomFillSync } from "node:crypto";
import { monotonicFactory } from "ulid";

/**
 * A job id: a lowercase ULID (26 characters, Crockford base32). Lowercasing
 * keeps the lexicographic order, so ids sort by creation time; ids minted in
 * the same millisecond by one process still increase (monotonic factory).
 */
export type JobId = string;

/**
 * ulid's own PRNG asks the OS for one byte per character (16 calls per
 * id); this one serves the same cryptographic bytes from a pool refilled
 * 4 KiB at a time. Same distribution as ulid's (a byte / 256).
 */
const pool = new Uint8Array(4096);
let poolAt = pool.length;
function pooledRandom(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++]! / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

/** Mints a new job id from the given time (ms since the epoch). */
export function newJobId(nowMs: number): JobId {
  return nextUlid(nowMs).toLowerCase();
}

/** True when `value` has the shape of a job id. */
export function isJobId(value: unknown): value is JobId {
  return typeof value === "string" && /^[0-9a-hjkmnp-tv-z]{26}$/.test(value);
}

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

/** When the job was created (ms since the epoch): the time part of its id (the first 10 characters of the ULID). */
export function jobIdTime(id: JobId): number {
  let ms = 0;
  for (let i = 0; i < 10; i++) ms = ms * 32 + CROCKFORD.indexOf(id.charAt(i));
  return ms;
}
