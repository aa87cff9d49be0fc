/**
 * SQLite migrations: numbered, forward-only, each applied once and recorded
 * in `later_migrations`. Never edit a shipped migration; add the next number.
 */
export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
}

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: "jobs",
    sql: `
CREATE TABLE later_jobs (
  id TEXT PRIMARY KEY NOT NULL,
  namespace TEXT NOT NULL,
  job_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  stage TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  retry_policy TEXT NOT NULL,
  run_at INTEGER NOT NULL,
  parent_id TEXT,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  last_error TEXT,
  stages TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER
);
-- The claim query's index: only claimable rows are in it, so it stays as
-- small as the backlog and a claim is one index range scan.
CREATE INDEX later_jobs_ready ON later_jobs (namespace, run_at)
  WHERE stage IN ('enqueued', 'delayed', 'requeued');
-- Lease renewal and the stuck-job sweep read running rows only.
CREATE INDEX later_jobs_running ON later_jobs (namespace, lease_expires_at)
  WHERE stage = 'running';
CREATE INDEX later_jobs_parent ON later_jobs (parent_id)
  WHERE parent_id IS NOT NULL;
CREATE INDEX later_jobs_expires ON later_jobs (namespace, expires_at)
  WHERE expires_at IS NOT NULL;
CREATE TABLE later_maintenance (
  namespace TEXT NOT NULL,
  task TEXT NOT NULL,
  last_run_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, task)
);
`,
  },
];
