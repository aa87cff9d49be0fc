/**
 * The legal changes of a job's stage: the state diagram of
 * {@link JobStage}, in code (design rule X13 in docs/semantics.md).
 *
 * ```text
 *             insert                                   (null = no row yet)
 *   null ─────────────► enqueued | delayed | waiting | failed
 *
 *   enqueued ┐
 *   delayed  ├─claim──► running ─succeed──► success
 *   requeued ┘             │   ─fail─────► failed
 *      ▲                   │   ─requeue──► requeued       (retries left)
 *      │                   │   ─rescue───► requeued | failed (lease abandoned)
 *      └──────release──────┘   (put back: enqueued | requeued, attempt undone)
 *
 *   waiting ─releaseChild──► enqueued | delayed          (parent succeeded)
 *   waiting ─failChild─────► failed                     (parent failed for good)
 *   any unfinished ─forceFail──► failed                  (partition head, from outside)
 *
 *   failed ─retry──► enqueued                            (from outside, X7)
 *   success | failed ─delete | expire | truncate──► null (row deleted)
 * ```
 *
 * Each backend builds every statement that changes a stage through one
 * place per dialect (`backend/postgres/postgres-transition.ts`,
 * `backend/sqlite/sqlite-transition.ts`), which reads this table: it
 * appends the history entry, counts the moves for the stage counters, and
 * sends the wake-up when the kind {@link StageTransition.wakes} and a row
 * entered a stage in {@link WAKING_STAGES}. Adding a kind (say `cancel`) is
 * one line in {@link STAGE_TRANSITIONS}; the conformance suite checks that
 * every stored history walks only these transitions.
 */
import { CLAIMABLE_STAGES, type JobStage, RETRYABLE_STAGES, TERMINAL_STAGES, UNFINISHED_STAGES } from "./job-stage.js";

/** One legal change: the stages a row may leave (`null`: inserted) and enter (`null`: deleted). */
export interface StageTransition {
  /** Stages the row may be in before; `null` for an insert (no row before). */
  readonly from: readonly JobStage[] | null;
  /** Stages the row may be in after; `null` for a delete (no row after). */
  readonly to: readonly JobStage[] | null;
  /**
   * Whether the change can make work ready for other servers (a row entering
   * one of {@link WAKING_STAGES}): the statement then sends one wake-up.
   */
  readonly wakes: boolean;
}

/**
 * Stages whose entry wakes the fetchers: claimable now or later (a `delayed`
 * or `requeued` row moves their next due time). The same list as
 * {@link CLAIMABLE_STAGES}.
 */
export const WAKING_STAGES: readonly JobStage[] = CLAIMABLE_STAGES;

const t = (from: readonly JobStage[] | null, to: readonly JobStage[] | null, wakes: boolean): StageTransition => ({ from, to, wakes });

/**
 * Every legal stage change, by kind. One line per kind: adding a stage's
 * transitions is adding lines here (the dialect builders and the history
 * check read the table).
 */
export const STAGE_TRANSITIONS = {
  /** A job stored: enqueued, delayed (runs later), waiting (a continuation) or failed (its parent already failed, J5). */
  insert: t(null, ["enqueued", "delayed", "waiting", "failed"], true),
  /** A worker (or a partition's lease holder) takes a ready job. */
  claim: t(CLAIMABLE_STAGES, ["running"], false),
  /** The handler resolved. */
  succeed: t(["running"], ["success"], false),
  /** The handler threw with retries left: runnable again at its `run_at`. */
  requeue: t(["running"], ["requeued"], true),
  /** The handler threw for good (retries spent, `PermanentJobError`, a payload that does not decode, a timeout). */
  fail: t(["running"], ["failed"], false),
  /** The stuck-job sweep finishes a running job whose lease expired long ago: retried or failed. */
  rescue: t(["running"], ["requeued", "failed"], true),
  /** A claim put back (shutdown, a claim the worker could not start): attempt undone, `enqueued` after a first attempt. */
  release: t(["running"], ["enqueued", "requeued"], true),
  /** A waiting continuation whose parent succeeded: `delayed` while its own delay runs, else `enqueued`. */
  releaseChild: t(["waiting"], ["enqueued", "delayed"], true),
  /** A waiting continuation whose parent failed for good (down the chain). */
  failChild: t(["waiting"], ["failed"], false),
  /** `retry` from outside (X7): a failed job runs again, a partitioned one at its partition's end. */
  retry: t(RETRYABLE_STAGES, ["enqueued"], true),
  /** `delete` from outside (X7). */
  delete: t(TERMINAL_STAGES, null, false),
  /** The expiry sweep deletes a terminal job past its `expires_at` (J11). */
  expire: t(TERMINAL_STAGES, null, false),
  /** `truncatePartitionHistory`: a partition's oldest finished jobs deleted. */
  truncate: t(TERMINAL_STAGES, null, false),
  /** A partition's head failed from outside (`failPartitionHead`), whatever unfinished stage it was in. */
  forceFail: t(UNFINISHED_STAGES, ["failed"], false),
} as const satisfies Record<string, StageTransition>;

/** The name of a legal stage change (a key of {@link STAGE_TRANSITIONS}). */
export type TransitionKind = keyof typeof STAGE_TRANSITIONS;

/** Every kind, in table order. */
export const TRANSITION_KINDS = Object.keys(STAGE_TRANSITIONS) as TransitionKind[];

/** The stages the given kinds may enter, in {@link JOB_STAGES}-independent table order, without repeats (deletes add none). */
export function stagesEntered(kinds: readonly TransitionKind[]): JobStage[] {
  const out: JobStage[] = [];
  for (const k of kinds) for (const s of STAGE_TRANSITIONS[k].to ?? []) if (!out.includes(s)) out.push(s);
  return out;
}

/**
 * The stages whose entry by a row of these kinds sends the wake-up: the
 * kinds that wake, their target stages that are in {@link WAKING_STAGES}.
 * Empty: the statement sends none.
 */
export function wakingStages(kinds: readonly TransitionKind[]): JobStage[] {
  return stagesEntered(kinds.filter((k) => STAGE_TRANSITIONS[k].wakes)).filter((s) => WAKING_STAGES.includes(s));
}

/** Whether some kind moves a row from `from` to `to` (`null`: insert / delete). */
export function isLegalTransition(from: JobStage | null, to: JobStage | null): boolean {
  return TRANSITION_KINDS.some((k) => {
    const tr: StageTransition = STAGE_TRANSITIONS[k];
    const leaves = from === null ? tr.from === null : (tr.from?.includes(from) ?? false);
    const enters = to === null ? tr.to === null : (tr.to?.includes(to) ?? false);
    return leaves && enters;
  });
}

/**
 * The first illegal step of a stored stage history (oldest first), or null
 * when it walks only legal transitions: the first entry must be an insert's
 * target, each next one reachable from the one before.
 */
export function illegalStep(history: readonly JobStage[]): { from: JobStage | null; to: JobStage } | null {
  let from: JobStage | null = null;
  for (const to of history) {
    if (!isLegalTransition(from, to)) return { from, to };
    from = to;
  }
  return null;
}
