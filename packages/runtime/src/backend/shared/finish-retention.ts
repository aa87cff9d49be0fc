import type { JobFinish, JobFinishManyParams, JobFinishManyResult } from "../job-store.js";

/** A batch of finishes split by retention class (J11), see {@link splitByRetention}. */
export interface RetentionClasses {
  /** Successes of job types with `successMs: 0`, in id order: deleted by the statement that records them. */
  discard: JobFinish[];
  /** Every other finish, grouped by the retention its row gets, without their own `retentionMs` (plain finishes of a batch). */
  kept: [retentionMs: number, finishes: JobFinish[]][];
}

/**
 * Splits a batch in which some finishes carry a retention of their own (J11, the handler option
 * `retention`) into retention classes, so that each dialect writes each class with one statement, and the
 * classes without a deleted success with the very statements (SQL text) of a batch without per-type
 * retention. A finish without `retentionMs` gets the batch's.
 */
export function splitByRetention(params: JobFinishManyParams): RetentionClasses {
  const discard: JobFinish[] = [];
  const kept = new Map<number, JobFinish[]>();
  for (const f of params.finishes) {
    const ms = f.retentionMs ?? params.retentionMs;
    if (ms === 0 && f.outcome.kind === "success") {
      discard.push(f);
      continue;
    }
    const plain = { id: f.id, attempt: f.attempt, outcome: f.outcome };
    const group = kept.get(ms);
    if (group) group.push(plain);
    else kept.set(ms, [plain]);
  }
  discard.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)); // one lock order for every writer
  return { discard, kept: [...kept] };
}

/** The results of the classes' writes as one batch's. */
export function mergeFinishResults(results: readonly JobFinishManyResult[]): JobFinishManyResult {
  const freed = results.reduce((n, r) => n + (r.freed ?? 0), 0);
  const merged = { applied: results.flatMap((r) => r.applied), released: results.reduce((n, r) => n + r.released, 0) };
  return freed > 0 ? { ...merged, freed } : merged;
}
