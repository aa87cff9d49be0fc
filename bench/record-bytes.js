// Record values and job payloads of a given size for bench/log.js and its
// children. The bytes are random (windows of one random pool), so neither
// PostgreSQL's TOAST compression (values over about 2 KB) nor anything else
// gets to shrink them: a 2 KiB record stores 2 KiB.
import { randomBytes } from "node:crypto";

const POOL_BYTES = 1 << 20;
const pool = randomBytes(POOL_BYTES + 64 * 1024);
const poolText = pool.toString("base64");

/** Record `i`'s value: `size` bytes, a window of the random pool (no copy), different for each i. */
export function recordValue(size, i) {
  const start = (i * 7919) % POOL_BYTES;
  return pool.subarray(start, start + size);
}

/** Job `i`'s payload `{ i, pad }`, whose JSON text is `size` characters (ASCII: bytes) for a size above its bare `{"i":…,"pad":""}`. */
export function jobPayload(size, i) {
  const bare = JSON.stringify({ i, pad: "" }).length;
  const start = (i * 7919) % POOL_BYTES;
  return { i, pad: poolText.slice(start, start + Math.max(0, size - bare)) };
}
