/**
 * Takes a migrated test database back to an older migration, so a migration
 * test can write rows as that schema's code did and then run the
 * migrations again: the statements undo what each later migration added
 * (docs/storage.md lists them), newest first. Forgetting them in
 * `later_migrations` is left to the caller, which knows its version.
 *
 * Every migration test that rewinds past a migration must undo it, so a new
 * migration is added here once, not in each test.
 */

/** A backend's name as `BACKENDS` spells it. */
export type RewindDialect = "sqlite" | "postgres";

/**
 * How far back {@link migrationRewind} goes:
 * - `job-progress`: undoes the newest (SQLite 22, PostgreSQL 24) down to
 *   11 and 9 (job progress): what was
 *   added to `later_jobs`, `later_servers` (11) and `later_paused` (13).
 *   The log storage migrations (SQLite 8 and 10, PostgreSQL 10) are left to
 *   the caller, which tests them. 16 (cancelled stage) only rebuilds
 *   indexes and a CHECK: it applies again as it is, as do PostgreSQL's 22
 *   (an index rebuilt) and 23 (column statistics targets).
 * - `retained-log`: all of the above, then the dashboard migration
 *   (SQLite 7, PostgreSQL 8) and the retained log (SQLite 6, PostgreSQL 7)
 *   with its record storage, so the next applied is the one before them.
 */
export type RewindTarget = "job-progress" | "retained-log";

/** The statements (newest migration first) that take a database at the latest migration back to before `target`. */
export function migrationRewind(dialect: RewindDialect, target: RewindTarget): string[] {
  const statements = [...UNGROUPED, ...PARTITION_RUNS, ...GROUPS, ...LIMITS, ...FAN_IN[dialect], ...JOB_RESULT[dialect], ...AFTER_LOG_STORAGE];
  if (target === "retained-log") statements.push(...DASHBOARD[dialect], ...logTables(dialect));
  return statements;
}

/** SQLite 22, PostgreSQL 24, the ungrouped group (X9): its index, the same on both backends (the rows it moved keep their group ''). */
const UNGROUPED = ["DROP INDEX later_jobs_ready_ungrouped"];

/** 21, partition runs (P3): the same on both backends. */
const PARTITION_RUNS = ["ALTER TABLE later_partitions DROP COLUMN run_until_seq", "ALTER TABLE later_partitions DROP COLUMN careful_until_seq"];

/** 20, groups (X9): the same on both backends; the index first (SQLite drops no column an index names). `later_limits` goes with 19. */
const GROUPS = ["DROP INDEX later_jobs_ready_group", "ALTER TABLE later_jobs DROP COLUMN group_key"];

/** 19, limits (X9): the same on both backends. */
const LIMITS = ["DROP TABLE later_limits"];

/** 18, fan-in (X5): its trigger first (it reads `parents_left`); PostgreSQL's trigger calls a function. */
const FAN_IN: Record<RewindDialect, string[]> = {
  sqlite: ["DROP TRIGGER later_job_parents_delete", "DROP TABLE later_job_parents", "ALTER TABLE later_jobs DROP COLUMN parents_left"],
  postgres: ["DROP FUNCTION later_job_parents_delete() CASCADE", "DROP TABLE later_job_parents", "ALTER TABLE later_jobs DROP COLUMN parents_left"],
};

/** 17, job results (X6); PostgreSQL's also added `awaited`. */
const JOB_RESULT: Record<RewindDialect, string[]> = {
  sqlite: ["ALTER TABLE later_jobs DROP COLUMN result"],
  postgres: ["ALTER TABLE later_jobs DROP COLUMN result", "ALTER TABLE later_jobs DROP COLUMN awaited"],
};

/** 15 down to 11, and 9: the same on both backends. */
const AFTER_LOG_STORAGE = [
  // 15, priority and unique keys (X1, X2): the ready index back to (namespace, run_at).
  "DROP INDEX later_jobs_unique",
  "DROP INDEX later_jobs_ready",
  "CREATE INDEX later_jobs_ready ON later_jobs (namespace, run_at) WHERE stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL",
  "ALTER TABLE later_jobs DROP COLUMN priority",
  "ALTER TABLE later_jobs DROP COLUMN unique_key",
  "ALTER TABLE later_jobs DROP COLUMN unique_slot",
  // 14, job meta (X10).
  "ALTER TABLE later_jobs DROP COLUMN meta",
  // 13, paused (X4).
  "DROP TABLE later_paused",
  // 12, job timeouts.
  "ALTER TABLE later_jobs DROP COLUMN timeout_ms",
  // 11, the job types a server handles.
  "ALTER TABLE later_servers DROP COLUMN job_types",
  // 9, job progress (X8).
  "ALTER TABLE later_jobs DROP COLUMN progress",
];

/** The dashboard migration (SQLite 7, PostgreSQL 8): its tables, the list index, `entered`; PostgreSQL's also added the children index SQLite had from 1. */
const DASHBOARD: Record<RewindDialect, string[]> = {
  sqlite: dashboard(),
  postgres: [...dashboard(), "DROP INDEX later_jobs_parent"],
};

function dashboard(): string[] {
  return [
    ...["activity", "activity_marks", "queue_length", "servers"].map((t) => `DROP TABLE later_${t}`),
    "DROP INDEX later_jobs_topic_list",
    "ALTER TABLE later_stage_counts DROP COLUMN entered",
  ];
}

/** The retained log's tables (SQLite 6, PostgreSQL 7); SQLite's records are in `later_log_batches` since its migration 10. */
function logTables(dialect: RewindDialect): string[] {
  const records = dialect === "sqlite" ? "batches" : "records";
  return ["topics", "partitions", records, "group_partitions", "group_members"].map((t) => `DROP TABLE later_log_${t}`);
}
