/**
 * X2 on SQLite: the inserts of jobs with a unique key
 * (`JobStore.insertUniqueMany`'s, one or several), inside the `BEGIN IMMEDIATE` of the
 * batch: the write lock is taken before anything is read, so no other
 * process writes between the insert's check of the key's holders and its
 * write, and the unique index `later_jobs_unique` (namespace, job_type,
 * unique_key, unique_slot) WHERE unique_slot IS NOT NULL holds the rule
 * whatever a statement does (the insert is `INSERT … ON CONFLICT DO
 * NOTHING`, so a broken rule shows as nothing inserted, never as two
 * holders). A job not started yet holds its key's `pending` slot, a started
 * one the `active` slot until it finishes for good (see docs/storage.md
 * "Unique keys"). The insert is tried first; only a key found held is read.
 * Several inserts go in rounds of distinct keys, each round's tried by one
 * multi-row insert.
 */
import type { JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { dueStage } from "../shared/insert-stage.js";
import { nextUniqueRound, uniqueKeyOf } from "../shared/unique-rounds.js";
import { JOB_INSERT_COLUMN_LIST, JOB_INSERT_COLUMNS, jobInsertValues } from "../shared/job-insert-row.js";
import type { Row } from "../shared/job-rows.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { nextRowidText, type RowPlaces } from "./sqlite-row-places.js";
import type { StageDeltas } from "./sqlite-stage-counters.js";
import { SQLITE_TRANSITIONS as T, SqliteTransition } from "./sqlite-transition.js";

/** One `?` per column of `JOB_INSERT_COLUMNS`. */
export const JOB_INSERT_PLACEHOLDERS = JOB_INSERT_COLUMN_LIST.replace(/\w+/g, "?");

/** The most inserts one {@link insertIfFree} statement carries. */
const ROWS_PER_INSERT = 50;

/**
 * New jobs holding their keys' `pending` slots, `rows` of them (of distinct keys), tried first, before any
 * read: each row inserted only when its key has no holder the mode yields to (a `pending` one, by the unique
 * index; for `keep` also an `active` one, when the row's flag is 1), else nothing (then the holders are read
 * and the mode decides). A new key, the common case, costs no read of its own. `rowid`: each row's place, SQL
 * (see sqlite-row-places.ts). Per row, after what `rowid` binds: namespace, the job's own columns, stage and
 * time of the first history entry, created and updated times, the key, the `keep` flag ({@link freeRowValues}
 * and the flag). `VALUES` names its columns `column1`, `column2`, ... in that order. Several rows in one
 * statement: measured in batches of 10 with the commit, 12 µs a job against 15 for a statement per insert.
 */
function insertIfFree(rows: number, rowid: string): string {
  const own = JOB_INSERT_COLUMNS.length;
  // rowid, namespace, the own columns, stages, created_at, updated_at, unique_key; then the keep flag.
  const stored = 2 + own + 4;
  const column = (name: (typeof JOB_INSERT_COLUMNS)[number]) => `v.column${3 + JOB_INSERT_COLUMNS.indexOf(name)}`;
  const row = `(${rowid}, ?, ${JOB_INSERT_PLACEHOLDERS}, ${SqliteTransition.FIRST}, ?, ?, ?, ?)`;
  return `INSERT INTO later_jobs (rowid, namespace, ${JOB_INSERT_COLUMN_LIST}, stages, created_at, updated_at, unique_key, attempt, unique_slot)
  SELECT ${Array.from({ length: stored }, (_, i) => `column${i + 1}`).join(", ")}, 0, 'pending' FROM (VALUES ${Array.from({ length: rows }, () => row).join(", ")}) v
  WHERE NOT (v.column${stored + 1} AND EXISTS (SELECT 1 FROM later_jobs a
    WHERE a.namespace = v.column2 AND a.job_type = ${column("job_type")} AND a.unique_key = v.column${stored} AND a.unique_slot = 'active'))
  ON CONFLICT DO NOTHING RETURNING id`;
}

// The statements, built once (the connection's statement cache is keyed by the text).

/**
 * {@link insertIfFree}'s rule for an insert alone in its transaction, its place found by the insert itself (the
 * priority bound four times), then as {@link insertIfFree}'s row with no `VALUES`: the key's columns bound again
 * for the `active` check (`keep` flag, namespace, job type, key). Not {@link insertIfFree} of one row with that
 * place: its place's reads inside `VALUES` made a lone unique enqueue 2× slower (6,400–9,200 against
 * 14,500–18,500 jobs/s, 10 in flight, each written alone).
 */
const INSERT_IF_FREE = `INSERT INTO later_jobs (rowid, namespace, ${JOB_INSERT_COLUMN_LIST}, attempt, stages, created_at, updated_at, unique_key, unique_slot)
  SELECT ${nextRowidText("?")}, ?, ${JOB_INSERT_PLACEHOLDERS}, 0, ${SqliteTransition.FIRST}, ?, ?, ?, 'pending'
  WHERE NOT (? AND EXISTS (SELECT 1 FROM later_jobs WHERE namespace = ? AND job_type = ? AND unique_key = ? AND unique_slot = 'active'))
  ON CONFLICT DO NOTHING RETURNING id`;

/** {@link insertIfFree} of `rows` of a transaction's several inserts, each place from its `RowPlaces` (bound, or null), built once per row count. */
const insertIfFreeAt = (() => {
  const texts: string[] = [];
  return (rows: number): string => (texts[rows] ??= insertIfFree(rows, "?"));
})();

/** The replace of a `pending` job that keeps its stage (no transition). */
const REPLACE_KEPT = "UPDATE later_jobs SET payload = ?, updated_at = ?, run_at = CASE WHEN ? THEN ? ELSE run_at END, meta = coalesce(?, meta) WHERE id = ?";

/** The replace of a `pending` job whose stage changes (X2's replace transition). */
const REPLACE_MOVED = `UPDATE later_jobs SET payload = ?, updated_at = ?, run_at = CASE WHEN ? THEN ? ELSE run_at END, meta = coalesce(?, meta), ${T.replace.stage}, ${T.replace.history}
  WHERE id = ?`;

/**
 * One insert alone in the caller's `immediate` transaction; adds its stage moves to `deltas`, which the caller
 * writes in it. Several go through {@link insertUniqueRows}.
 */
export function insertUniqueRow(c: SqliteConnection, namespace: string, params: B.JobInsertUniqueParams, deltas: StageDeltas): B.JobInsertUniqueResult {
  const { job, now } = params;
  const stage = dueStage(job, now);
  const priority = job.priority ?? 0;
  const keep = params.uniqueMode === "keep" ? 1 : 0;
  const values = [priority, priority, priority, priority, ...freeRowValues(namespace, params, stage), keep, namespace, job.jobType, params.uniqueKey];
  if (c.get(INSERT_IF_FREE, ...values)) return inserted(job.id, stage, deltas);
  return heldKey(c, namespace, params, stage, deltas);
}

/**
 * Several inserts in one `immediate` transaction, in order as if each ran alone ({@link insertUniqueRow}): in
 * rounds of distinct keys (`unique-rounds.ts`), each round's inserts tried at once, by statements of up to
 * {@link ROWS_PER_INSERT} rows; an insert that found its key held is then decided alone, before the next round.
 * `places`: the transaction's row places.
 */
export function insertUniqueRows(
  c: SqliteConnection,
  namespace: string,
  inserts: readonly B.JobInsertUniqueParams[],
  deltas: StageDeltas,
  places: RowPlaces,
): B.JobInsertUniqueResult[] {
  const results: (B.JobInsertUniqueResult | undefined)[] = new Array(inserts.length);
  const keys = inserts.map(uniqueKeyOf);
  for (let round = nextUniqueRound(keys, () => false); round.length > 0; round = nextUniqueRound(keys, (n) => results[n] !== undefined)) {
    for (let from = 0; from < round.length; from += ROWS_PER_INSERT) {
      const part = round.slice(from, from + ROWS_PER_INSERT);
      const values: unknown[] = [];
      const stages = part.map((n) => {
        const p = inserts[n]!;
        const stage = dueStage(p.job, p.now);
        values.push(places.next(p.job.priority ?? 0), ...freeRowValues(namespace, p, stage), p.uniqueMode === "keep" ? 1 : 0);
        return stage;
      });
      // A row not written leaves its place unused: a gap in its priority's range, which nothing reads.
      const written = new Set(c.all(insertIfFreeAt(part.length), values).map((r) => r.id));
      part.forEach((n, i) => {
        const p = inserts[n]!;
        results[n] = written.has(p.job.id) ? inserted(p.job.id, stages[i]!, deltas) : heldKey(c, namespace, p, stages[i]!, deltas);
      });
    }
  }
  return results as B.JobInsertUniqueResult[];
}

/** The values of a row of {@link insertIfFree} after its place and before its `keep` flag: namespace, own columns, first history entry, times, key. */
function freeRowValues(namespace: string, params: B.JobInsertUniqueParams, stage: JobStage): unknown[] {
  const { job, now } = params;
  return [namespace, ...jobInsertValues(job, stage), stage, now, now, now, params.uniqueKey];
}

/**
 * An insert whose key was found held (its {@link insertIfFree} wrote nothing): the holders read, and the mode
 * decides (existing, or the `pending` job replaced). Run in the same write transaction as that insert.
 */
function heldKey(c: SqliteConnection, namespace: string, params: B.JobInsertUniqueParams, stage: JobStage, deltas: StageDeltas): B.JobInsertUniqueResult {
  const { job, now, uniqueMode: mode } = params;
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
  // Not reached: its insert wrote nothing only because the key had a holder, read in the same write lock.
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
