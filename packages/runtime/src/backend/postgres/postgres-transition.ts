/**
 * The one path of a stage change on PostgreSQL (X13 in docs/semantics.md):
 * every statement that changes a job's stage takes the three parts a change
 * needs from here, built from its kind in the core table
 * ({@link STAGE_TRANSITIONS}):
 *
 * - the history entry: {@link PgTransition.history} (`stages = …`, with the
 *   optional note) in the statement's SET list, or {@link PgTransition.first}
 *   for an insert;
 * - the moves for the stage counters: {@link PgTransition.moves}, turned
 *   into the counter CTEs by {@link transitionTail}
 *   ({@link PostgresStageCounters.countMoves});
 * - the wake-up: {@link transitionTail} adds one `notified` CTE (one
 *   `pg_notify` per statement at most) over the rows of every transition whose
 *   kind wakes and that entered a waking stage (or, for a kind that wakes
 *   `"partition"`, that are partitioned: a cancel, X3), and refuses to build a
 *   statement whose transitions wake without a channel.
 *
 * The rest of each statement (which rows, through which index, its SET list
 * and RETURNING) stays written where it is: the hot statements keep their
 * plans (`idIn`, `RUNNING_BY_KEY`, `inPartition`). A statement with two
 * changes (a finish: the finished jobs and the continuations it released)
 * passes both transitions to one {@link transitionTail}.
 */
import type { JobStage } from "../../core/job-stage.js";
import { STAGE_TRANSITIONS, stagesEntered, type TransitionKind, wakesByPartition, wakingStages } from "../../core/stage-transition.js";
import { stageList } from "../shared/stage-list.js";
import { moves, PostgresStageCounters } from "./postgres-stage-counters.js";

/** What a statement says of one of its stage changes. */
export interface PgTransitionSpec {
  /** The kind(s) of change (one UPDATE may apply several, e.g. a finish's succeed, requeue and fail). */
  kinds: TransitionKind | readonly TransitionKind[];
  /**
   * The CTE (or subquery) of the changed rows: it returns `topic`,
   * `partition_no`, and `stage` (the stage entered) unless {@link to} is a
   * literal; for a delete, `stage` is the stage left.
   */
  rows: string;
  /** SQL of the stage each row of {@link leftRows} left (a column such as `old_stage`, or a literal such as `'running'`); null for an insert. */
  from: string | null;
  /**
   * The rows {@link from} reads, when not {@link rows}: the claim takes the
   * old stages from the rows it locked before updating them (every one of
   * which it updates), since PostgreSQL 15 has no `OLD` in `RETURNING`.
   */
  leftRows?: string;
  /** SQL of the stage entered, as the SET list reads the row before the change (a literal, or an expression); null for a delete. */
  to: string | null;
  /** The alias of the updated table, whose `stages` column the entry is appended to (default `j`). */
  alias?: string;
  /** SQL (bigint) of the entry's time; needed unless a delete. */
  at?: string;
  /** SQL text of the entry's note (docs/semantics.md J1), null meaning none; only statements that may write one pass it. */
  note?: string;
}

/** Appends `[stage, ms]` to the history `column`; `stage` and `ms` are SQL expressions. */
const appendStage = (column: string, stage: string, ms: string) => `left(${column}, -1) || ',["' || ${stage} || '",' || ${ms} || ']]'`;

/** {@link appendStage} with a note: `[stage, ms, note]` when the SQL text `note` is not null, else `[stage, ms]`. */
const appendNotedStage = (column: string, stage: string, ms: string, note: string) =>
  `left(${column}, -1) || ',["' || ${stage} || '",' || ${ms} || coalesce(',' || to_json(${note})::text, '') || ']]'`;

const LITERAL = /^'[a-z]+'$/;

function checkLiteral(kinds: readonly TransitionKind[], sql: string | null, side: "from" | "to"): void {
  if (sql === null || !LITERAL.test(sql)) return;
  const stage = sql.slice(1, -1) as JobStage;
  if (!kinds.some((k) => (STAGE_TRANSITIONS[k][side] as readonly JobStage[] | null)?.includes(stage))) {
    throw new Error(`stage ${sql} is not a legal "${side}" of ${kinds.join(", ")}`);
  }
}

/** One stage change of a statement: its history SQL, its moves, its wake-up rows. */
export class PgTransition {
  readonly kinds: readonly TransitionKind[];

  /** Throws when a literal stage entered (or left) is not one the kinds allow: a statement that disagrees with the table does not build. */
  constructor(private readonly spec: PgTransitionSpec) {
    this.kinds = typeof spec.kinds === "string" ? [spec.kinds] : spec.kinds;
    checkLiteral(this.kinds, spec.to, "to");
    checkLiteral(this.kinds, spec.from, "from");
  }

  /** `stage = <to>`, the SET item of the stage entered. */
  get stage(): string {
    return `stage = ${this.spec.to}`;
  }

  /** `stages = <history with the entry appended>`, the SET item of the history. */
  get history(): string {
    return `stages = ${this.append(`${this.spec.alias ?? "j"}.stages`)}`;
  }

  /**
   * `stages = …` appending the entry only when the stage entered differs from the row's own: for a change that
   * may keep the stage (X2's replace, whose new run time may leave a job `enqueued`), which records nothing then.
   */
  get historyIfMoved(): string {
    const alias = this.spec.alias ?? "j";
    return `stages = CASE WHEN ${alias}.stage <> ${this.spec.to} THEN ${this.append(`${alias}.stages`)} ELSE ${alias}.stages END`;
  }

