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
 * The statement takes several inserts of distinct keys at once (a JSON
 * array, one index probe per insert). For each it reads the key's holders
 * (by the unique index), replaces the `pending` job when the mode says so
 * (locked, and checked still `pending` after the lock: a claim that won the
 * race leaves nothing to replace), and otherwise inserts with `ON CONFLICT
 * DO NOTHING` (no conflict target: it covers the key's index and the
 * primary key alike). An insert that found nothing and conflicted anyway
 * lost a race with a writer whose row its snapshot could not see:
 * {@link PostgresUniqueInsert.runMany} runs it again, in a statement whose
 * new snapshot sees that row. The same holds for a run again after a lost
 * reply: the job's own id is then what holds the key, and is reported
 * `inserted`. Inserts of one key go in statements one after another, in
 * their order (rounds: each key's first insert, then each key's second...).
 */
import type * as B from "../backend.js";
import { DatabaseUnavailableError } from "../../errors.js";
import type { JobStage } from "../../core/job-stage.js";
import { dueStage } from "../shared/insert-stage.js";
import { JOB_INSERT_COLUMN_LIST, jobInsertRow, jobInsertValues } from "../shared/job-insert-row.js";
import { nextUniqueRound, uniqueKeyOf } from "../shared/unique-rounds.js";
import { transition, transitionTail } from "./postgres-transition.js";
import { statement, type Execute, type Statement } from "./postgres-statement.js";
import { storedGroupSql } from "../shared/ungrouped-group.js";

/** How often a lost race is run again before giving up (each loss means another writer changed the key meanwhile). */
const MAX_TRIES = 5;

export class PostgresUniqueInsert {
  /**
   * One insert: `$1` namespace, `$2`–`$11` the job's own columns (`JOB_INSERT_COLUMNS`: id, job type, payload,
   * stage (`enqueued` or `delayed`), retry policy, timeout, run_at, priority, meta (X10; null: none, and a
   * replace keeps the job's own), group (X9; a replace keeps the job's own)), `$12` now, `$13` unique key,
   * `$14` mode, `$15`/`$16` notify channel and payload. One row, as one of {@link insert}'s. The same steps as
   * {@link insert}, kept apart for the lone insert (the most common: an enqueue with no other at that moment):
   * measured on one connection, it runs in about 190 µs where {@link insert} with one insert takes about 235.
   */
  readonly insertOne: Statement;
  /**
   * `$1` namespace, `$2` the inserts (JSON `[{ ord, k: key, mode, ...the job's own columns (`JOB_INSERT_COLUMNS`)
   * }]`, keys distinct), `$3` now, `$4`/`$5` notify channel and payload. One row per insert, in `ord` order:
   * `inserted` (id), `replaced` (id), `held` (the key's job standing for it: the pending one first), with the
   * stages of each.
   */
  readonly insert: Statement;

