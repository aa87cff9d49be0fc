/**
 * X2 on PostgreSQL: the insert of one job with a unique key (one of
 * `JobStore.insertUniqueMany`'s), one statement, race-safe through the unique
 * index `later_jobs_unique` (namespace, job_type, unique_key, unique_slot)
 * WHERE unique_slot IS NOT NULL. A job not started yet holds its key's
 * `pending` slot; the claim moves it to `active`, which it keeps while it
 * is put back or requeued for a retry, and every finish for good clears
 * the slot (an expression of the finish's own UPDATE). So a key has at most
 * one job waiting to start and one started, and the claim does not start a
 * `pending` job while its key's `active` slot is held: the kept job runs
 * after the one running (docs/storage.md "Unique keys").
 *
 * The statement reads the key's holders (by the unique index), replaces the
 * `pending` job when the mode says so (locked, and checked still `pending`
 * after the lock: a claim that won the race leaves nothing to replace), and
 * otherwise inserts with `ON CONFLICT DO NOTHING` (no conflict target: it
 * covers the key's index and the primary key alike). An insert that found
 * nothing and conflicted anyway lost a race with a writer whose row its
 * snapshot could not see: {@link PostgresUniqueInsert.run} runs the
 * statement again, whose new snapshot sees that row. The same holds for a
 * run again after a lost reply: the job's own id is then what holds the
 * key, and is reported `inserted`.
 */
import type * as B from "../backend.js";
import { DatabaseUnavailableError } from "../../errors.js";
import type { JobStage } from "../../core/job-stage.js";
import { dueStage } from "../shared/insert-stage.js";
import { JOB_INSERT_COLUMN_LIST, jobInsertValues } from "../shared/job-insert-row.js";
import { transition, transitionTail } from "./postgres-transition.js";
import { statement, type Execute, type Statement } from "./postgres-statement.js";

/** How often a lost race is run again before giving up (each loss means another writer changed the key meanwhile). */
const MAX_TRIES = 5;

export class PostgresUniqueInsert {
  /**
   * `$1` namespace, `$2`–`$11` the job's own columns (`JOB_INSERT_COLUMNS`:
   * id, job type, payload, stage (`enqueued` or `delayed`), retry policy,
   * timeout, run_at, priority, meta (X10; null: none, and a replace keeps
   * the job's own), group (X9; a replace keeps the job's own)), `$12` now, `$13` unique key, `$14` mode, `$15`/`$16`
   * notify channel and payload. One row: `inserted` (id), `replaced` (id),
   * `held` (the key's job standing for it: the pending one first), with the
   * stages of each.
   */
  readonly insert: Statement;

