/**
 * The hot statements of the PostgreSQL backend, as fixed SQL text: each is
 * one round trip, run as a named prepared statement (parsed and planned once
 * per connection), because building and compiling a Kysely query per call
 * costs more than these statements take to run. Everything else goes
 * through Kysely in `postgres-backend.ts`.
 *
 * Conventions: times are bigint ms; the stage history is JSON text appended
 * to by string concatenation (`left(stages, -1) || ',["stage",ms]]'`),
 * cheaper than parsing it as jsonb on every write. Wake-ups are sent with
 * `pg_notify` from inside the statement that made work ready, at most once
 * per statement (`LIMIT 1`); PostgreSQL also folds identical notifications
 * of one transaction into one and delivers them only on commit, so a
 * rolled-back enqueue wakes nobody.
 */
import { awaitedNotify, type PgTransition, transition, transitionTail } from "./postgres-transition.js";
import { statement, type Statement } from "./postgres-statement.js";
import { PostgresUniqueInsert } from "./postgres-unique-insert.js";
import { PostgresClaimQueries } from "./postgres-claim-queries.js";
import { storedGroupSql } from "../shared/ungrouped-group.js";

/**
 * `stage = 'running'` written so the planner cannot use the partial index of
 * running rows for it (the `|| ''` hides the column, as `+x` does in
 * SQLite): statements that name their rows by id must find them through the
 * primary key. Every finished job leaves a dead entry in that partial index
 * until vacuum, so a scan of it costs as much as the jobs run since, and the
 * planner, which believes it holds a handful of rows, would pick it.
 */
const RUNNING_BY_KEY = "j.stage || '' = 'running'";

/**
 * `column = ANY(...)` over the ids of an array parameter (`$n`), found
 * through the column's index (the primary key, the continuations' parent)
 * whatever the table's statistics say. Written with
 * `$n::text[]` itself, the planner sees the ids of each of a connection's
 * first five executions (custom plans) and, on a table that grew since it
 * was last analyzed (a freshly filled queue; autoanalyze runs up to a minute
 * later), estimated 500 ids as most of the table and scanned every row: a
 * finish of 250 jobs among 20,000 took 23-58 ms that way against 8-12
 * through the key. Behind `ARRAY(SELECT unnest(...))` the ids are a
 * subquery's result, unknown when planning, as the claim's are.
 */
export const idIn = (column: string, param: string) => `${column} = ANY(ARRAY(SELECT unnest(${param}::text[])))`;

/**
 * The release of the waiting continuations `k` (CTE `rows`, returning
 * `stage`, `topic`, `partition_no`) of a succeeded parent at time `now` (a
 * parameter): `delayed` while its own time (a delay given at enqueue) is
 * still to come, its `run_at` kept; else `enqueued`, runnable now.
 */
export const releaseChild = (rows: string, now: string) =>
  transition({
    kinds: "releaseChild",
    rows,
    alias: "k",
    from: "'waiting'",
    to: `CASE WHEN k.run_at > ${now}::bigint THEN 'delayed' ELSE 'enqueued' END`,
    at: `${now}::bigint`,
  });

/** The SET list of {@link releaseChild} `t` at time `now`. Every SET expression reads the row as it was. */
export const releasedTo = (t: PgTransition, now: string) => `${t.stage}, run_at = greatest(k.run_at, ${now}::bigint), updated_at = ${now}, ${t.history}`;

/** A claim put back (`release`): `enqueued` after a first attempt, else `requeued`; the attempt is undone by the caller's SET list. */
export const putBack = (rows: string, at: string, note: string) =>
  transition({ kinds: "release", rows, from: "'running'", to: "CASE WHEN j.attempt <= 1 THEN 'enqueued' ELSE 'requeued' END", at, note });