  /** The history SQL `column` (an expression) with this change's entry appended (composable: an entry after another's). */
  append(column: string): string {
    const { to, at, note } = this.spec;
    if (to === null || at === undefined) throw new Error("a delete appends no history entry");
    return note === undefined ? appendStage(column, to, at) : appendNotedStage(column, to, at, note);
  }

  /** The history of a row inserted by this change: one entry. */
  get first(): string {
    return `'[["' || ${this.spec.to} || '",' || ${this.spec.at} || ']]'`;
  }

  /** The moves of {@link PgTransitionSpec.rows} for the counters (see `moves` in postgres-stage-counters.ts). */
  get moves(): string {
    const { rows, from, to, leftRows = rows } = this.spec;
    const entered = to === null ? null : LITERAL.test(to) ? to : "stage";
    return leftRows === rows ? moves(rows, from, entered) : [moves(rows, null, entered), moves(leftRows, from, null)].join(" UNION ALL ");
  }

  /**
   * The rows whose change wakes the fetchers (`SELECT 1 FROM rows …`): those
   * that entered a waking stage, and for a kind that wakes `"partition"`
   * those of a partition (`topic IS NOT NULL`); null when this change never
   * makes work ready.
   */
  get wake(): string | null {
    const { rows, to } = this.spec;
    const where: string[] = [];
    const waking = wakingStages(this.kinds);
    if (waking.length > 0) {
      const literal = to !== null && LITERAL.test(to) ? (to.slice(1, -1) as JobStage) : null;
      const all = literal === null ? stagesEntered(this.kinds).every((s) => waking.includes(s)) : waking.includes(literal);
      if (all) return `SELECT 1 FROM ${rows}`;
      if (literal === null) where.push(`stage IN ${stageList(waking)}`);
    }
    if (wakesByPartition(this.kinds)) where.push("topic IS NOT NULL");
    return where.length === 0 ? null : `SELECT 1 FROM ${rows} WHERE ${where.join(" OR ")}`;
  }
}

/** A stage change of a statement (see {@link PgTransition}). */
export const transition = (spec: PgTransitionSpec) => new PgTransition(spec);

/**
 * The CTEs that end a statement's stage changes, after its own CTEs (the
 * text starts with a comma): the counter CTEs of every transition's moves
 * in namespace `ns` (SQL, e.g. `$1`), then, when some transition wakes, a
 * `notified` CTE sending `pg_notify(channel, payload)` once if any of their
 * rows entered a waking stage. The statement must read `notified` (e.g.
 * `(SELECT count(*) FROM notified)`): a plain SELECT CTE runs only when read.
 * Throws when a transition wakes and no `notify` is given: a statement that
 * makes work ready must say whom to wake.
 *
 * `alsoWake` (optional, default none): SQL `SELECT 1 FROM … [WHERE …]` of
 * rows whose change makes work ready without a waking stage, ORed into the
 * same one wake-up. X2: a keyed job that finishes frees its unique key, so a
 * job kept `pending` after it (skipped by the claims while the key's `active`
 * slot was held) becomes claimable, though the finished row entered no
 * waking stage. Given, it needs `notify` like a waking transition.
 */
export function transitionTail(
  schema: string,
  ns: string,
  transitions: readonly PgTransition[],
  notify?: readonly [string, string],
  alsoWake?: string,
): string {
  const counted = PostgresStageCounters.countMoves(schema, ns, transitions.map((t) => t.moves).join(" UNION ALL "));
  const wakes = transitions.map((t) => t.wake).filter((w) => w !== null);
  if (alsoWake !== undefined) wakes.push(alsoWake);
  if (wakes.length === 0) return counted;
  if (notify === undefined) throw new Error(`a statement of ${transitions.flatMap((t) => t.kinds).join(", ")} makes work ready: pass its notify parameters`);
  const [channel, payload] = notify;
  const single = wakes.length === 1 && !wakes[0]!.includes(" WHERE ");
  const from = single ? `${wakes[0]!.slice("SELECT 1 FROM ".length)} LIMIT 1` : `(${wakes.join(" UNION ALL ")} LIMIT 1) x`;
  return `${counted}, notified AS (
  SELECT pg_notify(${channel}, ${payload}) FROM ${from}
)`;
}

/**
 * The `woken` CTE of a statement that makes jobs terminal (X6): one
 * notification on the done channel (`channel`, SQL of a parameter; empty
 * payload, the waiters re-read their rows) when a row of the CTE `rows`
 * matching `where` is awaited, at most once per statement. The text starts
 * with a comma: it follows the statement's own CTEs, e.g. after
 * {@link transitionTail}.
 *
 * It is a different signal from the stage wake-up of {@link transitionTail}
 * (work became ready, for the fetchers): this one tells `waitFor` (which
 * marks its row awaited after it LISTENs) that an outcome committed, and
 * only for awaited rows, so for rows nobody awaits it costs a filter over
 * rows the statement already holds. `rows` must return `awaited`. Every
 * terminal statement (finish, finishSuccess, successNext, failChildren,
 * forceFail) builds it here. The statement must read `woken` (e.g.
 * `(SELECT count(*) FROM woken)`), else PostgreSQL skips it.
 */
export const awaitedNotify = (rows: string, channel: string, where = "true") => `, woken AS (
  SELECT pg_notify(${channel}, '') FROM ${rows} WHERE awaited AND ${where} LIMIT 1
)`;
