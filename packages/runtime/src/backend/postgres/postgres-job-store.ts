/**
 * The job statements of the PostgreSQL backend (`backend.jobs`). The hot
 * writes (insert, claim, finish, release, renew) are each one round trip of
 * fixed SQL (`postgres-job-queries.ts`), run as named prepared statements:
 * hand-written for their locking (`FOR UPDATE SKIP LOCKED`, lock order),
 * their `pg_notify` and their appends to the stage history. The partition
 * and recurring stores reuse the insert and finish bodies inside
 * transactions of their own. The stuck-job and ready-count reads are
 * written once for both dialects (`shared/job-statements.ts`); the expiry
 * sweep is a Kysely delete on the pool (`postgres-kysely-queries.ts`).
 *
 * Fencing: every write of a claim matches its `(id, attempt)` while the row
 * is still `running`. Lock order: rows of one batch are written in id
 * order, partition rows before job rows, so writers never deadlock on each
 * other (a conflict that happens anyway is rolled back by PostgreSQL and run
 * again: a statement by the runner's `execute`, a transaction by its
 * `inTransaction`; never the two statements of a finish as one, whose
 * first may have committed).
 */
import { parentFailedReason } from "../../core/continuation-stage.js";
import type { JobStage, StageNote } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { mergeFinishResults, splitByRetention } from "../shared/finish-retention.js";
import { cancelledClaims, renewedClaims } from "../shared/job-rows.js";
import { PROGRESS_SET, READY_COUNT, STUCK_JOBS } from "../shared/job-statements.js";
import { type Execute, statement, type Statement } from "./postgres-statement.js";
import type { PostgresJobQueries } from "./postgres-job-queries.js";
import { PostgresReadyClaim } from "./postgres-ready-claim.js";
import { PostgresRowInsert } from "./postgres-row-insert.js";
import { uniqueKeyOf } from "../shared/unique-rounds.js";
import type { PostgresRunner } from "./postgres-runner.js";

/** X9: the wake-up of the other servers after a finish that freed a limited type's slot (`$1`/`$2` channel and payload). */
const NOTIFY = statement("SELECT pg_notify($1, $2)");

export class PostgresJobStore implements B.JobStore<B.PostgresTransaction> {
  /** `$1` namespace, `$2` ids: those now `cancelled` (X3), for a renewal that lost claims. */
  private readonly cancelledOf: Statement;

  /** The claim of ready regular jobs, limited types' included (internal: tests reach its floor). */
  readonly ready: PostgresReadyClaim;

  /** The insert of new rows. */
  private readonly rows: PostgresRowInsert;

  constructor(
    private readonly host: PostgresRunner,
    private readonly q: PostgresJobQueries,
  ) {
    this.ready = new PostgresReadyClaim(host, q);
    this.rows = new PostgresRowInsert(host, q);
    this.cancelledOf = statement(
      `SELECT id, attempt, stages::jsonb -> -1 ->> 2 AS note FROM ${host.quoted}.later_jobs WHERE namespace = $1 AND stage = 'cancelled' AND id = ANY($2::text[])`,
    );
  }

  /** See {@link PostgresRowInsert.insertMany}: autocommit, a transaction run again after a lost connection, or the caller's. */
  insertMany(params: B.JobInsertManyParams<B.PostgresTransaction>): Promise<B.JobInsertManyResult> {
    return this.rows.insertMany(params);
  }

  async listStuck(params: B.JobListStuckParams): Promise<B.StuckJob[]> {
    return STUCK_JOBS.run(this.host.compiler, this.host.shared, { ...params, namespace: this.ns });
  }

  async progressSet(params: B.JobProgressSetParams): Promise<boolean> {
    return PROGRESS_SET.run(this.host.compiler, this.host.shared, { ...params, namespace: this.ns });
  }

  async countReady(params: B.JobCountReadyParams): Promise<number> {
    if (params.jobTypes.length === 0) return 0;
    return READY_COUNT.run(this.host.compiler, this.host.shared, { ...params, namespace: this.ns });
  }

  private get ns(): string {
    return this.host.namespace;
  }