export class PostgresJobQueries {
  /** The claim's statements (`postgres-claim-queries.ts`). */
  readonly claims: PostgresClaimQueries;
  /**
   * Bulk insert of jobs whose stages are already decided: `$1` a JSON array
   * of rows (one parameter, however many jobs; `expires_at` set only on a
   * row stored terminal, J11), `$2` namespace, `$3` now,
   * `$4`/`$5` notify channel and payload. Notifies when a row is claimable
   * now or later (delayed rows move other servers' next due time).
   *
   * A row whose id is already stored is skipped (`ON CONFLICT (id) DO
   * NOTHING`), neither counted nor notified: ids are made before the insert,
   * so a stored id means this very insert committed once already (run again
   * after its connection was lost between its commit and the reply), and
   * running it again must change nothing. Only rows inserted now are in
   * `ins`, so the stage counters count each job once.
   */
  readonly insert: Statement;
  /**
   * The jobs `$1` (ids) of namespace `$2` already stored, each with the stage
   * it was inserted in (the first entry of its history): how an enqueue run
   * again after a lost connection finds that its first try committed.
   */
  readonly storedInserts: Statement;
  /** Locks partition `$3` of topic `$2` (namespace `$1`) until commit, taking no sequence. */
  readonly lockPartition: Statement;
  /** Locks the job rows `$1` of namespace `$2` in id order until commit, changing nothing. */
  readonly lockJobs: Statement;
  /**
   * Stores a batch of outcomes in one statement, each row fenced by its
   * claim `(id, attempt)` while still running; successes release their
   * waiting continuations in the same statement; one notify when anything
   * became ready (released continuations, retries).
   *
   * The rows are found by `id = ANY($1)` alone and each row's outcome is
   * looked up in a jsonb object keyed by id, so the plan is linear in the
   * batch whatever the table statistics say. (A join with `unnest(...)` let
   * the planner, on a young table, scan the running rows and re-run the
   * unnest once per row: quadratic, minutes for a few thousand outcomes.)
   * X2: a job leaving for good frees its key's slot (`unique_slot = NULL`,
   * an expression of the same UPDATE: no extra write), and a job that held
   * a key notifies, since the job kept to run after it is ready now.
   * `$1` ids, `$2` jsonb `{ id: [attempt, stage, run_at, error, note, result?] }` (note: the
   * history entry's, only for a permanent failure, else null; result: a success's JSON text, X6), `$3` now,
   * `$4` expires_at, `$5` namespace, `$6` lease-expired-before guard, `$7`/`$8` channel and payload,
   * `$9` the done channel, notified when a row made terminal is awaited (see `awaitedNotify` in postgres-transition.ts).
   */
  readonly finish: Statement;
  /**
   * {@link finish} for a batch of successes only, the common case, with a
   * smaller outcome map (`$2` jsonb `{ id: attempt }`) and one result row
   * instead of one per job: `applied` (how many claims were written), `ids`
   * (comma-separated applied ids, only when some were not), `marked`
   * (succeeded parents that had continuations inserted, for
   * {@link releaseChildren}) and `released`. The continuation lookup only
   * probes parents whose `waiters` says a child was ever inserted.
   * `$1` ids, `$2` attempts by id, `$3` now, `$4` expires_at, `$5` namespace, `$6`/`$7` channel and payload, `$8` batch size,
   * `$9` jsonb `{ id: result JSON text }` of the jobs that returned a result (X6; null, the usual case, when none did: the
   * `result` column is then set to null at the cost of one null test per row), `$10` the done channel, `$11` whether to
   * wake the other servers whenever a row was written (X9: the batch freed a slot of a limited type), in this statement
   * rather than in a `pg_notify` round trip of its own.
   */
  readonly finishSuccess: Statement;
  /**
   * {@link finishSuccess} for successes of job types with `successMs: 0` (J11): the same claim fence, but the
   * rows are DELETEd, in the statement that records the success. The counters count each row's move into
   * `success` (its `entered` too: throughput sees it) and its removal (`discard`), so they still equal the
   * stored rows; continuations are released as by {@link finishSuccess} (the returned `marked` for the
   * rest); a deleted row frees its unique key. The done notification (`woken`) names the awaited deleted ids
   * in its payload (up to 250; past that, an empty payload), since a waiter's re-read finds no row.
   * `$1` ids, `$2` attempts by id, `$3` now, `$4` namespace, `$5`/`$6` channel and payload, `$7` batch size,
   * `$8` the done channel. Same result row as {@link finishSuccess}.
   */
  readonly finishDiscard: Statement;
  /**
   * Fails the waiting children of failed parents, single-parent ones and
   * fan-in ones (X5; one reason per fan-in child: its first failed parent's
   * in id order, as PostgreSQL updates a row once per statement), returning
   * `id, last_error` of each: `$1` parent ids, `$2` reasons, `$3` now,
   * `$4` expires_at, `$5` namespace, `$6` done channel.
   */
  readonly failChildren: Statement;
  /**
   * The edges of fan-in continuations (X5): `$1` a JSON array of
   * `{ child_id, parent_id, succeeded }`, `$2` namespace. An edge already
   * stored is skipped (an insert run again after a lost connection).
   */
  readonly insertParents: Statement;
  /**
   * Puts claims back (attempt undone), returning `id, claim_attempt` of each put back: `$1` ids, `$2` attempts, `$3` now,
   * `$4` namespace, `$5`/`$6` channel and payload, `$7` the history entry's note (null: none).
   */
  readonly release: Statement;
  /** `$1` lease expiry, `$2` namespace, `$3` owner, `$4` ids. */
  readonly renew: Statement;
  /**
   * Parents of continuations, locked in id order and marked (`waiters + 1`)
   * until this transaction commits: `$1` ids, `$2` namespace. A finish of
   * the parent waits for the lock, and since an UPDATE that waited returns
   * the row's newest version, its `waiters` tells it that a child it may not
   * see (committed after its snapshot) exists: it then releases children
   * again in a statement of its own ({@link releaseChildren}).
   */
  readonly readParents: Statement;
  /**
   * Releases the waiting children of succeeded parents: `$1` parent ids,
   * `$2` namespace, `$3` now, `$4`/`$5` channel and payload. Single-parent
   * children are released at once. For fan-in children (X5) each edge from a
   * parent of `$1` counts once (`succeeded` set, so a release asked again
   * counts nothing), the counts are summed per child (two parents of one
   * child in one batch: PostgreSQL updates a row once per statement), the
   * children are locked in id order (a lock that waited reads the newest
   * `parents_left`, so two parents finishing in two transactions each see
   * the other's count), and a child reaching 0 is released as a
   * single-parent child is, the others only counted down.
   * Runs only for parents whose `waiters` says a child was inserted: never
   * on the common finish path.
   */
  readonly releaseChildren: Statement;
  /**
   * The finishes of a batch that its own statement already wrote, when that
   * statement came back short: `$1` ids (those it did not report), `$2`
   * namespace, `$3` the batch's `now`, `$4` jsonb `{ id: [attempt, stage] }`
   * (the stage the outcome enters). A row in that stage at that attempt whose
   * `updated_at` is the batch's `now` was written by this batch: the runner
   * runs an autocommit statement again when its connection was lost, which
   * after a commit whose reply was lost finds nothing left to write (see
   * `PostgresJobStore.writtenBefore`). Returns `id, waiters, unique_key`.
   */
  readonly writtenFinishes: Statement;
  /**
   * Deletes up to `$3` rows of namespace `$1` expired before `$2`, skipping
   * rows another sweeper has locked. Fixed SQL rather than Kysely because it
   * counts its moves in the same statement (postgres-stage-counters.ts).
   */
  readonly deleteExpired: Statement;
  /** Reserves `$4` sequence numbers of one partition, returning the first: `$1` namespace, `$2` topic, `$3` partition. Locks the partition row until commit. */
  readonly reserveSeq: Statement;
  /** X2: the insert of one job with a unique key (one of `JobStore.insertUniqueMany`'s). */
  readonly unique: PostgresUniqueInsert;
  /**
   * `waitFor`'s first read (X6): marks the rows `$1` of namespace `$2` awaited
   * and returns `id, stage, result, last_error` of each. Every row is written,
   * awaited already or not: skipping those would let two waiters racing on one
   * row each miss it (the second's UPDATE skips the row the first just marked,
   * and its snapshot predates the mark). An UPDATE that waited for a
   * finishing row's lock returns the row finished.
   */
  readonly markAwaited: Statement;
  /** The waiters' re-read: `id, stage, result, last_error` of the rows `$1` of namespace `$2`. */
  readonly readOutcomes: Statement;

