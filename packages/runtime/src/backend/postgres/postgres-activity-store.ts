/**
 * The dashboard's writes on PostgreSQL (`backend.activity`, see
 * `activity-store.ts`). The statements that mean the same on both dialects
 * are written once (`shared/dashboard-statements.ts`) and run on the pool;
 * the activity sample is PostgreSQL's own: it sums the counters' shards and
 * runs in one transaction under a transaction-scoped advisory lock on the
 * namespace, so two samplers that overlap (a slow run past its turn) count
 * each transition once.
 */
import type * as B from "../backend.js";
import { enteredDeltas, SAMPLED_MARK } from "../shared/activity-deltas.js";
import { ACTIVITY_ADD, QUEUE_LENGTH_ADD, SERVER_HEARTBEAT, SERVER_REMOVE, SERVER_SWEEP, sweepStatement } from "../shared/dashboard-statements.js";
import { type Execute, statement, type Statement } from "./postgres-statement.js";
import type { PostgresRunner } from "./postgres-runner.js";

const ACTIVITY_SWEEP = sweepStatement("later_activity");
const QUEUE_LENGTH_SWEEP = sweepStatement("later_queue_length");

/** Advisory-lock class id of the activity sample ("LTAC"); the object id is `hashtext(schema.namespace)`. */
const SAMPLE_LOCK_CLASS = 0x4c544143;

export class PostgresActivityStore implements B.ActivityStore {
  private readonly lock: Statement;
  private readonly current: Statement;
  private readonly marks: Statement;
  private readonly markUpsert: Statement;

  constructor(private readonly host: PostgresRunner) {
    const schema = host.quoted;
    this.lock = statement(`SELECT pg_advisory_xact_lock(${SAMPLE_LOCK_CLASS}, hashtext($1))`);
    this.current = statement(`SELECT stage, sum(entered)::bigint AS entered FROM ${schema}.later_stage_counts WHERE namespace = $1 GROUP BY stage`);
    this.marks = statement(`SELECT stage, entered, sampled_at FROM ${schema}.later_activity_marks WHERE namespace = $1`);
    this.markUpsert = statement(`INSERT INTO ${schema}.later_activity_marks AS m (namespace, stage, entered, sampled_at)
SELECT $1, stage, entered, $4 FROM unnest($2::text[], $3::bigint[]) AS t(stage, entered) ORDER BY stage
ON CONFLICT (namespace, stage) DO UPDATE SET entered = excluded.entered, sampled_at = excluded.sampled_at`);
  }

  async enteredSample(params: B.EnteredSampleParams): Promise<number> {
    const ns = this.host.namespace;
    const read = async (execute: Execute) => {
      const current = await execute(this.current, [ns]);
      const marks = await execute(this.marks, [ns]);
      return { current, placed: enteredDeltas(current, marks, params.now, params.staleAfterMs) };
    };
    // Nothing moved (the common case for every sampler but the first of a second): two reads, no transaction.
    if (!(await read(this.host.execute)).placed.refreshMarks) return 0;
    return this.host.inTransaction("activity sample", async (execute) => {
      await execute(this.lock, [`${this.host.quoted}.${ns}`]);
      const { current, placed } = await read(execute);
      let total = 0;
      for (const d of placed.deltas) {
        await this.run(
          execute,
          ACTIVITY_ADD.bind(this.host.compiler, { namespace: ns, at: placed.at, series: `entered:${d.stage}`, n: d.n, totalMs: 0, maxMs: 0 }),
        );
        total += d.n;
      }
      if (!placed.refreshMarks) return total;
      const stages = [...current.map((r) => String(r.stage)), SAMPLED_MARK];
      await execute(this.markUpsert, [ns, stages, [...current.map((r) => String(r.entered)), "0"], params.now]);
      return total;
    });
  }

  async dispatchWaitAdd(params: B.DispatchWaitAddParams): Promise<void> {
    for (const series of ["regular", "partitioned"] as const) {
      const w = params[series];
      if (w.claims === 0) continue;
      const values = { namespace: this.host.namespace, at: params.at, series, n: w.claims, totalMs: w.waitTotalMs, maxMs: w.waitMaxMs };
      await ACTIVITY_ADD.run(this.host.compiler, this.host.shared, values);
    }
  }

  async queueLengthAdd(params: B.QueueLengthAddParams): Promise<void> {
    await QUEUE_LENGTH_ADD.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  async activitySweep(params: B.ActivitySweepParams): Promise<number> {
    const namespace = this.host.namespace;
    let total = 0;
    for (const [s, before] of [
      [ACTIVITY_SWEEP, params.activityBefore],
      [QUEUE_LENGTH_SWEEP, params.queueLengthBefore],
    ] as const) {
      for (;;) {
        const n = await s.run(this.host.compiler, this.host.shared, { namespace, before, spanMs: params.spanMs });
        total += n;
        if (n === 0) break;
      }
    }
    await SERVER_SWEEP.run(this.host.compiler, this.host.shared, { namespace, before: params.serversBefore });
    return total;
  }

  async serverHeartbeat(params: B.ServerHeartbeatParams): Promise<void> {
    await SERVER_HEARTBEAT.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  async serverRemove(params: B.ServerRemoveParams): Promise<void> {
    await SERVER_REMOVE.run(this.host.compiler, this.host.shared, { ...params, namespace: this.host.namespace });
  }

  /** Runs a shared statement on the transaction's connection (named after its text, as the runner's `shared` does). */
  private readonly named = new Map<string, Statement>();
  private run(execute: Execute, s: { text: string; values: unknown[] }): Promise<unknown> {
    let st = this.named.get(s.text);
    if (!st) this.named.set(s.text, (st = statement(s.text)));
    return execute(st, s.values);
  }
}
