/**
 * X2 on SQLite: the insert of one job with a unique key (one of
 * `JobStore.insertUniqueMany`'s), inside the `BEGIN IMMEDIATE` of the
 * batch: the write lock is taken before anything is read, so no other
 * process writes between the insert's check of the key's holders and its
 * write, and the unique index `later_jobs_unique` (namespace, job_type,
 * unique_key, unique_slot) WHERE unique_slot IS NOT NULL holds the rule
 * whatever a statement does (the insert is `INSERT … ON CONFLICT DO
 * NOTHING`, so a broken rule shows as nothing inserted, never as two
 * holders). A job not started yet holds its key's `pending` slot, a started
 * one the `active` slot until it finishes for good (see docs/storage.md
 * "Unique keys"). The insert is tried first; only a key found held is read.
 */
import type { JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { dueStage } from "../shared/insert-stage.js";
import { JOB_INSERT_COLUMN_LIST, jobInsertValues } from "../shared/job-insert-row.js";
import type { Row } from "../shared/job-rows.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { nextRowidText, type RowPlaces } from "./sqlite-row-places.js";
import type { StageDeltas } from "./sqlite-stage-counters.js";
import { SQLITE_TRANSITIONS as T, SqliteTransition } from "./sqlite-transition.js";

/** One `?` per column of `JOB_INSERT_COLUMNS`. */
export const JOB_INSERT_PLACEHOLDERS = JOB_INSERT_COLUMN_LIST.replace(/\w+/g, "?");

// The statements, built once (the connection's statement cache is keyed by the text).

/**
 * A new job holding its key's `pending` slot, tried first, before any read: inserted only when the key
 * has no holder the mode yields to (a `pending` one, by the unique index; for `keep` also an `active`
 * one, when the bound flag is 1), else nothing (then the holders are read and the mode decides). A new
 * key, the common case, costs one statement instead of a read and an insert. `rowid`: the row's place,
 * SQL (see sqlite-row-places.ts).
 */
const insertIfFree = (
  rowid: string,
) => `INSERT INTO later_jobs (rowid, namespace, ${JOB_INSERT_COLUMN_LIST}, attempt, stages, created_at, updated_at, unique_key, unique_slot)
  SELECT ${rowid}, ?, ${JOB_INSERT_PLACEHOLDERS}, 0, ${SqliteTransition.FIRST}, ?, ?, ?, 'pending'
  WHERE NOT (? AND EXISTS (SELECT 1 FROM later_jobs WHERE namespace = ? AND job_type = ? AND unique_key = ? AND unique_slot = 'active'))
  ON CONFLICT DO NOTHING RETURNING id`;

/** {@link insertIfFree} alone in its transaction: its place found by the insert itself (the priority bound four times). */
const INSERT_IF_FREE = insertIfFree(nextRowidText("?"));

/** {@link insertIfFree} of one of several in a transaction: its place from the transaction's `RowPlaces` (bound, or null). */
const INSERT_IF_FREE_AT = insertIfFree("?");

/** The replace of a `pending` job that keeps its stage (no transition). */
const REPLACE_KEPT = "UPDATE later_jobs SET payload = ?, updated_at = ?, run_at = CASE WHEN ? THEN ? ELSE run_at END, meta = coalesce(?, meta) WHERE id = ?";

/** The replace of a `pending` job whose stage changes (X2's replace transition). */
const REPLACE_MOVED = `UPDATE later_jobs SET payload = ?, updated_at = ?, run_at = CASE WHEN ? THEN ? ELSE run_at END, meta = coalesce(?, meta), ${T.replace.stage}, ${T.replace.history}
  WHERE id = ?`;

/**
 * Runs inside the caller's `immediate` transaction; adds its stage moves to `deltas`, which the caller writes in it.
 * `places`: the transaction's row places when it inserts several (null: this is its only insert).
 */
export function insertUniqueRow(
  c: SqliteConnection,
  namespace: string,
  params: B.JobInsertUniqueParams,
  deltas: StageDeltas,
  places: RowPlaces | null,
): B.JobInsertUniqueResult {
  const { job, now, uniqueMode: mode } = params;
  const stage = dueStage(job, now);
  const priority = job.priority ?? 0;
  const at = places === null ? [priority, priority, priority, priority] : [places.next(priority)];
  const values = [...at, namespace, ...jobInsertValues(job, stage), stage, now, now, now, params.uniqueKey];
  const keep = mode === "keep" ? 1 : 0;
  if (c.get(places === null ? INSERT_IF_FREE : INSERT_IF_FREE_AT, ...values, keep, namespace, job.jobType, params.uniqueKey))
    return inserted(job.id, stage, deltas);
  const held = c.all(
    "SELECT id, stage, unique_slot FROM later_jobs WHERE namespace = ? AND job_type = ? AND unique_key = ? AND unique_slot IS NOT NULL",
    namespace,
    job.jobType,
    params.uniqueKey,
  );
  const pending = held.find((r) => r.unique_slot === "pending");
  const active = held.find((r) => r.unique_slot === "active");
  const standing = pending ?? active;
  if (mode === "keep" && standing) return existing(standing);
  if (pending && (mode === "replace" || active)) {
    // replace: the payload and the run time (a delayed job may become due, or a due one delayed); afterActive: the payload only.
    const to: JobStage = mode === "replace" ? stage : (pending.stage as JobStage);
    // A stage kept as it was is no transition: no history entry, no move.
    const moved = to !== pending.stage;
    c.run(
      moved ? REPLACE_MOVED : REPLACE_KEPT,
      job.payload,
      now,
      mode === "replace" ? 1 : 0,
      job.runAt,
      job.meta ?? null,
      ...(moved ? [to, to, now] : []),
      pending.id,
    );
    if (moved) T.replace.count(deltas, [{ stage: to, topic: null, partition_no: null }], pending.stage as JobStage);
    return { id: String(pending.id), outcome: "replaced", stage: to };
  }
  if (pending) return existing(pending); // afterActive before the key's job started
  // Not reached: the insert above wrote nothing only because the key had a holder, read in the same write lock.
  throw new Error(`unique insert of key ${JSON.stringify(params.uniqueKey)}: neither inserted nor held`);
}

/** A new job holding its key's `pending` slot: its move into its first stage counted. */
function inserted(id: string, stage: JobStage, deltas: StageDeltas): B.JobInsertUniqueResult {
  T.insert.count(deltas, [{ stage, topic: null, partition_no: null }], null);
  return { id, outcome: "inserted", stage };
}

function existing(row: Row): B.JobInsertUniqueResult {
  return { id: String(row.id), outcome: "existing", stage: row.stage as JobStage };
}