  constructor(schema: string) {
    this.claims = new PostgresClaimQueries(schema);
    const jobs = `${schema}.later_jobs`;
    /** The counter and wake-up CTEs of a statement's transitions in namespace `ns` (see postgres-transition.ts). */
    const tail = (ns: string, transitions: PgTransition[], notify?: [string, string], alsoWake?: string) =>
      transitionTail(schema, ns, transitions, notify, alsoWake);
    const inserted = transition({ kinds: "insert", rows: "ins", from: null, to: "r.stage", at: "$3::bigint" });
    this.insert = statement(`WITH ins AS (
  INSERT INTO ${jobs} (id, namespace, job_type, payload, stage, attempt, retry_policy, timeout_ms, run_at, parent_id, last_error, stages, created_at, updated_at, expires_at, topic, partition_no, seq, meta, priority, parents_left, group_key)
  SELECT r.id, $2, r.job_type, r.payload, r.stage, 0, r.retry_policy, r.timeout_ms, r.run_at, r.parent_id, r.last_error,
         ${inserted.first}, $3, $3, r.expires_at, r.topic, r.partition_no, r.seq, r.meta, coalesce(r.priority, 0), r.parents_left,
         ${storedGroupSql({ limits: `${schema}.later_limits`, namespace: "$2", jobType: "r.job_type", group: "r.group_key", topic: "r.topic" })}
  FROM json_to_recordset($1::json) AS r(id text, job_type text, payload text, stage text, retry_policy text, timeout_ms bigint, run_at bigint, parent_id text,
    last_error text, expires_at bigint, topic text, partition_no integer, seq bigint, meta text, priority smallint, parents_left integer, group_key text)
  ON CONFLICT (id) DO NOTHING
  RETURNING stage, topic, partition_no
)${tail("$2", [inserted], ["$4", "$5"])}
SELECT count(*)::int AS inserted, (SELECT count(*) FROM notified)::int AS notified FROM ins`);
    // `$2 -> j.id` is the row's outcome [attempt, stage, run_at, error, note?]: a binary search in the jsonb object.
    const out = (i: number) => `($2::jsonb -> j.id ->> ${i})`;
    const done = transition({ kinds: ["succeed", "requeue", "fail", "rescue"], rows: "done", from: "'running'", to: out(1), at: "$3::bigint", note: out(4) });
    const released = releaseChild("released", "$3");
    this.finish = statement(`WITH done AS (
  UPDATE ${jobs} j SET ${done.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = $3,
    run_at = CASE WHEN ${out(1)} = 'requeued' THEN ${out(2)}::bigint ELSE j.run_at END,
    expires_at = CASE WHEN ${out(1)} = 'requeued' THEN NULL ELSE $4::bigint END,
    last_error = CASE WHEN ${out(1)} = 'success' THEN j.last_error ELSE ${out(3)} END,
    ${done.history},
    unique_slot = CASE WHEN ${out(1)} = 'requeued' THEN j.unique_slot END,
    result = CASE WHEN ${out(1)} = 'success' THEN ${out(5)} ELSE j.result END
  WHERE ${idIn("j.id", "$1")} AND j.attempt = ${out(0)}::int AND j.namespace = $5 AND ${RUNNING_BY_KEY}
    AND coalesce(j.lease_expires_at, 0) < $6
  RETURNING j.id, j.attempt, j.stage, j.last_error, j.waiters, j.topic, j.partition_no, j.unique_key, j.awaited
), released AS (
  UPDATE ${jobs} k SET ${releasedTo(released, "$3")}
  WHERE k.stage = 'waiting' AND k.namespace = $5 AND k.parent_id IN (SELECT id FROM done WHERE stage = 'success')
  RETURNING k.id, k.stage, k.topic, k.partition_no
)${tail("$5", [done, released], ["$7", "$8"], "SELECT 1 FROM done WHERE unique_key IS NOT NULL")}${awaitedNotify("done", "$9", "stage <> 'requeued'")}
SELECT d.id, d.attempt, d.stage, d.last_error, d.waiters, d.unique_key,
  (SELECT count(*) FROM released)::int AS released, (SELECT count(*) FROM notified)::int AS notified, (SELECT count(*) FROM woken)::int AS woken
FROM done d`);
    const succeeded = transition({ kinds: "succeed", rows: "done", from: "'running'", to: "'success'", at: "$3::bigint" });
    this.finishSuccess = statement(`WITH done AS (
  UPDATE ${jobs} j SET ${succeeded.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = $3, expires_at = $4,
    ${succeeded.history}, unique_slot = NULL, result = $9::jsonb ->> j.id
  WHERE ${idIn("j.id", "$1")} AND j.attempt = ($2::jsonb ->> j.id)::int AND j.namespace = $5 AND ${RUNNING_BY_KEY}
  RETURNING j.id, j.waiters, j.topic, j.partition_no, j.unique_key, j.awaited
), released AS (
  UPDATE ${jobs} k SET ${releasedTo(released, "$3")}
  WHERE k.stage = 'waiting' AND k.namespace = $5 AND k.parent_id IN (SELECT id FROM done WHERE waiters > 0)
  RETURNING k.stage, k.topic, k.partition_no
)${tail("$5", [succeeded, released], ["$6", "$7"], "SELECT 1 FROM done WHERE unique_key IS NOT NULL OR $11::boolean")}${awaitedNotify("done", "$10")}
SELECT count(*)::int AS applied, CASE WHEN count(*) < $8 THEN string_agg(id, ',') END AS ids,
  string_agg(id, ',') FILTER (WHERE waiters > 0) AS marked, count(*) FILTER (WHERE unique_key IS NOT NULL)::int AS freed,
  (SELECT count(*) FROM released)::int AS released, (SELECT count(*) FROM notified)::int AS notified, (SELECT count(*) FROM woken)::int AS woken
FROM done`);
    const discardedIn = transition({ kinds: "succeed", rows: "gone", from: "'running'", to: "'success'", at: "$3::bigint" });
    const discarded = transition({ kinds: "discard", rows: "gone", from: "'success'", to: null });
    this.finishDiscard = statement(`WITH gone AS (
  DELETE FROM ${jobs} j
  WHERE ${idIn("j.id", "$1")} AND j.attempt = ($2::jsonb ->> j.id)::int AND j.namespace = $4 AND ${RUNNING_BY_KEY}
  RETURNING j.id, j.waiters, j.topic, j.partition_no, j.unique_key, j.awaited
), released AS (
  UPDATE ${jobs} k SET ${releasedTo(released, "$3")}
  WHERE k.stage = 'waiting' AND k.namespace = $4 AND k.parent_id IN (SELECT id FROM gone WHERE waiters > 0)
  RETURNING k.stage, k.topic, k.partition_no
)${tail("$4", [discardedIn, discarded, released], ["$5", "$6"], "SELECT 1 FROM gone WHERE unique_key IS NOT NULL")}, woken AS (
  SELECT pg_notify($8, CASE WHEN count(*) <= 250 THEN string_agg(id, ',') ELSE '' END) FROM gone WHERE awaited HAVING count(*) > 0
)
SELECT count(*)::int AS applied, CASE WHEN count(*) < $7 THEN string_agg(id, ',') END AS ids,
  string_agg(id, ',') FILTER (WHERE waiters > 0) AS marked, count(*) FILTER (WHERE unique_key IS NOT NULL)::int AS freed,
  (SELECT count(*) FROM released)::int AS released, (SELECT count(*) FROM notified)::int AS notified, (SELECT count(*) FROM woken)::int AS woken
FROM gone`);
    const failedChild = transition({ kinds: "failChild", rows: "failed", alias: "k", from: "'waiting'", to: "'failed'", at: "$3::bigint" });
    const failedFanIn = transition({ kinds: "failChild", rows: "fan_failed", alias: "k", from: "'waiting'", to: "'failed'", at: "$3::bigint" });
    this.failChildren = statement(`WITH failed AS (
  UPDATE ${jobs} k SET ${failedChild.stage}, updated_at = $3, expires_at = $4, last_error = f.reason,
    ${failedChild.history}, unique_slot = NULL
  FROM unnest($1::text[], $2::text[]) AS f(parent_id, reason)
  WHERE k.parent_id = f.parent_id AND k.namespace = $5 AND k.stage = 'waiting'
  RETURNING k.id, k.last_error, k.topic, k.partition_no, k.awaited
), fan_failed AS (
  UPDATE ${jobs} k SET ${failedFanIn.stage}, updated_at = $3, expires_at = $4, last_error = x.reason,
    ${failedFanIn.history}
  FROM (SELECT DISTINCT ON (e.child_id) e.child_id, f.reason FROM ${schema}.later_job_parents e
        JOIN unnest($1::text[], $2::text[]) AS f(parent_id, reason) ON e.parent_id = f.parent_id
        WHERE e.namespace = $5 ORDER BY e.child_id, e.parent_id) x
  WHERE k.id = x.child_id AND k.namespace = $5 AND k.stage = 'waiting'
  RETURNING k.id, k.last_error, k.topic, k.partition_no, k.awaited
)${tail("$5", [failedChild, failedFanIn])}${awaitedNotify("(SELECT awaited FROM failed UNION ALL SELECT awaited FROM fan_failed) f", "$6")}
SELECT id, last_error, (SELECT count(*) FROM woken)::int AS woken FROM failed
UNION ALL SELECT id, last_error, (SELECT count(*) FROM woken)::int FROM fan_failed`);
    this.insertParents = statement(`INSERT INTO ${schema}.later_job_parents (namespace, child_id, parent_id, succeeded)
SELECT $2, r.child_id, r.parent_id, r.succeeded FROM json_to_recordset($1::json) AS r(child_id text, parent_id text, succeeded boolean)
ON CONFLICT DO NOTHING`);
    const back = putBack("rel", "$3::bigint", "$7::text");
    this.release = statement(`WITH rel AS (
  UPDATE ${jobs} j SET ${back.stage}, attempt = j.attempt - 1, lease_owner = NULL, lease_expires_at = NULL, updated_at = $3,
    ${back.history}
  FROM unnest($1::text[], $2::int[]) AS c(id, attempt)
  WHERE j.id = c.id AND j.attempt = c.attempt AND j.namespace = $4 AND j.stage = 'running'
  RETURNING j.id, j.attempt + 1 AS claim_attempt, j.stage, j.topic, j.partition_no
)${tail("$4", [back], ["$5", "$6"])}
SELECT id, claim_attempt, (SELECT count(*) FROM notified)::int AS notified FROM rel`);
    this.renew = statement(`UPDATE ${jobs} SET lease_expires_at = $1
WHERE namespace = $2 AND ${RUNNING_BY_KEY.replace("j.", "")} AND lease_owner = $3 AND ${idIn("id", "$4")}
RETURNING id, attempt`);
    const expired = transition({ kinds: "expire", rows: "gone", from: "stage", to: null });
    this.deleteExpired = statement(`WITH gone AS (
  DELETE FROM ${jobs} WHERE id IN (
    SELECT id FROM ${jobs} WHERE namespace = $1 AND expires_at IS NOT NULL AND expires_at < $2 LIMIT $3 FOR UPDATE SKIP LOCKED)
  RETURNING stage, topic, partition_no
)${tail("$1", [expired])}
SELECT count(*)::int AS deleted FROM gone`);
    this.reserveSeq = statement(`UPDATE ${schema}.later_partitions SET next_seq = next_seq + $4::bigint
WHERE namespace = $1 AND topic = $2 AND partition_no = $3 RETURNING next_seq - $4::bigint AS first`);
    this.markAwaited = statement(`UPDATE ${jobs} SET awaited = true WHERE ${idIn("id", "$1")} AND namespace = $2
RETURNING id, stage, result, last_error`);
    this.readOutcomes = statement(`SELECT id, stage, result, last_error FROM ${jobs} WHERE ${idIn("id", "$1")} AND namespace = $2`);
    this.storedInserts = statement(`SELECT id, (stages::jsonb) -> 0 ->> 0 AS stage FROM ${jobs} WHERE ${idIn("id", "$1")} AND namespace = $2`);
    this.lockPartition = statement(`SELECT 1 FROM ${schema}.later_partitions WHERE namespace = $1 AND topic = $2 AND partition_no = $3 FOR UPDATE`);
    this.lockJobs = statement(`SELECT 1 FROM ${jobs} WHERE ${idIn("id", "$1")} AND namespace = $2 ORDER BY id FOR UPDATE`);
    this.readParents = statement(`UPDATE ${jobs} j SET waiters = j.waiters + 1
WHERE j.id IN (SELECT id FROM ${jobs} WHERE ${idIn("id", "$1")} AND namespace = $2 ORDER BY id FOR UPDATE)
RETURNING j.id, j.stage, j.last_error`);
    const releasedChildren = releaseChild("rel", "$3");
    const releasedFanIn = releaseChild("fan_rel", "$3");
    this.writtenFinishes = statement(`SELECT j.id, j.waiters, j.unique_key FROM ${jobs} j
  WHERE ${idIn("j.id", "$1")} AND j.namespace = $2 AND j.updated_at = $3
    AND j.attempt = ($4::jsonb -> j.id ->> 0)::int AND j.stage = ($4::jsonb -> j.id ->> 1)`);
    this.releaseChildren = statement(`WITH rel AS (
  UPDATE ${jobs} k SET ${releasedTo(releasedChildren, "$3")}
  WHERE ${idIn("k.parent_id", "$1")} AND k.namespace = $2 AND k.stage = 'waiting'
  RETURNING k.stage, k.topic, k.partition_no
), edges AS (
  UPDATE ${schema}.later_job_parents e SET succeeded = true
  WHERE e.namespace = $2 AND ${idIn("e.parent_id", "$1")} AND NOT e.succeeded
  RETURNING e.child_id
), fan AS (
  SELECT k.id, k.parents_left - c.n AS left_now FROM ${jobs} k
  JOIN (SELECT child_id, count(*)::int AS n FROM edges GROUP BY child_id) c ON c.child_id = k.id
  WHERE k.namespace = $2 AND k.stage = 'waiting'
  ORDER BY k.id FOR UPDATE OF k
), fan_left AS (
  UPDATE ${jobs} k SET parents_left = f.left_now FROM fan f WHERE k.id = f.id AND f.left_now > 0
  RETURNING k.id
), fan_rel AS (
  UPDATE ${jobs} k SET ${releasedTo(releasedFanIn, "$3")}, parents_left = 0 FROM fan f WHERE k.id = f.id AND f.left_now <= 0
  RETURNING k.stage, k.topic, k.partition_no
)${tail("$2", [releasedChildren, releasedFanIn], ["$4", "$5"])}
SELECT count(*)::int + (SELECT count(*) FROM fan_rel)::int AS released, (SELECT count(*) FROM fan_left)::int AS counted,
  (SELECT count(*) FROM notified)::int AS notified FROM rel`);
    this.unique = new PostgresUniqueInsert(schema);
  }
}
