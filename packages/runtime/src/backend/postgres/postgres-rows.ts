/** Rows as the `pg` driver returns them: bigint columns arrive as strings and are turned into numbers here. */
import type { JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";

export type Row = Record<string, unknown>;

/** A `later_jobs` row as a {@link B.JobRecord} (times: integer ms). */
export function toRecord(r: Row): B.JobRecord {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: String(r.id), jobType: String(r.job_type), payload: String(r.payload), stage: r.stage as JobStage,
    attempt: Number(r.attempt), runAt: Number(r.run_at), parentId: (r.parent_id as string | null) ?? null,
    leaseOwner: (r.lease_owner as string | null) ?? null, leaseExpiresAt: num(r.lease_expires_at),
    lastError: (r.last_error as string | null) ?? null,
    stages: (JSON.parse(String(r.stages)) as [JobStage, number][]).map(([stage, at]) => ({ stage, at })),
    createdAt: Number(r.created_at), updatedAt: Number(r.updated_at), expiresAt: num(r.expires_at),
  };
}
