/**
 * The finish of claimed attempts on SQLite (`SqliteJobStore.finishRows`),
 * inside the caller's `immediate` transaction: the successes of a batch in
 * one statement (or deleted, J11 `successMs: 0`), each retry and failure by
 * its own, the continuations a success releases (J5, X5) and those a final
 * failure fails down the chain; every stage change counted in the same
 * transaction ({@link SqliteStageCounters}). Each row is matched on its claim
 * (id, attempt) and, for the stuck-job rescue, on a lease that expired.
 */
import { parentFailedReason } from "../../core/continuation-stage.js";
import type * as B from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import type { SqliteHost } from "./sqlite-connection.js";
import { FAN_IN_SQL, releaseFanInChildren } from "./sqlite-fan-in.js";
import { type SqliteStageCounters, StageDeltas } from "./sqlite-stage-counters.js";
import { SQLITE_TRANSITIONS as T } from "./sqlite-transition.js";

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
 * claim fence as the success UPDATE of {@link SqliteFinishRows.finishRows}, and the same rows returned.
 */
const DISCARD_SUCCESSES = `DELETE FROM later_jobs
  WHERE +namespace = ? AND +stage = 'running' AND coalesce(lease_expires_at, 0) < ?
    AND id IN (SELECT json_extract(value, '$[0]') FROM json_each(?))
    AND (id, attempt) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
  RETURNING id, attempt, topic, partition_no, unique_key, waiters`;

export class SqliteFinishRows {
  constructor(
    private readonly host: SqliteHost,
    private readonly counters: SqliteStageCounters,
  ) {}

  /**
   * The body of `JobStore.finishMany`, inside the caller's `immediate` transaction (partition heads reuse it).
   * `discard` (J11, `successMs: 0`): the successes' rows are deleted instead of updated, each counted as its
   * move into `success` and its removal, their ids handed to this connection's commit listeners (`waitFor`).
   */
  finishRows(params: B.JobFinishManyParams, discard = false): B.JobFinishManyResult {
    const ns = this.host.namespace;
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
          ? this.host.conn().all(DISCARD_SUCCESSES, ns, guard, claimsJson, claimsJson)
          : this.host
              .conn()
              .all(SUCCEED_BATCH, params.now, expires, params.now, results === null ? null : JSON.stringify(results), ns, guard, claimsJson, claimsJson);
        for (const r of rows) {
          applied.push({ id: String(r.id), attempt: Number(r.attempt) });
          succeeded.push(String(r.id));
          if (r.unique_key !== null) freed++;
          if (Number(r.waiters) > 0) marked.push(String(r.id));
        }
        T.succeed.count(deltas, rows, "running", "success");
        if (discard) {
          T.discard.count(deltas, rows, "success", null);
          this.host.conn().noteDiscarded(succeeded);
        }
      }
      for (const f of params.finishes) {
        const o = f.outcome;
        if (o.kind === "success") continue;
        const where = `WHERE id = ? AND namespace = ? AND stage = 'running' AND attempt = ? AND coalesce(lease_expires_at, 0) < ? RETURNING topic, partition_no, unique_key`;
        // A PermanentJobError's entry carries the note `permanent` (docs/semantics.md J3); others stay two elements.
        const retry = o.kind === "retry";
        const t = retry ? T.requeue : o.permanent ? T.failPermanent : T.fail;
        // A retry is due again at its run_at; a final failure expires, and frees its unique key's slot.
        const row: Row | undefined = this.host.conn().get(
          `UPDATE later_jobs SET ${t.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, ${retry ? "run_at" : "expires_at"} = ?,
             last_error = ?, ${t.history}${retry ? "" : ", unique_slot = NULL"} ${where}`,
          params.now,
          retry ? o.runAt : expires,
          o.error,
          params.now,
          f.id,
          ns,
          f.attempt,
          guard,
        );
        if (row && !retry) {
          failed.push({ id: f.id, error: o.error });
          if (row.unique_key !== null) freed++;
        }
        if (row) {
          applied.push({ id: f.id, attempt: f.attempt });
          t.count(deltas, [row], "running", retry ? "requeued" : "failed");
        }
      }
      let released = 0;
      if (succeeded.length > 0) {
        // A continuation with a delay still to run goes to `delayed` (its run_at kept), else to `enqueued` now.
        const rows = this.host.conn().all(
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
      if (marked.length > 0) released += releaseFanInChildren(this.host.conn(), ns, marked, params.now, deltas);
      this.counters.write(deltas);
      this.failWaitingChildren(failed, params.now, expires);
      return freed > 0 ? { applied, released, freed } : { applied, released };
    }
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
      const children = this.host.conn().all(
        `UPDATE later_jobs SET ${T.failChild.stage}, updated_at = ?, expires_at = ?, last_error = ?, ${T.failChild.history},
           unique_slot = NULL
         WHERE parent_id = ? AND namespace = ? AND stage = 'waiting' RETURNING id, topic, partition_no`,
        now,
        expires,
        reason,
        now,
        parent.id,
        this.host.namespace,
      );
      for (const c of children) failed.push({ id: String(c.id), error: reason });
      T.failChild.count(deltas, children, "waiting", "failed");
      // Fan-in children of this parent (X5): the first parent to fail for good gives the reason.
      const fanIn = this.host.conn().all(FAN_IN_SQL.failChildren, now, expires, reason, now, this.host.namespace, this.host.namespace, parent.id);
      for (const c of fanIn) failed.push({ id: String(c.id), error: reason });
      T.failChild.count(deltas, fanIn, "waiting", "failed");
    }
    this.counters.write(deltas);
  }
}
