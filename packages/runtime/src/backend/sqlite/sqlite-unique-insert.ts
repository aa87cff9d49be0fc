/**
 * X2 on SQLite: the insert of one job with a unique key
 * (`JobStore.insertUnique`), inside one `BEGIN IMMEDIATE`: the write lock is
 * taken before the key's holders are read, so no other process writes
 * between the read and the write, and the unique index `later_jobs_unique`
 * (namespace, job_type, unique_key, unique_slot) WHERE unique_slot IS NOT
 * NULL holds the rule whatever a statement does (the insert is `INSERT …
 * ON CONFLICT DO NOTHING`, so a broken rule shows as nothing inserted,
 * never as two holders). A job not started yet holds its key's `pending`
 * slot, a started one the `active` slot until it finishes for good (see
 * docs/storage.md "Unique keys").
 */
import type { JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { dueStage } from "../shared/insert-stage.js";
import { JOB_INSERT_COLUMN_LIST, jobInsertValues } from "../shared/job-insert-row.js";
import type { Row } from "../shared/job-rows.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { nextRowidText } from "./sqlite-row-places.js";
import { StageDeltas } from "./sqlite-stage-counters.js";
import { SQLITE_TRANSITIONS as T, SqliteTransition } from "./sqlite-transition.js";

/** One `?` per column of `JOB_INSERT_COLUMNS`. */
export const JOB_INSERT_PLACEHOLDERS = JOB_INSERT_COLUMN_LIST.replace(/\w+/g, "?");

// The statements, built once (the connection's statement cache is keyed by the text).

/** A new job holding its key's `pending` slot; nothing when the slot is taken. */
const INSERT_HOLDING = `INSERT INTO later_jobs (rowid, namespace, ${JOB_INSERT_COLUMN_LIST}, attempt, stages, created_at, updated_at, unique_key, unique_slot)
  VALUES (${nextRowidText("?")}, ?, ${JOB_INSERT_PLACEHOLDERS}, 0, ${SqliteTransition.FIRST}, ?, ?, ?, 'pending')
  ON CONFLICT DO NOTHING RETURNING id`;

/** The replace of a `pending` job that keeps its stage (no transition). */
const REPLACE_KEPT = "UPDATE later_jobs SET payload = ?, updated_at = ?, run_at = CASE WHEN ? THEN ? ELSE run_at END, meta = coalesce(?, meta) WHERE id = ?";

/** The replace of a `pending` job whose stage changes (X2's replace transition). */
const REPLACE_MOVED = `UPDATE later_jobs SET payload = ?, updated_at = ?, run_at = CASE WHEN ? THEN ? ELSE run_at END, meta = coalesce(?, meta), ${T.replace.stage}, ${T.replace.history}
  WHERE id = ?`;

/**
 * Runs inside the caller's `immediate` transaction; `countMoves` writes the
 * stage counters of what it changed in that transaction.
 */
export function insertUniqueRow(
  c: SqliteConnection,
  namespace: string,
  params: B.JobInsertUniqueParams,
  countMoves: (deltas: StageDeltas) => void,
): B.JobInsertUniqueResult {
  const { job, now, uniqueMode: mode } = params;
  const stage = dueStage(job, now);
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
    if (moved) {
      const deltas = new StageDeltas();
      T.replace.count(deltas, [{ stage: to, topic: null, partition_no: null }], pending.stage as JobStage);
      countMoves(deltas);
    }
    return { id: String(pending.id), outcome: "replaced", stage: to };
  }
  if (pending) return existing(pending); // afterActive before the key's job started
  const priority = job.priority ?? 0;
  const inserted = c.get(
    INSERT_HOLDING,
    priority,
    priority,
    priority,
    priority,
    namespace,
    ...jobInsertValues(job, stage),
    stage,
    now,
    now,
    now,
    params.uniqueKey,
  );
  if (!inserted) {
    // Unreachable inside the write lock (the holders were read in it); kept so a conflict reports the row that holds the slot.
    const row = c.get(
      "SELECT id, stage FROM later_jobs WHERE namespace = ? AND job_type = ? AND unique_key = ? AND unique_slot = 'pending'",
      namespace,
      job.jobType,
      params.uniqueKey,
    );
    return row ? existing(row) : { id: job.id, outcome: "existing", stage };
  }
  const deltas = new StageDeltas();
  T.insert.count(deltas, [{ stage, topic: null, partition_no: null }], null);
  countMoves(deltas);
  return { id: job.id, outcome: "inserted", stage };
}

function existing(row: Row): B.JobInsertUniqueResult {
  return { id: String(row.id), outcome: "existing", stage: row.stage as JobStage };
}