  constructor(schema: string) {
    const jobs = `${schema}.later_jobs`;
    const inserted = transition({ kinds: "insert", rows: "ins", from: null, to: "$5", at: "$12::bigint" });
    // Only the rows whose stage changed move (and get an entry); a replace that keeps the stage is no transition.
    const replaced = transition({
      kinds: "replace",
      rows: "(SELECT * FROM upd WHERE stage <> was) u",
      from: "was",
      to: "CASE WHEN $14 = 'replace' THEN $5 ELSE j.stage END",
      at: "$12::bigint",
    });
    // Every replaced row wakes, its stage changed or not: a new run time (or payload) of a waiting job moves the fetchers' next due time.
    const tail = transitionTail(schema, "$1", [inserted, replaced], ["$15", "$16"], "SELECT 1 FROM upd");
    this.insert = statement(`WITH held AS (
  SELECT id, stage, unique_slot FROM ${jobs} WHERE namespace = $1 AND job_type = $3 AND unique_key = $13 AND unique_slot IS NOT NULL
), target AS (
  SELECT j.id, j.stage FROM ${jobs} j
  WHERE j.id = (SELECT id FROM held WHERE unique_slot = 'pending') AND j.unique_slot = 'pending'
    AND ($14 = 'replace' OR ($14 = 'afterActive' AND EXISTS (SELECT 1 FROM held WHERE unique_slot = 'active')))
  FOR UPDATE
), upd AS (
  UPDATE ${jobs} j SET payload = $4, updated_at = $12,
    run_at = CASE WHEN $14 = 'replace' THEN $8::bigint ELSE j.run_at END,
    meta = CASE WHEN $10::text IS NULL THEN j.meta ELSE $10 END,
    ${replaced.stage},
    ${replaced.historyIfMoved}
  FROM target t WHERE j.id = t.id
  RETURNING j.id, j.stage, t.stage AS was, j.topic, j.partition_no
), ins AS (
  INSERT INTO ${jobs} (namespace, ${JOB_INSERT_COLUMN_LIST}, attempt, stages, created_at, updated_at, unique_key, unique_slot)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, ${inserted.first}, $12, $12, $13, 'pending'
  WHERE NOT EXISTS (SELECT 1 FROM upd)
    AND NOT ($14 <> 'replace' AND EXISTS (SELECT 1 FROM held WHERE unique_slot = 'pending'))
    AND NOT ($14 = 'keep' AND EXISTS (SELECT 1 FROM held WHERE unique_slot = 'active'))
  ON CONFLICT DO NOTHING
  RETURNING id, stage, topic, partition_no
)${tail}
SELECT (SELECT id FROM ins) AS inserted, (SELECT stage FROM ins) AS inserted_stage,
  (SELECT id FROM upd) AS replaced, (SELECT stage FROM upd) AS replaced_stage,
  (SELECT id FROM held ORDER BY unique_slot DESC LIMIT 1) AS held, (SELECT stage FROM held ORDER BY unique_slot DESC LIMIT 1) AS held_stage,
  (SELECT unique_slot FROM held ORDER BY unique_slot DESC LIMIT 1) AS held_slot,
  (SELECT count(*) FROM notified)::int AS notified`);
  }

  /**
   * Several inserts in the caller's transaction, one statement each, in the order of their (job type, key)
   * (stable: two of one key keep theirs), so that two such transactions lock keys in one order and never
   * deadlock each other; each sees the ones before it. Results in `inserts`' order.
   */
  async runMany(
    execute: Execute,
    namespace: string,
    inserts: readonly B.JobInsertUniqueParams[],
    notify: readonly [string, string],
  ): Promise<B.JobInsertUniqueResult[]> {
    const key = (p: B.JobInsertUniqueParams) => `${p.job.jobType}\u0000${p.uniqueKey}`;
    const order = inserts.map((_, i) => i).sort((a, b) => (key(inserts[a]!) < key(inserts[b]!) ? -1 : key(inserts[a]!) > key(inserts[b]!) ? 1 : a - b));
    const results: B.JobInsertUniqueResult[] = new Array(inserts.length);
    for (const i of order) results[i] = await this.run(execute, namespace, inserts[i]!, notify);
    return results;
  }

  /** Runs {@link insert} until it wrote or found the key's job (see the file comment); `notify`: channel and payload. */
  async run(execute: Execute, namespace: string, params: B.JobInsertUniqueParams, notify: readonly [string, string]): Promise<B.JobInsertUniqueResult> {
    const { job, now } = params;
    const values = [namespace, ...jobInsertValues(job, dueStage(job, now)), now, params.uniqueKey, params.uniqueMode, ...notify];
    for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
      const [row] = await execute(this.insert, values);
      if (row?.inserted) return { id: job.id, outcome: "inserted", stage: row.inserted_stage as JobStage };
      if (row?.replaced) return { id: String(row.replaced), outcome: "replaced", stage: row.replaced_stage as JobStage };
      // Written by an earlier try whose reply was lost: this enqueue's own job holds the key.
      if (row?.held === job.id) return { id: job.id, outcome: "inserted", stage: row.held_stage as JobStage };
      // Found held, and the mode writes nothing: keep, or afterActive before the key's job started.
      if (row?.held && (params.uniqueMode === "keep" || (params.uniqueMode === "afterActive" && row.held_slot === "pending"))) {
        return { id: String(row.held), outcome: "existing", stage: row.held_stage as JobStage };
      }
      // Nothing written and nothing (or not the right thing) seen: a concurrent writer's row, invisible to this snapshot, conflicted.
    }
    throw new DatabaseUnavailableError(
      `enqueue with uniqueKey "${params.uniqueKey}": the key changed hands ${MAX_TRIES} times during the write; try again`,
      undefined,
      {
        transient: true,
      },
    );
  }
}
