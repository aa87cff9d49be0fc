/**
 * A set of stages (`CLAIMABLE_STAGES`, `TERMINAL_STAGES`, ... of
 * `core/job-stage.ts`) as a SQL list literal: `('enqueued', 'delayed',
 * 'requeued')`. Written into the statement text rather than bound, so the
 * planners can match the partial indexes whose predicates name the same
 * list (SQLite compares the expressions; PostgreSQL must see the constants
 * to prove the predicate for a generic plan). Stage names are plain words,
 * never user input, so quoting them is enough.
 */
import type { JobStage } from "../../core/job-stage.js";

export function stageList(stages: readonly JobStage[]): string {
  return `(${stages.map((s) => `'${s}'`).join(", ")})`;
}
