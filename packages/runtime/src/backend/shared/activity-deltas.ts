/**
 * The arithmetic of an activity sample, the same on both dialects: the
 * cumulative `entered` per stage now and at the last sample give the
 * transitions of the second just ended (see `ActivityStore.enteredSample`).
 */
import type { Row } from "./job-rows.js";

/**
 * The mark row every sample writes beside the stages' (stage `*`, entered
 * 0), so a namespace sampled before any job exists has a last sample too.
 */
export const SAMPLED_MARK = "*";

/** What one sample writes. */
export interface EnteredDeltas {
  /** Transitions per stage since the last sample (positive only); empty when there is no fresh last sample to count from. */
  deltas: { stage: string; n: number }[];
  /** Start of the second the transitions go to. */
  at: number;
  /**
   * Whether the marks are written: after any transition, when there was no
   * fresh last sample, or when the last one is half-way to stale. An idle
   * namespace's sample then writes nothing (on SQLite every commit wakes
   * every server on the file).
   */
  refreshMarks: boolean;
}

/**
 * `current`: rows (stage, entered) summed per stage; `marks`: rows (stage,
 * entered, sampled_at) of the last sample. Without a fresh last sample
 * (none, or older than `staleAfterMs`) nothing is placed: only the marks move.
 */
export function enteredDeltas(current: Row[], marks: Row[], now: number, staleAfterMs: number): EnteredDeltas {
  const last = new Map(marks.map((r) => [String(r.stage), Number(r.entered)]));
  const sampledAt = marks.reduce((m, r) => Math.max(m, Number(r.sampled_at)), Number.NEGATIVE_INFINITY);
  const at = Math.floor(now / 1000) * 1000 - 1000;
  if (marks.length === 0 || sampledAt < now - staleAfterMs) return { deltas: [], at, refreshMarks: true };
  const deltas: { stage: string; n: number }[] = [];
  for (const r of current) {
    const n = Number(r.entered) - (last.get(String(r.stage)) ?? 0);
    if (n > 0) deltas.push({ stage: String(r.stage), n });
  }
  return { deltas, at, refreshMarks: deltas.length > 0 || sampledAt < now - staleAfterMs / 2 };
}