  /** Deletes a batch of expired rows (see {@link PostgresJobQueries.deleteExpired}); returns how many. */
  async deleteExpired(params: B.JobDeleteExpiredParams): Promise<number> {
    const [row] = await this.host.execute(this.q.deleteExpired, [this.ns, params.now, params.limit]);
    return Number(row?.deleted ?? 0);
  }

  /** Inserts a batch on one executor (see {@link PostgresRowInsert.insertOn}): the partition and recurring stores' transactions. */
  insertOn(execute: Execute, params: B.JobInsertManyParams<unknown>, foreign = false): Promise<B.JobInsertManyResult> {
    return this.rows.insertOn(execute, params, foreign);
  }

  /** X2: one statement, in autocommit (see `PostgresUniqueInsert`). */
  /**
   * X2: `PostgresUniqueInsert.runMany`, autocommit when its inserts are one statement (distinct keys, no race
   * lost: one round trip), else in one transaction.
   */
  async insertUniqueMany(params: B.JobInsertUniqueManyParams): Promise<B.JobInsertUniqueManyResult> {
    const { inserts } = params;
    const { unique } = this.q;
    const keys = new Set(inserts.map(uniqueKeyOf));
    if (keys.size === inserts.length) {
      // Distinct keys: one statement, autocommit; a lost race runs again in a statement of its own, as a single insert always did.
      return { results: await unique.runMany(this.host.execute, this.ns, inserts, this.host.notifyArgs) };
    }
    return { results: await this.host.inTransaction("insertUniqueMany", (execute) => unique.runMany(execute, this.ns, inserts, this.host.notifyArgs)) };
  }

  /** See `PostgresReadyClaim.claimReady`. */
  claimReady(params: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    return this.ready.claimReady(params);
  }

  /** X9: stored in one transaction (`PostgresLimits.set`). */
  limitsSet(params: B.LimitsSetParams): Promise<B.LimitsSetResult> {
    return this.ready.limits.set(params);
  }

  /** X9: one statement (`PostgresLimits.adopt`). */
  limitsUngroupedAdopt(): Promise<B.LimitsUngroupedAdoptResult> {
    return this.ready.limits.adopt();
  }

  /**
   * One statement for the whole batch (outcomes, released continuations,
   * notify). A batch of successes only, the common case, takes the smaller
   * `finishSuccess`; any other outcome takes `finish`, and a final failure
   * runs it in a transaction that then fails the job's waiting
   * continuations level by level down the chain.
   */
  async finishMany(params: B.JobFinishManyParams): Promise<B.JobFinishManyResult> {
    // X9: a limited type's slot was freed. A batch of successes only (`finishSuccess`) wakes the other servers in its
    // own statement; the other statements notify only when work became ready, so their batches send one `pg_notify`
    // after, once per call (a batch split by retention writes its groups through finishBatch).
    const wakeOthers = params.wakeOthers === true;
    const result = await this.finishBatch(params, wakeOthers);
    if (wakeOthers && !result.othersWoken && result.applied.length > 0) await this.host.execute(NOTIFY, [...this.host.notifyArgs]);
    return result;
  }

