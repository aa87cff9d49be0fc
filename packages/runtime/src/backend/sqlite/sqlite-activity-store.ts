/**
 * The dashboard's writes on SQLite (`backend.activity`, see
 * `activity-store.ts`). The statements that mean the same on both dialects
 * are written once (`shared/dashboard-statements.ts`); the activity sample
 * reads SQLite's one-row-per-stage counters in its own `BEGIN IMMEDIATE`,
 * which also serialises samplers of the file.
 */
import type * as B from "../backend.js";
import { enteredDeltas, SAMPLED_MARK } from "../shared/activity-deltas.js";
import { ACTIVITY_ADD, QUEUE_LENGTH_ADD, SERVER_HEARTBEAT, SERVER_REMOVE, SERVER_SWEEP, sweepStatement } from "../shared/dashboard-statements.js";
import { type BoundStatement, type RunStatement, sqliteCompiler } from "../shared/shared-statement.js";
import type { SqliteConnection, SqliteHost } from "./sqlite-connection.js";

const ACTIVITY_SWEEP = sweepStatement("later_activity");
const QUEUE_LENGTH_SWEEP = sweepStatement("later_queue_length");

/** Runs a shared statement inside the caller's `immediate` transaction. */
function inTransaction(c: SqliteConnection, s: BoundStatement): void {
  c.all(s.text, ...s.values);
}

export class SqliteActivityStore implements B.ActivityStore {
  constructor(private readonly host: SqliteHost) {}

  async enteredSample(params: B.EnteredSampleParams): Promise<number> {
    const ns = this.host.namespace;
    const c = this.host.conn();
    const read = () => {
      const current = c.all("SELECT stage, entered FROM later_stage_counts WHERE namespace = ?", ns);
      const marks = c.all("SELECT stage, entered, sampled_at FROM later_activity_marks WHERE namespace = ?", ns);
      return { current, placed: enteredDeltas(current, marks, params.now, params.staleAfterMs) };
    };
    // Nothing moved (the common case for every sampler but the first of a second): no write lock, no commit.
    if (!read().placed.refreshMarks) return 0;
    return c.immediate(() => {
      const { current, placed } = read();
      let total = 0;
      for (const d of placed.deltas) {
        inTransaction(c, ACTIVITY_ADD.bind(sqliteCompiler, { namespace: ns, at: placed.at, series: `entered:${d.stage}`, n: d.n, totalMs: 0, maxMs: 0 }));
        total += d.n;
      }
      if (!placed.refreshMarks) return total;
      for (const r of [...current, { stage: SAMPLED_MARK, entered: 0 }]) {
        c.run(
          `INSERT INTO later_activity_marks (namespace, stage, entered, sampled_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (namespace, stage) DO UPDATE SET entered = excluded.entered, sampled_at = excluded.sampled_at`,
          ns,
          r.stage,
          r.entered,
          params.now,
        );
      }
      return total;
    });
  }

  async dispatchWaitAdd(params: B.DispatchWaitAddParams): Promise<void> {
    const c = this.host.conn();
    c.immediate(() => {
      for (const series of ["regular", "partitioned"] as const) {
        const w = params[series];
        if (w.claims === 0) continue;
        inTransaction(
          c,
          ACTIVITY_ADD.bind(sqliteCompiler, { namespace: this.host.namespace, at: params.at, series, n: w.claims, totalMs: w.waitTotalMs, maxMs: w.waitMaxMs }),
        );
      }
    });
  }

  async queueLengthAdd(params: B.QueueLengthAddParams): Promise<void> {
    await QUEUE_LENGTH_ADD.run(sqliteCompiler, this.write, { ...params, namespace: this.host.namespace });
  }

  async activitySweep(params: B.ActivitySweepParams): Promise<number> {
    const namespace = this.host.namespace;
    let total = 0;
    for (const [statement, before] of [
      [ACTIVITY_SWEEP, params.activityBefore],
      [QUEUE_LENGTH_SWEEP, params.queueLengthBefore],
    ] as const) {
      for (;;) {
        const n = await statement.run(sqliteCompiler, this.write, { namespace, before, spanMs: params.spanMs });
        total += n;
        if (n === 0) break;
      }
    }
    await SERVER_SWEEP.run(sqliteCompiler, this.write, { namespace, before: params.serversBefore });
    return total;
  }

  async serverHeartbeat(params: B.ServerHeartbeatParams): Promise<void> {
    await SERVER_HEARTBEAT.run(sqliteCompiler, this.write, { ...params, namespace: this.host.namespace });
  }

  async serverRemove(params: B.ServerRemoveParams): Promise<void> {
    await SERVER_REMOVE.run(sqliteCompiler, this.write, { ...params, namespace: this.host.namespace });
  }

  private readonly write: RunStatement = (s) => this.host.conn().write(s);
}
