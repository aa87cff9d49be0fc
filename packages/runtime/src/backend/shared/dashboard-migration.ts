/**
 * The dashboard's tables (SQLite migration 7, PostgreSQL migration 8), one
 * text for both dialects where the types agree (`{int}` is INTEGER on
 * SQLite and bigint on PostgreSQL, `{schema}.` the PostgreSQL schema or
 * nothing). Shipped migrations never change: this text is frozen once
 * released.
 *
 * - `later_stage_counts.entered`: transitions into the stage so far, added
 *   by the same upsert that moves the stage's count, so the hot path writes
 *   no new row (docs/semantics.md D7). Starts at 0: only the deltas between samples are
 *   ever read.
 * - `later_activity`: per-second buckets, one row per second and series
 *   (`entered:<stage>`, `regular`, `partitioned`), kept an hour.
 * - `later_activity_marks`: the cumulative `entered` per stage at the last
 *   sample.
 * - `later_queue_length`: per-minute backlog samples, kept a week.
 * - `later_servers`: every server's heartbeat (host, pid, workers, busy).
 * - `later_jobs_topic_list`: the job list filtered by topic, in id order,
 *   for partitioned jobs only (a regular job's writes never touch it).
 */
export function dashboardMigrationSql(dialect: "sqlite" | "postgres"): string {
  const pg = dialect === "postgres";
  const int = pg ? "bigint" : "INTEGER";
  const s = pg ? "{schema}." : "";
  const withoutRowid = pg ? "" : " WITHOUT ROWID";
  return `
ALTER TABLE ${s}later_stage_counts ADD COLUMN entered ${int} NOT NULL DEFAULT 0;
CREATE TABLE ${s}later_activity (
  namespace text NOT NULL,
  at ${int} NOT NULL,
  series text NOT NULL,
  n ${int} NOT NULL,
  total_ms ${int} NOT NULL DEFAULT 0,
  max_ms ${int} NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, at, series)
)${withoutRowid};
CREATE TABLE ${s}later_activity_marks (
  namespace text NOT NULL,
  stage text NOT NULL,
  entered ${int} NOT NULL,
  sampled_at ${int} NOT NULL,
  PRIMARY KEY (namespace, stage)
)${withoutRowid};
CREATE TABLE ${s}later_queue_length (
  namespace text NOT NULL,
  at ${int} NOT NULL,
  ready ${int} NOT NULL,
  partition_backlog ${int} NOT NULL,
  PRIMARY KEY (namespace, at)
)${withoutRowid};
CREATE TABLE ${s}later_servers (
  namespace text NOT NULL,
  instance_id text NOT NULL,
  host text NOT NULL,
  pid ${int} NOT NULL,
  workers ${int} NOT NULL,
  busy ${int} NOT NULL,
  last_seen_at ${int} NOT NULL,
  expires_at ${int} NOT NULL,
  PRIMARY KEY (namespace, instance_id)
)${withoutRowid};
CREATE INDEX later_jobs_topic_list ON ${s}later_jobs (namespace, topic, id) WHERE topic IS NOT NULL;
${
  pg
    ? `-- Children of any stage (later_jobs_waiting holds waiting ones only); SQLite has later_jobs_parent since migration 1.
CREATE INDEX later_jobs_parent ON {schema}.later_jobs (parent_id, id) WHERE parent_id IS NOT NULL;`
    : ""
}`;
}
