/**
 * X2, both dialects: a batch of unique inserts (`JobStore.insertUniqueMany`)
 * is written in rounds, so that several of its inserts go in one statement
 * while each insert still sees every earlier one of its key: round 1 holds
 * the first insert of each key, round 2 the second, and so on. The keys of
 * one round are distinct, so the order of its inserts does not matter.
 */
import type { JobInsertUniqueParams } from "../backend.js";

/** The key an insert holds (job type and unique key), as one string: inserts with equal ones go in separate rounds. */
export const uniqueKeyOf = (p: JobInsertUniqueParams): string => JSON.stringify([p.job.jobType, p.uniqueKey]);

/**
 * The next round of a batch: the first insert not yet `done` of each key (`keys[n]`, from {@link uniqueKeyOf}),
 * by index, in batch order. Empty once every insert is done.
 */
export function nextUniqueRound(keys: readonly string[], done: (n: number) => boolean): number[] {
  const seen = new Set<string>();
  const round: number[] = [];
  for (let n = 0; n < keys.length; n++) {
    const key = keys[n]!;
    if (done(n) || seen.has(key)) continue;
    seen.add(key);
    round.push(n);
  }
  return round;
}
