import type { JobStage } from "../../core/job-stage.js";
import type { JobRecord } from "../backend.js";
import type { Row } from "./sqlite-connection.js";

/** A `later_jobs` row as the seam's {@link JobRecord}. */
export function toJobRecord(r: Row): JobRecord {
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

interface KyselyExecutorLike {
  executeQuery(query: unknown): Promise<{ rows: unknown[] }>;
}

/** Whether `value` can run a compiled Kysely query (a Kysely instance or transaction). */
export function isKyselyExecutor(value: unknown): value is KyselyExecutorLike {
  return typeof value === "object" && value !== null && typeof (value as KyselyExecutorLike).executeQuery === "function";
}
