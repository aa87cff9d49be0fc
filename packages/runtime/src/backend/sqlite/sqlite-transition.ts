/**
 * The one path of a stage change on SQLite (X13 in docs/semantics.md):
 * every write site that changes a job's stage takes the history SQL and the
 * move counting from a {@link SqliteTransition} of its kind in the core table
 * ({@link STAGE_TRANSITIONS}):
 *
 * - the history entry: {@link SqliteTransition.history} (`stages =
 *   json_insert(…)`, with the optional note) in the statement's SET list,
 *   or {@link SqliteTransition.first} for an insert; the entry's time is the
 *   one `?` it holds;
 * - the moves: {@link SqliteTransition.count} adds the statement's
 *   `RETURNING` rows (or rows it read before) to the transaction's
 *   {@link StageDeltas}, written once before commit;
 * - the wake-up: on SQLite the commit itself is the wake-up (other
 *   processes see the WAL grow, see `wal-watcher.ts`), so nothing is sent;
 *   {@link SqliteTransition.wakes} says whether the kind made work ready.
 *
 * The statements themselves stay batched as they were (one UPDATE for a
 * claim or a batch of successes): the transition adds no statement.
 */
import type { JobStage } from "../../core/job-stage.js";
import { stagesEntered, type TransitionKind, wakesByPartition, wakingStages } from "../../core/stage-transition.js";
import type { Row } from "../shared/job-rows.js";
import type { StageDeltas } from "./sqlite-stage-counters.js";

/** What a write site says of one of its stage changes. */
export interface SqliteTransitionSpec {
  /** SQL of the stage entered, as the SET list reads the row before the change (a literal such as `'running'`, or a `CASE`). */
  to: string;
  /** SQL of the entry's note (docs/semantics.md J1), e.g. `'shutdown'`, or `?` (bound after the time: a cancel's reason, X3); absent: a plain `[stage, ms]` entry. */
  note?: string;
}

/** One kind of stage change of the SQLite statements: its history SQL and its counting. */
export class SqliteTransition {
  readonly kinds: readonly TransitionKind[];

  constructor(
    kinds: TransitionKind | readonly TransitionKind[],
    private readonly spec: SqliteTransitionSpec = { to: "stage" },
  ) {
    this.kinds = typeof kinds === "string" ? [kinds] : kinds;
    // A literal stage the kinds cannot enter is a statement that disagrees with the table: refused when built.
    const literal = /^'([a-z]+)'$/.exec(spec.to)?.[1];
    if (literal !== undefined && !stagesEntered(this.kinds).includes(literal as JobStage)) {
      throw new Error(`stage '${literal}' is not entered by ${this.kinds.join(", ")}`);
    }
  }

  /** Whether the change can make work ready (on SQLite the commit wakes the other processes): a waking stage entered, or a partition let go on. */
  get wakes(): boolean {
    return wakingStages(this.kinds).length > 0 || wakesByPartition(this.kinds);
  }

  /** `stage = <to>`, the SET item of the stage entered. */
  get stage(): string {
    return `stage = ${this.spec.to}`;
  }

  /** `stages = json_insert(…)`, the SET item that appends the entry; binds one `?`, the entry's time (then the note's, when it is `?`). */
  get history(): string {
    const note = this.spec.note === undefined ? "" : `, ${this.spec.note}`;
    return `stages = json_insert(stages, '$[#]', json_array(${this.spec.to}, CAST(? AS INTEGER)${note}))`;
  }

  /** The history SQL of an inserted row (binds `?` stage, `?` time). */
  static readonly FIRST = "json_array(json_array(?, CAST(? AS INTEGER)))";

  /** The history text of a row inserted in `stage` at `now` (for a statement that binds it as a value). */
  static first(stage: JobStage, now: number): string {
    return JSON.stringify([[stage, now]]);
  }

  /**
   * Adds one move per row to `deltas`: `from` the stage each row left (a
   * stage, or a function of the row; null for an insert), `to` the stage it
   * entered (default: its `stage` column; null for a delete); the row's
   * `topic` and `partition_no` unless `at` names the partition.
   */
  count(
    deltas: StageDeltas,
    rows: readonly Row[],
    from: JobStage | null | ((r: Row) => unknown),
    to: JobStage | null | ((r: Row) => unknown) = (r) => r.stage,
    at?: { topic: unknown; partition: unknown },
  ): void {
    for (const r of rows) {
      const left = typeof from === "function" ? from(r) : from;
      const entered = typeof to === "function" ? to(r) : to;
      deltas.move(left, entered, at ? at.topic : r.topic, at ? at.partition : r.partition_no);
    }
  }

  /** Adds `n` moves of unpartitioned jobs (or jobs whose unfinished state does not change) from `from` to `to`. */
  countMany(deltas: StageDeltas, from: JobStage, to: JobStage, n: number): void {
    deltas.moveMany(from, to, n);
  }
}

/** The transitions of the SQLite statements, one per kind or group of kinds a statement applies. */
export const SQLITE_TRANSITIONS = {
  insert: new SqliteTransition("insert"),
  claim: new SqliteTransition("claim", { to: "'running'" }),
  succeed: new SqliteTransition("succeed", { to: "'success'" }),
  requeue: new SqliteTransition(["requeue", "rescue"], { to: "'requeued'" }),
  fail: new SqliteTransition(["fail", "rescue"], { to: "'failed'" }),
  failPermanent: new SqliteTransition("fail", { to: "'failed'", note: "'permanent'" }),
  release: new SqliteTransition("release", { to: "CASE WHEN attempt <= 1 THEN 'enqueued' ELSE 'requeued' END" }),
  releaseShutdown: new SqliteTransition("release", { to: "CASE WHEN attempt <= 1 THEN 'enqueued' ELSE 'requeued' END", note: "'shutdown'" }),
  releaseChild: new SqliteTransition("releaseChild", { to: "CASE WHEN run_at > ? THEN 'delayed' ELSE 'enqueued' END" }),
  failChild: new SqliteTransition("failChild", { to: "'failed'" }),
  /** X2's replace: binds the stage entered (`enqueued` or `delayed`) as `?`; used only when it differs from the row's. */
  replace: new SqliteTransition("replace", { to: "?" }),
  retry: new SqliteTransition("retry", { to: "'enqueued'" }),
  delete: new SqliteTransition("delete"),
  expire: new SqliteTransition("expire"),
  truncate: new SqliteTransition("truncate"),
  /** J11: a success deleted by the write that records it (counted after its `succeed` move). */
  discard: new SqliteTransition("discard"),
  forceFail: new SqliteTransition("forceFail", { to: "'failed'" }),
  cancel: new SqliteTransition("cancel", { to: "'cancelled'" }),
  /** A cancel with a reason: the note binds `?` after the time. */
  cancelReason: new SqliteTransition("cancel", { to: "'cancelled'", note: "?" }),
  cancelChild: new SqliteTransition("cancelChild", { to: "'cancelled'" }),
  cancelChildReason: new SqliteTransition("cancelChild", { to: "'cancelled'", note: "?" }),
} as const satisfies Partial<Record<TransitionKind, SqliteTransition>> & Record<string, SqliteTransition>;
