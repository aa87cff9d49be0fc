/**
 * X9: {@link LimitListResult} from its three reads, the same on both
 * dialects (`inspect.limitList`): the namespace's `later_limits` rows, its
 * running regular jobs by type, and the job types of the ready window
 * ({@link READY_WINDOW}). The free slots are {@link limitSlots}'s, the
 * arithmetic a limited claim uses, so the page and the gauges say what the
 * next claim would do.
 */
import type { LimitEntry, LimitListResult } from "../inspect-store.js";
import type { Row } from "./job-rows.js";
import { limitSlots, storedLimitRow } from "./limit-slots.js";

/** The limits rows (`job_type, concurrency, rate_max, rate_per_ms, rate_starts, group_concurrency`), running counts (`job_type, n`) and ready window's types, as one result at `now`. */
export function limitListFromReads(
  limitRows: readonly Row[],
  runningRows: readonly Row[],
  readyTypes: readonly string[],
  window: number,
  now: number,
): LimitListResult {
  const running = new Map(runningRows.map((r) => [String(r.job_type), Number(r.n)]));
  const ready = new Map<string, number>();
  for (const type of readyTypes) ready.set(type, (ready.get(type) ?? 0) + 1);
  const limits = limitRows.map((r): LimitEntry => {
    const jobType = String(r.job_type);
    const row = storedLimitRow(r);
    const n = running.get(jobType) ?? 0;
    const readyN = ready.get(jobType) ?? 0;
    const rated = row.rateMax !== null && row.ratePerMs !== null;
    return {
      jobType,
      concurrency: row.concurrency,
      groupConcurrency: row.groupConcurrency,
      rateLimit: rated ? { max: row.rateMax!, perMs: row.ratePerMs! } : null,
      running: n,
      startsInWindow: rated ? row.starts.filter((t) => t > now - row.ratePerMs!).length : 0,
      ready: readyN,
      waiting: readyN - limitSlots(row, n, now, readyN).free,
    };
  });
  return { limits, complete: readyTypes.length < window };
}
