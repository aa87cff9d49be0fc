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
 * reads are written once for both dialects (`shared/job-statements.ts`);
 * the finish is sqlite-finish-rows.ts, the claim sqlite-ready-claim.ts, the
 * insert sqlite-row-insert.ts.
 */
import type { JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { mergeFinishResults, splitByRetention } from "../shared/finish-retention.js";
import { cancelledClaims, renewedClaims } from "../shared/job-rows.js";
import { PROGRESS_SET, READY_COUNT, STUCK_JOBS } from "../shared/job-statements.js";
import { type RunStatement, sqliteCompiler } from "../shared/shared-statement.js";
import { insertIntoCallerTransaction } from "./sqlite-caller-insert.js";
import type { SqliteConnection, SqliteHost } from "./sqlite-connection.js";
import { SqliteStageCounters, StageDeltas } from "./sqlite-stage-counters.js";
import { insertUniqueRow, insertUniqueRows } from "./sqlite-unique-insert.js";
import { SqliteReadyClaim } from "./sqlite-ready-claim.js";
import { RowPlaces } from "./sqlite-row-places.js";
import { SqliteRowInsert } from "./sqlite-row-insert.js";
import { SQLITE_TRANSITIONS as T } from "./sqlite-transition.js";
import { SqliteFinishRows } from "./sqlite-finish-rows.js";
import { withUngroupedKey } from "../shared/ungrouped-group.js";
import { adoptUngrouped, groupLimitedTypes, setLimits } from "./sqlite-limits.js";

export class SqliteJobStore implements B.JobStore<B.SqliteTransaction> {
  /** The stage counters, written by every statement here that changes a stage. */
  readonly counters: SqliteStageCounters;

  /** The claim of ready regular jobs, limited types' included. */
  private readonly ready: SqliteReadyClaim;

  /** The insert of new rows, inside a caller's transaction. */
  private readonly rows: SqliteRowInsert;

  /** The writes of finished attempts and what they release or fail, inside a caller's transaction. */
  private readonly finishes: SqliteFinishRows;

  constructor(private readonly host: SqliteHost) {
    this.counters = new SqliteStageCounters(host);
    this.ready = new SqliteReadyClaim(host, this.counters);
    this.rows = new SqliteRowInsert(host, this.counters);
    this.finishes = new SqliteFinishRows(host, this.counters);
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
   * The body of {@link finishMany}, inside the caller's `immediate` transaction (partition heads reuse it); see
   * {@link SqliteFinishRows.finishRows}.
   */
  finishRows(params: B.JobFinishManyParams, discard = false): B.JobFinishManyResult {
    return this.finishes.finishRows(params, discard);
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

  /** Fails the waiting continuations of `failed`, down the whole chain, inside the caller's transaction; see {@link SqliteFinishRows.failWaitingChildren}. */
  failWaitingChildren(failed: { id: string; error: string }[], now: number, expires: number): void {
    this.finishes.failWaitingChildren(failed, now, expires);
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
