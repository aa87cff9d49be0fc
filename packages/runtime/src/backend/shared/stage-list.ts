/**
 * A set of stages (`CLAIMABLE_STAGES`, `TERMINAL_STAGES`, ... of
 * `core/job-stage.ts`) as a SQL list literal: `('enqueued', 'delayed',
 * 'requeued')`. Written into the statement text rather than bound, so the
 * planners can match the partial indexes whose predicates name the same
 * list (SQLite compares the expressions; PostgreSQL must see the constants
 * to prove the predicate for a generic plan). Stage names are plain words,
 * never user input, so quoting them is enough.
 */
import { sql, type RawBuilder } from "kysely";
import { CLAIMABLE_STAGES, type JobStage } from "../../core/job-stage.js";
import { sqliteCompiler, type StatementCompiler } from "./shared-statement.js";

export function stageList(stages: readonly JobStage[]): string {
  return `(${stages.map((s) => `'${s}'`).join(", ")})`;
}

/**
 * The same set as a disjunction, `(stage = 'enqueued' OR stage = 'delayed'
 * OR ...)`: how SQLite's ready indexes write their predicate (migration 20).
 * SQLite evaluates a partial index's predicate for every row it writes, and
 * an IN list there builds an ephemeral table each time (about 1.3 µs per
 * written row, measured); the disjunction costs nothing measurable. A query
 * meant to use such an index must repeat the term as written (SQLite
 * matches the predicate's terms by their expression).
 */
export function stageOneOf(stages: readonly JobStage[]): string {
  return `(${stages.map((s) => `stage = '${s}'`).join(" OR ")})`;
}

/**
 * The ready index's stage term for a statement written once for both
 * dialects: as each dialect's `later_jobs_ready` writes it (SQLite: the
 * disjunction of {@link stageOneOf}; PostgreSQL: the IN list).
 */
export function claimableStageTerm(db: StatementCompiler): RawBuilder<boolean> {
  return sql<boolean>`${sql.raw(db === sqliteCompiler ? stageOneOf(CLAIMABLE_STAGES) : `stage in ${stageList(CLAIMABLE_STAGES)}`)}`;
}
