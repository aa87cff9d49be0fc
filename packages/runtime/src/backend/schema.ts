/**
 * Kysely table types shared by every SQL backend. Times are integer
 * milliseconds since the epoch; payloads, retry policies and stage histories
 * are JSON text.
 */
import type { JobStage } from "../core/job-stage.js";

export interface LaterJobsTable {
  id: string;
  namespace: string;
  job_type: string;
  payload: string;
  stage: JobStage;
  /** Claims so far; the current claim's fencing token. */
  attempt: number;
  retry_policy: string;
  /** Not claimable before this time. */
  run_at: number;
  parent_id: string | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  last_error: string | null;
  /** JSON array of `[stage, atMs]` pairs: the stage history. */
  stages: string;
  created_at: number;
  updated_at: number;
  /** Set on terminal jobs; the expiry sweep deletes the row after it. */
  expires_at: number | null;
}

export interface LaterMigrationsTable {
  version: number;
  name: string;
  applied_at: number;
}

export interface LaterMaintenanceTable {
  namespace: string;
  task: string;
  last_run_at: number;
}

export interface LaterDatabase {
  later_jobs: LaterJobsTable;
  later_migrations: LaterMigrationsTable;
  later_maintenance: LaterMaintenanceTable;
}