  constructor(schema: string) {
    const jobs = `${schema}.later_jobs`;
    const limits = `${schema}.later_limits`;
    // Both statements' changes: `stage`, `mode` and `now` are SQL of the insert's stage, mode and time; `notify` its channel and payload.
    const changes = (stage: string, mode: string, now: string, notify: [string, string]) => {
      const inserted = transition({ kinds: "insert", rows: "ins", from: null, to: stage, at: now });
      // Only the rows whose stage changed move (and get an entry); a replace that keeps the stage is no transition.
      const replaced = transition({
        kinds: "replace",
        rows: "(SELECT * FROM upd WHERE stage <> was) u",
        from: "was",
        to: `CASE WHEN ${mode} = 'replace' THEN ${stage} ELSE j.stage END`,
        at: now,
      });
      // Every replaced row wakes, its stage changed or not: a new run time (or payload) of a waiting job moves the fetchers' next due time.
      return { inserted, replaced, tail: transitionTail(schema, "$1", [inserted, replaced], notify, "SELECT 1 FROM upd") };
    };
    const { inserted: inserted1, replaced: replaced1, tail: tail1 } = changes("$5", "$14", "$12::bigint", ["$15", "$16"]);
    this.insertOne = statement(`WITH held AS (
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
    ${replaced1.stage},
    ${replaced1.historyIfMoved}
  FROM target t WHERE j.id = t.id
  RETURNING j.id, j.stage, t.stage AS was, j.topic, j.partition_no
), ins AS (
  INSERT INTO ${jobs} (namespace, ${JOB_INSERT_COLUMN_LIST}, attempt, stages, created_at, updated_at, unique_key, unique_slot)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, ${storedGroupSql({ limits, namespace: "$1", jobType: "$3", group: "$11" })}, 0, ${inserted1.first}, $12, $12, $13, 'pending'
  WHERE NOT EXISTS (SELECT 1 FROM upd)
    AND NOT ($14 <> 'replace' AND EXISTS (SELECT 1 FROM held WHERE unique_slot = 'pending'))
    AND NOT ($14 = 'keep' AND EXISTS (SELECT 1 FROM held WHERE unique_slot = 'active'))
  ON CONFLICT DO NOTHING
  RETURNING id, stage, topic, partition_no
)${tail1}
SELECT (SELECT id FROM ins) AS inserted, (SELECT stage FROM ins) AS inserted_stage,
  (SELECT id FROM upd) AS replaced, (SELECT stage FROM upd) AS replaced_stage,
  (SELECT id FROM held ORDER BY unique_slot DESC LIMIT 1) AS held, (SELECT stage FROM held ORDER BY unique_slot DESC LIMIT 1) AS held_stage,
  (SELECT unique_slot FROM held ORDER BY unique_slot DESC LIMIT 1) AS held_slot,
  (SELECT count(*) FROM notified)::int AS notified`);
    const { inserted, replaced, tail } = changes("i.stage", "i.mode", "$3::bigint", ["$4", "$5"]);
    const heldAs = (slot: string) => `EXISTS (SELECT 1 FROM held WHERE held.ord = i.ord AND held.unique_slot = '${slot}')`;
    // Each insert's rows are read through LATERAL probes: one descent of the unique index (or the primary key) per insert.
    // Its outcome is read by joins (each insert has at most one row in `ins`, `upd` and the holders' first), not by a
    // subquery per insert: those scanned the CTE once per insert, 3 of 6.5 ms for 100 inserts.
    // The holders' probe says `LIMIT 2` (a key has at most two: pending and active) so that it stays a probe per insert:
    // without it the planner joined the inserts to every held key of the namespace (a hash join over a scan of them).
    this.insert = statement(`WITH i AS (
  SELECT * FROM json_to_recordset($2::json) AS i(ord int, k text, mode text, id text, job_type text, payload text, stage text,
    retry_policy text, timeout_ms int, run_at bigint, priority int, meta text, group_key text)
), held AS (
  SELECT i.ord, h.id, h.stage, h.unique_slot FROM i CROSS JOIN LATERAL (
    SELECT id, stage, unique_slot FROM ${jobs} WHERE namespace = $1 AND job_type = i.job_type AND unique_key = i.k AND unique_slot IS NOT NULL LIMIT 2
  ) h
), target AS (
  SELECT t.id, t.stage, i.ord FROM i CROSS JOIN LATERAL (
    SELECT j.id, j.stage FROM ${jobs} j
    WHERE j.id = (SELECT id FROM held WHERE held.ord = i.ord AND held.unique_slot = 'pending') AND j.unique_slot = 'pending'
    FOR UPDATE
  ) t
  WHERE i.mode = 'replace' OR (i.mode = 'afterActive' AND ${heldAs("active")})
), upd AS (
  UPDATE ${jobs} j SET payload = i.payload, updated_at = $3,
    run_at = CASE WHEN i.mode = 'replace' THEN i.run_at ELSE j.run_at END,
    meta = CASE WHEN i.meta IS NULL THEN j.meta ELSE i.meta END,
    ${replaced.stage},
    ${replaced.historyIfMoved}
  FROM target t JOIN i ON i.ord = t.ord WHERE j.id = t.id
  RETURNING j.id, j.stage, t.stage AS was, j.topic, j.partition_no, t.ord
), ins AS (
  INSERT INTO ${jobs} (namespace, ${JOB_INSERT_COLUMN_LIST}, attempt, stages, created_at, updated_at, unique_key, unique_slot)
  SELECT $1, i.id, i.job_type, i.payload, i.stage, i.retry_policy, i.timeout_ms, i.run_at, i.priority, i.meta, ${storedGroupSql({ limits, namespace: "$1", jobType: "i.job_type", group: "i.group_key" })}, 0, ${inserted.first}, $3, $3, i.k, 'pending'
  FROM i
  WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.ord = i.ord)
    AND NOT (i.mode <> 'replace' AND ${heldAs("pending")})
    AND NOT (i.mode = 'keep' AND ${heldAs("active")})
  ON CONFLICT DO NOTHING
  RETURNING id, stage, topic, partition_no
)${tail}
SELECT i.ord, ins.id AS inserted, ins.stage AS inserted_stage, upd.id AS replaced, upd.stage AS replaced_stage,
  h.id AS held, h.stage AS held_stage, h.unique_slot AS held_slot,
  (SELECT count(*) FROM notified)::int AS notified
FROM i LEFT JOIN ins ON ins.id = i.id LEFT JOIN upd ON upd.ord = i.ord
  LEFT JOIN (SELECT DISTINCT ON (ord) ord, id, stage, unique_slot FROM held ORDER BY ord, unique_slot DESC) h ON h.ord = i.ord
ORDER BY i.ord`);
  }

