/**
 * The job statements of the SQLite backend (`backend.jobs`): insert, claim,
 * finish, release and lease renewal, hand-written because they are the hot
 * path, where compiling a query per call would cost more than running it,
 * and because they append to the stage history with SQLite's JSON functions.
 * Each write runs inside one `BEGIN IMMEDIATE` transaction
 * ({@link SqliteConnection.immediate}), either its own or, for `insertRows`,
 * `finishRows` and `failWaitingChildren`, the caller's: the partition and
 * recurring stores reuse them inside their transactions. Every statement
 * that changes a stage adds its moves to the stage counters in the same
 * transaction ({@link SqliteStageCounters}). The stuck-job and ready-count
 * reads are written once for both dialects (`shared/job-statements.ts`).
 */
import { parentFailedReason } from "../../core/continuation-stage.js";
import type { JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { mergeFinishResults, splitByRetention } from "../shared/finish-retention.js";
import { cancelledClaims, renewedClaims, type Row } from "../shared/job-rows.js";
import { PROGRESS_SET, READY_COUNT, STUCK_JOBS } from "../shared/job-statements.js";
import { type RunStatement, sqliteCompiler } from "../shared/shared-statement.js";
import { insertIntoCallerTransaction } from "./sqlite-caller-insert.js";
import { FAN_IN_SQL, releaseFanInChildren } from "./sqlite-fan-in.js";
import type { SqliteConnection, SqliteHost } from "./sqlite-connection.js";
import { SqliteStageCounters, StageDeltas } from "./sqlite-stage-counters.js";
import { insertUniqueRow, insertUniqueRows } from "./sqlite-unique-insert.js";
import { SqliteReadyClaim } from "./sqlite-ready-claim.js";
import { RowPlaces } from "./sqlite-row-places.js";
import { SqliteRowInsert } from "./sqlite-row-insert.js";
import { SQLITE_TRANSITIONS as T } from "./sqlite-transition.js";
import { withUngroupedKey } from "../shared/ungrouped-group.js";
import { adoptUngrouped, groupLimitedTypes, setLimits } from "./sqlite-limits.js";

// The hot statements, built once: the statement cache is keyed by the text, and a text rebuilt per
// call would be hashed again per call.

/** A batch of successes, each row matched on its claim (id, attempt). */
const SUCCEED_BATCH = `UPDATE later_jobs SET ${T.succeed.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, expires_at = ?,
             ${T.succeed.history}, unique_slot = NULL, result = ? ->> id
           WHERE +namespace = ? AND +stage = 'running' AND coalesce(lease_expires_at, 0) < ?
             AND id IN (SELECT json_extract(value, '$[0]') FROM json_each(?))
             AND (id, attempt) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
           RETURNING id, attempt, topic, partition_no, unique_key, waiters`;

/**
 * J11: the successes of a batch whose job types have `successMs: 0`, deleted instead of updated: the same
 * claim fence as the success UPDATE of {@link SqliteJobStore.finishRows}, and the same rows returned.
 */
const DISCARD_SUCCESSES = `DELETE FROM later_jobs
  WHERE +namespace = ? AND +stage = 'running' AND coalesce(lease_expires_at, 0) < ?
    AND id IN (SELECT json_extract(value, '$[0]') FROM json_each(?))
    AND (id, attempt) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
  RETURNING id, attempt, topic, partition_no, unique_key, waiters`;

export class SqliteJobStore implements B.JobStore<B.SqliteTransaction> {
  /** The stage counters, written by every statement here that changes a stage. */
  readonly counters: SqliteStageCounters;

  /** The claim of ready regular jobs, limited types' included. */
  private readonly ready: SqliteReadyClaim;

  /** The insert of new rows, inside a caller's transaction. */
  private readonly rows: SqliteRowInsert;

  constructor(private readonly host: SqliteHost) {
    this.counters = new SqliteStageCounters(host);
    this.ready = new SqliteReadyClaim(host, this.counters);
    this.rows = new SqliteRowInsert(host, this.counters);
  }

  /**
   * Into the caller's Kysely transaction (`enqueueIn`), or one `immediate`
   * transaction of the store's own. Never run again by the backend, so never
   * stored twice: better-sqlite3 runs the transaction in the call, which
   * returns only once it committed, or throws with nothing stored (a write
   * lock held past `busyTimeoutMs` is `DatabaseBusyError` before anything
   * is written; SQLite's own busy handler is the only retry, and it retries
   * taking the lock, not the write). There is no connection to lose between
   * a commit and its reply.
   */
  async insertMany(params: B.JobInsertManyParams<B.SqliteTransaction>): Promise<B.JobInsertManyResult> {
    if (params.transaction !== undefined) return insertIntoCallerTransaction(params.transaction, this.namespace, params);
    return this.conn().immediate(() => ({ stages: this.insertRows(params.jobs, params.now, params.retentionMs) }));
  }

  /** X2: the inserts in order (see `insertUniqueRow`, and `insertUniqueRows` for several) in one `immediate` transaction, the moves counted once. */
  async insertUniqueMany(params: B.JobInsertUniqueManyParams): Promise<B.JobInsertUniqueManyResult> {
    const c = this.conn();
    return c.immediate(() => {
      const deltas = new StageDeltas();
      // One insert finds its row's place in its statement; several read the places once (sqlite-row-places.ts).
      const places = RowPlaces.forRows(params.inserts.length, (st) => c.get(st.text, ...st.values));
      // X9: a job with no group of a group-limited type joins its ungrouped group (shared/ungrouped-group.ts).
      const limited = groupLimitedTypes(c, this.namespace);
      const inserts = limited.size === 0 ? params.inserts : params.inserts.map((i) => ({ ...i, job: withUngroupedKey([i.job], limited)[0]! }));
      const results =
        places === null ? [insertUniqueRow(c, this.namespace, inserts[0]!, deltas)] : insertUniqueRows(c, this.namespace, inserts, deltas, places);
      this.counters.write(deltas);
      return { results };
    });
  }

  async finishMany(params: B.JobFinishManyParams): Promise<B.JobFinishManyResult> {
    if (params.finishes.some((f) => f.retentionMs !== undefined)) return this.conn().immediate(() => this.finishByRetention(params));
    return this.conn().immediate(() => this.finishRows(params));
  }

  /**
   * J11: a batch with finishes of job types with a retention of their own, in one transaction, one
   * {@link finishRows} per retention class: the successes to delete (`successMs: 0`) first, by a DELETE in
   * place of the success UPDATE; the others with their retention, through the unchanged statements.
   */
  private finishByRetention(params: B.JobFinishManyParams): B.JobFinishManyResult {
    const { discard, kept } = splitByRetention(params);
    const results: B.JobFinishManyResult[] = [];
    if (discard.length > 0) results.push(this.finishRows({ ...params, finishes: discard }, true));
    for (const [retentionMs, finishes] of kept) results.push(this.finishRows({ ...params, finishes, retentionMs }));
    return mergeFinishResults(results);
  }

  async progressSet(params: B.JobProgressSetParams): Promise<boolean> {
    return PROGRESS_SET.run(sqliteCompiler, (s) => this.conn().write(s), { ...params, namespace: this.namespace });
  }

  async listStuck(params: B.JobListStuckParams): Promise<B.StuckJob[]> {
    return STUCK_JOBS.run(sqliteCompiler, this.read, { ...params, namespace: this.namespace });
  }

  async countReady(params: B.JobCountReadyParams): Promise<number> {
    if (params.jobTypes.length === 0) return 0;
    return READY_COUNT.run(sqliteCompiler, this.read, { ...params, namespace: this.namespace });
  }

  /** One `DELETE … RETURNING` (the stages it deleted, for the counters) in an `immediate` transaction. */
  async deleteExpired(params: B.JobDeleteExpiredParams): Promise<number> {
    const c = this.conn();
    return c.immediate(() => {
      const rows = c.all(
        `DELETE FROM later_jobs WHERE id IN (SELECT id FROM later_jobs WHERE namespace = ? AND expires_at IS NOT NULL AND expires_at < ? LIMIT ? + 0)
         RETURNING stage, topic, partition_no`,
        this.namespace,
        params.now,
        params.limit,
      );
      const deltas = new StageDeltas();
      T.expire.count(deltas, rows, (r) => r.stage, null);
      this.counters.write(deltas);
      return rows.length;
    });
  }

  private readonly read: RunStatement = (s) => this.conn().read(s);

  get namespace(): string {
    return this.host.namespace;
  }

  /** The backend's open connection; throws when closed. */
  conn(): SqliteConnection {
    return this.host.conn();
  }

  /**
   * Inserts jobs inside the caller's `immediate` transaction and returns
   * their stages (see {@link SqliteRowInsert.insertRows}; the partition and
   * recurring stores reuse it in their transactions).
   */
  insertRows(jobs: readonly B.JobInsert[], now: number, retentionMs?: number): JobStage[] {
    return this.rows.insertRows(jobs, now, retentionMs);
  }

  /** See `SqliteReadyClaim.claimReady`. */
  claimReady(params: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    return this.ready.claimReady(params);
  }

  /** X9: in one `immediate` transaction (`setLimits`). */
  async limitsSet(params: B.LimitsSetParams): Promise<B.LimitsSetResult> {
    return this.conn().immediate(() => setLimits(this.conn(), this.namespace, params));
  }

  /** X9: in one `immediate` transaction (`adoptUngrouped`). */
  async limitsUngroupedAdopt(): Promise<B.LimitsUngroupedAdoptResult> {
    return this.conn().immediate(() => adoptUngrouped(this.conn(), this.namespace));
  }

  /**
   * The body of {@link finishMany}, inside the caller's `immediate` transaction (partition heads reuse it).
   * `discard` (J11, `successMs: 0`): the successes' rows are deleted instead of updated, each counted as its
   * move into `success` and its removal, their ids handed to this connection's commit listeners (`waitFor`).
   */
  finishRows(params: B.JobFinishManyParams, discard = false): B.JobFinishManyResult {
    const ns = this.namespace;
    const guard = params.leaseExpiredBefore ?? Number.MAX_SAFE_INTEGER;
    const expires = params.now + params.retentionMs;
    const deltas = new StageDeltas();
    {
      const applied: B.ClaimKey[] = [];
      const succeeded: string[] = [];
      /** Succeeded parents of fan-in children (X5): on SQLite only a fan-in insert marks `waiters`. */
      const marked: string[] = [];
      const failed: { id: string; error: string }[] = [];
      let freed = 0;
      // Successes, the hot path: one statement for the whole batch, each row
      // matched on its claim (id, attempt) through the primary key (the unary
      // `+` keeps the planner off the running index, which it would scan).
      const successes = params.finishes.filter((f) => f.outcome.kind === "success");
      if (successes.length > 0) {
        const claimsJson = JSON.stringify(successes.map((f) => [f.id, f.attempt]));
        // X6: the results of the jobs that returned one, as an object of JSON texts by id (null, the usual
        // case, when none did: the column is then set null at the cost of one null test per row).
        let results: Record<string, string> | null = null;
        for (const f of successes) {
          const result = (f.outcome as { result?: string }).result;
          if (result !== undefined) (results ??= {})[f.id] = result;
        }
        // The success UPDATE's text is the one batches without per-type retention have always used.
        const rows = discard
          ? this.conn().all(DISCARD_SUCCESSES, ns, guard, claimsJson, claimsJson)
          : this.conn().all(
              SUCCEED_BATCH,
              params.now,
              expires,
              params.now,
              results === null ? null : JSON.stringify(results),
              ns,
              guard,
              claimsJson,
              claimsJson,
            );
        for (const r of rows) {
          applied.push({ id: String(r.id), attempt: Number(r.attempt) });
          succeeded.push(String(r.id));
          if (r.unique_key !== null) freed++;
          if (Number(r.waiters) > 0) marked.push(String(r.id));
        }
        T.succeed.count(deltas, rows, "running", "success");
        if (discard) {
          T.discard.count(deltas, rows, "success", null);
          this.conn().noteDiscarded(succeeded);
        }
      }
      for (const f of params.finishes) {
        const o = f.outcome;
        if (o.kind === "success") continue;
        const where = `WHERE id = ? AND namespace = ? AND stage = 'running' AND attempt = ? AND coalesce(lease_expires_at, 0) < ? RETURNING topic, partition_no, unique_key`;
        let row: Row | undefined;
        // A PermanentJobError's entry carries the note `permanent` (docs/semantics.md J3); others stay two elements.
        const t = o.kind === "retry" ? T.requeue : o.permanent ? T.failPermanent : T.fail;
        if (o.kind === "retry") {
          row = this.conn().get(
            `UPDATE later_jobs SET ${t.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, run_at = ?, last_error = ?,
               ${t.history} ${where}`,
            params.now,
            o.runAt,
            o.error,
            params.now,
            f.id,
            ns,
            f.attempt,
            guard,
          );
        } else {
          row = this.conn().get(
            `UPDATE later_jobs SET ${t.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, expires_at = ?, last_error = ?,
               ${t.history}, unique_slot = NULL ${where}`,
            params.now,
            expires,
            o.error,
            params.now,
            f.id,
            ns,
            f.attempt,
            guard,
          );
          if (row) failed.push({ id: f.id, error: o.error });
          if (row && row.unique_key !== null) freed++;
        }
        if (row) {
          applied.push({ id: f.id, attempt: f.attempt });
          t.count(deltas, [row], "running", o.kind === "retry" ? "requeued" : "failed");
        }
      }
      let released = 0;
      if (succeeded.length > 0) {
        // A continuation with a delay still to run goes to `delayed` (its run_at kept), else to `enqueued` now.
        const rows = this.conn().all(
          `UPDATE later_jobs SET ${T.releaseChild.stage}, run_at = max(run_at, ?), updated_at = ?,
             ${T.releaseChild.history}
           WHERE parent_id IN (SELECT value FROM json_each(?)) AND namespace = ? AND stage = 'waiting' RETURNING stage`,
          params.now,
          params.now,
          params.now,
          params.now,
          params.now,
          JSON.stringify(succeeded),
          ns,
        );
        released = rows.length;
        const delayed = rows.filter((r) => r.stage === "delayed").length;
        // all unfinished: no partition depth changes
        T.releaseChild.countMany(deltas, "waiting", "enqueued", released - delayed);
        T.releaseChild.countMany(deltas, "waiting", "delayed", delayed);
      }
      if (marked.length > 0) released += releaseFanInChildren(this.conn(), ns, marked, params.now, deltas);
      this.counters.write(deltas);
      this.failWaitingChildren(failed, params.now, expires);
      return freed > 0 ? { applied, released, freed } : { applied, released };
    }
  }

  /** One indexed read (`markAwaited` does not apply: waiters wake on every commit). */
  async readOutcomes(params: B.JobReadOutcomesParams): Promise<B.JobOutcomeRow[]> {
    if (params.ids.length === 0) return [];
    const rows = this.conn().all(
      "SELECT id, stage, result, last_error FROM later_jobs WHERE id IN (SELECT value FROM json_each(?)) AND namespace = ?",
      JSON.stringify(params.ids),
      this.namespace,
    );
    return rows.map((r) => ({
      id: String(r.id),
      stage: r.stage as JobStage,
      result: (r.result as string | null) ?? null,
      error: (r.last_error as string | null) ?? null,
    }));
  }

  /**
   * A final failure fails the waiting continuations, down the whole chain
   * (inside the caller's transaction): single-parent children by
   * `parent_id`, fan-in children (X5) through `later_job_parents`
   * (`FAN_IN_SQL.failChildren`). Hook for cancel (X3): a cancelled parent
   * must cancel its waiting fan-in children the same way.
   */
  failWaitingChildren(failed: { id: string; error: string }[], now: number, expires: number): void {
    const deltas = new StageDeltas();
    while (failed.length > 0) {
      const parent = failed.pop()!;
      const reason = parentFailedReason(parent.id, parent.error);
      const children = this.conn().all(
        `UPDATE later_jobs SET ${T.failChild.stage}, updated_at = ?, expires_at = ?, last_error = ?, ${T.failChild.history},
           unique_slot = NULL
         WHERE parent_id = ? AND namespace = ? AND stage = 'waiting' RETURNING id, topic, partition_no`,
        now,
        expires,
        reason,
        now,
        parent.id,
        this.namespace,
      );
      for (const c of children) failed.push({ id: String(c.id), error: reason });
      T.failChild.count(deltas, children, "waiting", "failed");
      // Fan-in children of this parent (X5): the first parent to fail for good gives the reason.
      const fanIn = this.conn().all(FAN_IN_SQL.failChildren, now, expires, reason, now, this.namespace, this.namespace, parent.id);
      for (const c of fanIn) failed.push({ id: String(c.id), error: reason });
      T.failChild.count(deltas, fanIn, "waiting", "failed");
    }
    this.counters.write(deltas);
  }

  /** Puts claims back to their earlier stage (attempt undone), in one `immediate` transaction. */
  async releaseMany(params: B.JobReleaseManyParams): Promise<B.JobReleaseManyResult> {
    return this.conn().immediate(() => ({ released: this.releaseRows(params.claims, params.now, params.reason) }));
  }

  /**
   * {@link releaseMany} inside the caller's `immediate` transaction (the
   * partition store's `headRelease` too); returns the claims put back.
   * `reason` `"shutdown"`: each entry carries that note (docs/semantics.md J9).
   */
  releaseRows(claims: readonly B.ClaimKey[], now: number, reason?: "shutdown"): B.ClaimKey[] {
    const released: B.ClaimKey[] = [];
    const deltas = new StageDeltas();
    const t = reason === "shutdown" ? T.releaseShutdown : T.release;
    for (const c of claims) {
      const row = this.conn().get(
        `UPDATE later_jobs SET ${t.stage}, attempt = attempt - 1,
           lease_owner = NULL, lease_expires_at = NULL, updated_at = ?,
           ${t.history}
         WHERE id = ? AND namespace = ? AND stage = 'running' AND attempt = ? RETURNING stage, topic, partition_no`,
        now,
        now,
        c.id,
        this.namespace,
        c.attempt,
      );
      if (!row) continue;
      t.count(deltas, [row], "running");
      released.push(c);
    }
    this.counters.write(deltas);
    return released;
  }

  /** Extends the leases this owner still holds; reports which. */
  async leaseRenew(params: B.LeaseRenewParams): Promise<B.LeaseRenewResult> {
    if (params.claims.length === 0) return { renewed: [] };
    const held = new Map(params.claims.map((c) => [c.id, c.attempt]));
    const c = this.conn();
    return c.immediate(() => {
      const rows = c.all(
        `UPDATE later_jobs SET lease_expires_at = ? WHERE namespace = ? AND stage = 'running' AND lease_owner = ?
           AND id IN (SELECT value FROM json_each(?)) RETURNING id, attempt`,
        params.leaseExpiresAt,
        this.namespace,
        params.owner,
        JSON.stringify([...held.keys()]),
      );
      const renewed = renewedClaims(held, rows);
      if (renewed.length === held.size) return { renewed };
      return { renewed, cancelled: this.cancelledClaims(params.claims.filter((k) => !renewed.some((r) => r.id === k.id))) };
    });
  }

  /**
   * Which of these claims' jobs are now `cancelled` at the same attempt (X3):
   * a renewal's lost claims, told apart from leases taken over. A read, only
   * after a renewal lost something (the partition store's too).
   */
  cancelledClaims(claims: readonly B.ClaimKey[]): B.CancelledClaim[] {
    if (claims.length === 0) return [];
    const held = new Map(claims.map((k) => [k.id, k.attempt]));
    const rows = this.conn().all(
      "SELECT id, attempt, json_extract(stages, '$[#-1][2]') AS note FROM later_jobs WHERE namespace = ? AND stage = 'cancelled' AND id IN (SELECT value FROM json_each(?))",
      this.namespace,
      JSON.stringify([...held.keys()]),
    );
    return cancelledClaims(held, rows);
  }
}