  /** `wakeOthers`: a batch of successes only wakes the other servers in its statement, and says so (`othersWoken`). */
  private async finishBatch(params: B.JobFinishManyParams, wakeOthers = false): Promise<B.JobFinishManyResult & { othersWoken?: boolean }> {
    if (params.finishes.length === 0) return { applied: [], released: 0 };
    if (params.finishes.some((f) => f.retentionMs !== undefined)) return this.finishByRetention(params);
    const finishes = [...params.finishes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)); // one lock order for every writer
    const expires = params.now + params.retentionMs;
    if (params.leaseExpiredBefore === undefined && finishes.every((f) => f.outcome.kind === "success")) {
      const result = await this.finishSuccesses(finishes, params.now, expires, wakeOthers);
      return wakeOthers ? { ...result, othersWoken: true } : result;
    }
    const values = this.finishValues(finishes, params.now, expires, params.leaseExpiredBefore ?? Number.MAX_SAFE_INTEGER);
    if (!finishes.some((f) => f.outcome.kind === "fail")) {
      let rerun = false;
      const execute: Execute = async (s, v) => {
        const answer = await this.host.executeTellingRerun(s, v);
        rerun ||= answer.rerun;
        return answer.rows;
      };
      const result = await this.finishRows(execute, values, expires, params.now);
      return rerun ? this.writtenBefore(finishes, params.now, result) : result;
    }
    return this.host.inTransaction("finish", (execute) => this.finishRows(execute, values, expires, params.now));
  }

  /**
   * `result` with the finishes it left out that its statement had written
   * all the same: an autocommit finish whose connection was lost after its
   * commit, before its reply, is run again by the runner, finds its rows
   * finished, and reports none of them; they are found here by their stage,
   * attempt and `updated_at` (the batch's `now`: see
   * `PostgresJobQueries.writtenFinishes`), so the server still sends their
   * events and counts them, and a succeeded parent's continuations inserted
   * meanwhile are released. One read, only for a statement that was run
   * again and came back short (a finish sent twice is not written twice,
   * and is reported so: J8). A finish in a transaction (a failure for good)
   * is not run again by the runner, and a deleted success (`successMs: 0`)
   * leaves no row to find: both stay reported as not written when their
   * reply is lost.
   */
  private async writtenBefore(finishes: readonly B.JobFinish[], now: number, result: B.JobFinishManyResult): Promise<B.JobFinishManyResult> {
    if (result.applied.length >= finishes.length) return result;
    const reported = new Set(result.applied.map((a) => a.id));
    const missing = finishes.filter((f) => !reported.has(f.id));
    const entered: Record<string, [number, string]> = {};
    for (const f of missing) entered[f.id] = [f.attempt, f.outcome.kind === "success" ? "success" : f.outcome.kind === "retry" ? "requeued" : "failed"];
    const rows = await this.host.execute(this.q.writtenFinishes, [missing.map((f) => f.id), this.ns, now, JSON.stringify(entered)]);
    if (rows.length === 0) return result;
    const written = new Set(rows.map((r) => String(r.id)));
    const applied = [...result.applied, ...missing.filter((f) => written.has(f.id)).map((f) => ({ id: f.id, attempt: f.attempt }))];
    const marked = rows.filter((r) => Number(r.waiters) > 0 && entered[String(r.id)]![1] === "success").map((r) => String(r.id));
    const released = result.released + (marked.length > 0 ? await this.releaseChildren(this.host.execute, marked, now) : 0);
    const freed = (result.freed ?? 0) + rows.filter((r) => r.unique_key !== null && entered[String(r.id)]![1] !== "requeued").length;
    return freed > 0 ? { applied, released, freed } : { applied, released };
  }

  /**
   * J11: a batch with finishes of job types with a retention of their own, split by retention class: the
   * successes to delete (`successMs: 0`) go through `finishDiscard`, every other group (one per retention) through
   * the statements of a batch without (their SQL text unchanged), in turn. Each group is fenced by its claims
   * as a whole batch is, so writing them one after the other changes nothing a finish relies on.
   */
  private async finishByRetention(params: B.JobFinishManyParams): Promise<B.JobFinishManyResult> {
    const { discard, kept } = splitByRetention(params);
    const results: B.JobFinishManyResult[] = [];
    if (discard.length > 0) results.push(await this.finishDiscards(discard, params.now));
    for (const [retentionMs, finishes] of kept) results.push(await this.finishBatch({ ...params, finishes, retentionMs }));
    return mergeFinishResults(results);
  }

  /** Successes whose rows are deleted (J11): `finishDiscard`, then the release of continuations it could not see. */
  private async finishDiscards(finishes: readonly B.JobFinish[], now: number): Promise<B.JobFinishManyResult> {
    let ids = "{";
    let attempts = "{";
    for (let i = 0; i < finishes.length; i++) {
      const f = finishes[i]!;
      ids += i === 0 ? f.id : `,${f.id}`;
      attempts += `${i === 0 ? "" : ","}"${f.id}":${f.attempt}`;
    }
    const [row] = await this.host.execute(this.q.finishDiscard, [
      `${ids}}`,
      `${attempts}}`,
      now,
      this.ns,
      ...this.host.notifyArgs,
      finishes.length,
      this.host.doneChannel,
    ]);
    return this.successResult(finishes, row, now);
  }

  private async finishSuccesses(finishes: readonly B.JobFinish[], now: number, expires: number, wakeOthers: boolean): Promise<B.JobFinishManyResult> {
    // Ids are ULIDs (no quoting needed), so both parameters are built as text directly.
    let ids = "{";
    let attempts = "{";
    // X6: only the jobs that returned a result are carried, in a map of their own (null when none did).
    let results: Record<string, string> | null = null;
    for (let i = 0; i < finishes.length; i++) {
      const f = finishes[i]!;
      ids += i === 0 ? f.id : `,${f.id}`;
      attempts += `${i === 0 ? "" : ","}"${f.id}":${f.attempt}`;
      const result = (f.outcome as { result?: string }).result;
      if (result !== undefined) (results ??= {})[f.id] = result;
    }
    const { rows, rerun } = await this.host.executeTellingRerun(this.q.finishSuccess, [
      `${ids}}`,
      `${attempts}}`,
      now,
      expires,
      this.ns,
      ...this.host.notifyArgs,
      finishes.length,
      results === null ? null : JSON.stringify(results),
      this.host.doneChannel,
      wakeOthers,
    ]);
    const result = await this.successResult(finishes, rows[0], now);
    return rerun ? this.writtenBefore(finishes, now, result) : result;
  }

  /** The result of `finishSuccess` or `finishDiscard` (one row: `applied`, `ids`, `marked`, `freed`, `released`). */
  private async successResult(finishes: readonly B.JobFinish[], row: Record<string, unknown> | undefined, now: number): Promise<B.JobFinishManyResult> {
    const written = Number(row?.applied ?? 0) < finishes.length ? new Set(String(row?.ids ?? "").split(",")) : null;
    const applied: B.ClaimKey[] = [];
    for (const f of finishes) if (!written || written.has(f.id)) applied.push({ id: f.id, attempt: f.attempt });
    let released = Number(row?.released ?? 0);
    if (row?.marked) released += await this.releaseChildren(this.host.execute, String(row.marked).split(","), now);
    const freed = Number(row?.freed ?? 0);
    return freed > 0 ? { applied, released, freed } : { applied, released };
  }

  /** The general finish on one executor (partition heads run it inside their transaction). */
  async finishRows(execute: Execute, values: unknown[], expires: number, now: number): Promise<B.JobFinishManyResult> {
    const rows = await execute(this.q.finish, values);
    const applied = rows.map((r) => ({ id: String(r.id), attempt: Number(r.attempt) }));
    let released = Number(rows[0]?.released ?? 0);
    const marked = rows.filter((r) => r.stage === "success" && Number(r.waiters) > 0).map((r) => String(r.id));
    if (marked.length > 0) released += await this.releaseChildren(execute, marked, now);
    await this.failWaitingChildren(
      execute,
      rows.filter((r) => r.stage === "failed").map((r) => ({ id: String(r.id), error: r.last_error as string | null })),
      now,
      expires,
    );
    const freed = rows.filter((r) => r.unique_key !== null && r.stage !== "requeued").length;
    return freed > 0 ? { applied, released, freed } : { applied, released };
  }

  /**
   * Releases the waiting children of succeeded parents in a statement of its
   * own, whose snapshot sees children committed while the finish waited for
   * their parent's lock (see `PostgresJobQueries.readParents`).
   */
  async releaseChildren(execute: Execute, parentIds: string[], now: number): Promise<number> {
    const [row] = await execute(this.q.releaseChildren, [parentIds, this.ns, now, ...this.host.notifyArgs]);
    return Number(row?.released ?? 0);
  }

  /**
   * Fails the waiting continuations of failed jobs, level by level down the
   * chain: single-parent children by `parent_id`, fan-in children (X5)
   * through `later_job_parents` (both in `failChildren`).
   * Hook for cancel (X3): a cancelled parent must cancel its waiting fan-in
   * children the same way, joining `later_job_parents` on `parent_id`
   * beside the single-parent lookup (see `PostgresJobQueries.failChildren`).
   */
  async failWaitingChildren(execute: Execute, failed: { id: string; error: string | null }[], now: number, expires: number): Promise<void> {
    while (failed.length > 0) {
      const children = await execute(this.q.failChildren, [
        failed.map((f) => f.id),
        failed.map((f) => parentFailedReason(f.id, f.error)),
        now,
        expires,
        this.ns,
        this.host.doneChannel,
      ]);
      failed = children.map((c) => ({ id: String(c.id), error: c.last_error as string | null }));
    }
  }

  /** The `finish` statement's parameters for a batch (see `PostgresJobQueries.finish`). */
  finishValues(finishes: readonly B.JobFinish[], now: number, expires: number, leaseExpiredBefore: number): unknown[] {
    const outcomes: Record<string, [number, string, number | null, string | null, (StageNote | null)?, string?]> = {};
    for (const f of finishes) {
      const o = f.outcome;
      outcomes[f.id] =
        o.kind === "success"
          ? o.result === undefined
            ? [f.attempt, "success", null, null]
            : [f.attempt, "success", null, null, null, o.result]
          : o.kind === "retry"
            ? [f.attempt, "requeued", o.runAt, o.error]
            : o.permanent
              ? [f.attempt, "failed", null, o.error, "permanent"]
              : [f.attempt, "failed", null, o.error];
    }
    return [finishes.map((f) => f.id), JSON.stringify(outcomes), now, expires, this.ns, leaseExpiredBefore, ...this.host.notifyArgs, this.host.doneChannel];
  }

  /** One statement: `markAwaited` (UPDATE … RETURNING) or `readOutcomes` (see `PostgresJobQueries`). */
  async readOutcomes(params: B.JobReadOutcomesParams): Promise<B.JobOutcomeRow[]> {
    if (params.ids.length === 0) return [];
    const rows = await this.host.execute(params.markAwaited ? this.q.markAwaited : this.q.readOutcomes, [[...params.ids], this.ns]);
    return rows.map((r) => ({
      id: String(r.id),
      stage: r.stage as JobStage,
      result: (r.result as string | null) ?? null,
      error: (r.last_error as string | null) ?? null,
    }));
  }

  /** Puts claims back, in id order; `reason` `"shutdown"` notes each history entry (docs/semantics.md J9). */
  async releaseMany(params: B.JobReleaseManyParams): Promise<B.JobReleaseManyResult> {
    if (params.claims.length === 0) return { released: [] };
    const claims = [...params.claims].sort((a, b) => (a.id < b.id ? -1 : 1));
    const rows = await this.host.execute(this.q.release, [
      claims.map((c) => c.id),
      claims.map((c) => c.attempt),
      params.now,
      this.ns,
      ...this.host.notifyArgs,
      params.reason ?? null,
    ]);
    return { released: rows.map((r) => ({ id: String(r.id), attempt: Number(r.claim_attempt) })) };
  }

  /** Renews every lease the owner holds among `claims` in one statement. */
  async leaseRenew(params: B.LeaseRenewParams): Promise<B.LeaseRenewResult> {
    if (params.claims.length === 0) return { renewed: [] };
    const held = new Map(params.claims.map((c) => [c.id, c.attempt]));
    const rows = await this.host.execute(this.q.renew, [params.leaseExpiresAt, this.ns, params.owner, [...held.keys()].sort()]);
    const renewed = renewedClaims(held, rows);
    if (renewed.length === held.size) return { renewed };
    const kept = new Set(renewed.map((c) => c.id));
    return { renewed, cancelled: await this.cancelledClaims(params.claims.filter((c) => !kept.has(c.id))) };
  }

  /**
   * Which of these claims' jobs are now `cancelled` at the same attempt (X3):
   * a renewal's lost claims, told apart from leases taken over. A read,
   * only after a renewal lost something (the partition store's too).
   */
  async cancelledClaims(claims: readonly B.ClaimKey[]): Promise<B.CancelledClaim[]> {
    if (claims.length === 0) return [];
    const held = new Map(claims.map((c) => [c.id, c.attempt]));
    return cancelledClaims(held, await this.host.execute(this.cancelledOf, [this.ns, [...held.keys()]]));
  }
}