  /**
   * The inserts in order, each seeing the ones before it (`execute`: autocommit for one insert, the caller's
   * transaction for several): in rounds, each key's first insert in the first statement, its second in the
   * next, and so on, so that each statement's keys are distinct; an insert that lost a race (see the file
   * comment) goes in the next statement again, at most {@link MAX_TRIES} times. `notify`: channel and payload.
   */
  async runMany(
    execute: Execute,
    namespace: string,
    inserts: readonly B.JobInsertUniqueParams[],
    notify: readonly [string, string],
  ): Promise<B.JobInsertUniqueResult[]> {
    const results: (B.JobInsertUniqueResult | undefined)[] = new Array(inserts.length);
    const tries = new Array<number>(inserts.length).fill(0);
    const keys = inserts.map(uniqueKeyOf);
    for (;;) {
      // This round: the first insert not yet done of each key (one still running again after a lost race comes first).
      const round = nextUniqueRound(keys, (n) => results[n] !== undefined);
      if (round.length === 0) return results as B.JobInsertUniqueResult[];
      for (const n of round) {
        if (++tries[n]! <= MAX_TRIES) continue;
        const lost = `enqueue with uniqueKey "${inserts[n]!.uniqueKey}": the key changed hands ${MAX_TRIES} times during the write`;
        // In a batch, not a typed error: the publisher then writes each insert again alone, and only this one's caller fails.
        if (inserts.length > 1) throw new Error(`${lost}; each insert of the batch is written again alone`);
        throw new DatabaseUnavailableError(`${lost}; try again`, undefined, { transient: true });
      }
      if (round.length === 1) {
        const n = round[0]!;
        const p = inserts[n]!;
        const values = [namespace, ...jobInsertValues(p.job, dueStage(p.job, p.now)), p.now, p.uniqueKey, p.uniqueMode, ...notify];
        results[n] = outcomeOf(p, (await execute(this.insertOne, values))[0] ?? {});
        continue;
      }
      const items = round.map((n) => {
        const p = inserts[n]!;
        return { ord: n, k: p.uniqueKey, mode: p.uniqueMode, ...jobInsertRow(p.job, dueStage(p.job, p.now)) };
      });
      // One `now` per statement: the latest of its inserts' (a job due at its own `now` is never stored delayed).
      const now = Math.max(...round.map((n) => inserts[n]!.now));
      for (const row of await execute(this.insert, [namespace, JSON.stringify(items), now, ...notify])) {
        const n = Number(row.ord);
        results[n] = outcomeOf(inserts[n]!, row);
      }
    }
  }
}

/** What one insert's row of the statement says happened; undefined: it lost a race, and runs again. */
function outcomeOf(params: B.JobInsertUniqueParams, row: Record<string, unknown>): B.JobInsertUniqueResult | undefined {
  const { job } = params;
  if (row.inserted) return { id: job.id, outcome: "inserted", stage: row.inserted_stage as JobStage };
  if (row.replaced) return { id: String(row.replaced), outcome: "replaced", stage: row.replaced_stage as JobStage };
  // Written by an earlier try whose reply was lost: this enqueue's own job holds the key.
  if (row.held === job.id) return { id: job.id, outcome: "inserted", stage: row.held_stage as JobStage };
  // Found held, and the mode writes nothing: keep, or afterActive before the key's job started.
  if (row.held && (params.uniqueMode === "keep" || (params.uniqueMode === "afterActive" && row.held_slot === "pending"))) {
    return { id: String(row.held), outcome: "existing", stage: row.held_stage as JobStage };
  }
  // Nothing written and nothing (or not the right thing) seen: a concurrent writer's row, invisible to this snapshot, conflicted.
  return undefined;
}
