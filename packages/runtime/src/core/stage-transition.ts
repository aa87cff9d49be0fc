/**
 * The legal changes of a job's stage: the state diagram of
 * {@link JobStage}, in code (design rule X13 in docs/semantics.md).
 *
 * ```text
 *             insert                                   (null = no row yet)
 *   null ─────────────► enqueued | delayed | waiting | failed | cancelled
 *                         (failed / cancelled: a continuation of a parent that already failed / was cancelled)
 *
 *   enqueued ┐
 *   delayed  ├─claim──► running ─succeed──► success
 *   requeued ┘             │   ─fail─────► failed
 *      ▲                   │   ─requeue──► requeued       (retries left)
 *      │                   │   ─rescue───► requeued | failed (lease abandoned)
 *      └──────release──────┘   (put back: enqueued | requeued, attempt undone)
 *
 *   enqueued ⇄ delayed ─replace──                        (X2: a unique key's job not started, new run time)
 *   waiting ─releaseChild──► enqueued | delayed          (parent succeeded)
 *   waiting ─failChild─────► failed                     (parent failed for good)
 *   any unfinished ─forceFail──► failed                  (partition head, from outside)
 *   any unfinished ─cancel─────► cancelled               (from outside, X3; a running head frees its partition)
 *   waiting ─cancelChild──► cancelled                    (its parent cancelled, down the chain)
 *
 *   failed | cancelled ─retry──► enqueued                (from outside, X7)
 *   success | failed | cancelled ─delete | expire | truncate──► null (row deleted)
 *   success ─discard──► null                             (J11: successMs 0, in the statement that records the success)
 * ```
 *
 * Each backend builds every statement that changes a stage through one
 * place per dialect (`backend/postgres/postgres-transition.ts`,
 * `backend/sqlite/sqlite-transition.ts`), which reads this table: it
 * appends the history entry, counts the moves for the stage counters, and
 * sends the wake-up when the kind {@link StageTransition.wakes} and a row
 * entered a stage in {@link WAKING_STAGES}, or, for a kind that wakes
 * `"partition"` (`cancel`), when a row of a partition left it. Adding a kind
 * is one line in {@link STAGE_TRANSITIONS}; the conformance suite checks
 * that every stored history walks only these transitions.
 */
import { CANCELLABLE_STAGES, CLAIMABLE_STAGES, type JobStage, RETRYABLE_STAGES, TERMINAL_STAGES, UNFINISHED_STAGES } from "./job-stage.js";

/** One legal change: the stages a row may leave (`null`: inserted) and enter (`null`: deleted). */
export interface StageTransition {
  /** Stages the row may be in before; `null` for an insert (no row before). */
  readonly from: readonly JobStage[] | null;
  /** Stages the row may be in after; `null` for a delete (no row after). */
  readonly to: readonly JobStage[] | null;
  /**
   * Whether the change can make work ready for other servers, so the
   * statement sends one wake-up: `true`, by a row entering one of
   * {@link WAKING_STAGES}; `"partition"`, by a partitioned row leaving its
   * partition's unfinished jobs from outside (a cancelled head, X3: the
   * partition's next job may be claimed now, and no lease holder goes on to
   * it), so any partitioned row of the change wakes (the statement does not
   * tell a head from the jobs behind it: at worst one extra claim probe);
   * `false`, never.
   */
  readonly wakes: boolean | "partition";
}

/**
 * Stages whose entry wakes the fetchers: claimable now or later (a `delayed`
 * or `requeued` row moves their next due time). The same list as
 * {@link CLAIMABLE_STAGES}.
 */
export const WAKING_STAGES: readonly JobStage[] = CLAIMABLE_STAGES;

const t = (from: readonly JobStage[] | null, to: readonly JobStage[] | null, wakes: StageTransition["wakes"]): StageTransition => ({ from, to, wakes });

/**
 * Every legal stage change, by kind. One line per kind: adding a stage's
 * transitions is adding lines here (the dialect builders and the history
 * check read the table).
 */
export const STAGE_TRANSITIONS = {
  /** A job stored: enqueued, delayed (runs later), waiting (a continuation), failed (its parent already failed, J5) or cancelled (its parent was, X3). */
  insert: t(null, ["enqueued", "delayed", "waiting", "failed", "cancelled"], true),
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
  /**
   * X2: an enqueue with a unique key in mode `replace` gives the key's job that has not started yet the new payload
   * and run time: `enqueued` ⇄ `delayed` as that run time is due or not (a stage kept as it was is no change).
   */
  replace: t(["enqueued", "delayed"], ["enqueued", "delayed"], true),
  /** `retry` from outside (X7): a failed job runs again, a partitioned one at its partition's end. */
  retry: t(RETRYABLE_STAGES, ["enqueued"], true),
  /** `delete` from outside (X7). */
  delete: t(TERMINAL_STAGES, null, false),
  /** The expiry sweep deletes a terminal job past its `expires_at` (J11). */
  expire: t(TERMINAL_STAGES, null, false),
  /**
   * J11: a success of a job type with `successMs: 0`, deleted by the very statement that records it: counted
   * as `succeed` (running → success, so throughput sees it) and then this (success → no row).
   */
  discard: t(["success"], null, false),
  /** `truncatePartitionHistory`: a partition's oldest finished jobs deleted. */
  truncate: t(TERMINAL_STAGES, null, false),
  /** A partition's head failed from outside (`failPartitionHead`), whatever unfinished stage it was in. */
  forceFail: t(UNFINISHED_STAGES, ["failed"], false),
  /** `cancel` from outside (X3): an unfinished job ends at once; a cancelled partition job lets its partition go on. */
  cancel: t(CANCELLABLE_STAGES, ["cancelled"], "partition"),
  /** A waiting continuation of a cancelled job (down the chain); a partitioned one no longer holds its partition up. */
  cancelChild: t(["waiting"], ["cancelled"], "partition"),
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
 * kinds that wake (`true`), their target stages that are in
 * {@link WAKING_STAGES}. Empty: no entry wakes (see {@link wakesByPartition}).
 */
export function wakingStages(kinds: readonly TransitionKind[]): JobStage[] {
  return stagesEntered(kinds.filter((k) => STAGE_TRANSITIONS[k].wakes === true)).filter((s) => WAKING_STAGES.includes(s));
}

/** Whether a partitioned row changed by one of these kinds sends the wake-up (a kind that wakes `"partition"`). */
export function wakesByPartition(kinds: readonly TransitionKind[]): boolean {
  return kinds.some((k) => STAGE_TRANSITIONS[k].wakes === "partition");
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
