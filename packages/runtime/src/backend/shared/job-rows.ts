/**
 * Row handling that is the same on every backend: both store `later_jobs`
 * with the same columns (times as integer ms; the PostgreSQL driver returns
 * bigints as strings, hence `Number`).
 */
import { parseStageHistory, type JobStage } from "../../core/job-stage.js";
import type { CancelledClaim, ClaimedJob, ClaimKey, JobRecord } from "../backend.js";
import { groupOfStored } from "./ungrouped-group.js";

/** A row as a driver returns it. */
export type Row = Record<string, unknown>;

/**
 * The columns {@link jobRecordFromRow} reads, named rather than `*`: a
 * prepared statement's result type then stays the same when a migration
 * adds a column while it runs.
 */
export const JOB_RECORD_COLUMNS = [
  "id",
  "job_type",
  "payload",
  "stage",
  "attempt",
  "run_at",
  "parent_id",
  "lease_owner",
  "lease_expires_at",
  "last_error",
  "progress",
  "stages",
  "created_at",
  "updated_at",
  "expires_at",
  "topic",
  "partition_no",
  "seq",
  "priority",
  "unique_key",
  "unique_slot",
  "result",
  "meta",
  "group_key",
] as const;

/** A `later_jobs` row as the seam's {@link JobRecord}. */
export function jobRecordFromRow(r: Row): JobRecord {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: String(r.id),
    jobType: String(r.job_type),
    payload: String(r.payload),
    stage: r.stage as JobStage,
    attempt: Number(r.attempt),
    runAt: Number(r.run_at),
    parentId: (r.parent_id as string | null) ?? null,
    leaseOwner: (r.lease_owner as string | null) ?? null,
    leaseExpiresAt: num(r.lease_expires_at),
    lastError: (r.last_error as string | null) ?? null,
    progress: (r.progress as string | null | undefined) ?? null,
    stages: parseStageHistory(String(r.stages)),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    expiresAt: num(r.expires_at),
    topic: (r.topic as string | null | undefined) ?? null,
    partition: num(r.partition_no),
    seq: num(r.seq),
    priority: Number(r.priority ?? 0),
    uniqueKey: (r.unique_key as string | null | undefined) ?? null,
    uniqueSlot: (r.unique_slot as "pending" | "active" | null | undefined) ?? null,
    result: (r.result as string | null | undefined) ?? null,
    meta: storedMeta(r.meta),
    group: groupOfStored(r.group_key),
  };
}

/** The claims a renewal statement returned (`id`, `attempt` rows) that are still the attempt this server holds. */
export function renewedClaims(held: ReadonlyMap<string, number>, rows: readonly Row[]): ClaimKey[] {
  const renewed: ClaimKey[] = [];
  for (const r of rows) {
    const id = String(r.id);
    if (held.get(id) === Number(r.attempt)) renewed.push({ id, attempt: Number(r.attempt) });
  }
  return renewed;
}

/** A stored `timeout_ms` (PostgreSQL bigints come back as strings): ms, or null when the job was enqueued without one. */
export function storedTimeout(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

/** A stored `meta` (X10): its JSON text, or null when the job was enqueued without metadata. */
export function storedMeta(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** A stored `retry_policy`: its JSON text, or null when the job was enqueued without an explicit policy. */
export function storedPolicy(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** The cancelled claims among `rows` (`id`, `attempt`, `note` rows): still the attempt held, with the cancel's reason (X3). */
export function cancelledClaims(held: ReadonlyMap<string, number>, rows: readonly Row[]): CancelledClaim[] {
  return rows
    .filter((r) => held.get(String(r.id)) === Number(r.attempt))
    .map((r) => ({ id: String(r.id), attempt: Number(r.attempt), reason: typeof r.note === "string" && r.note !== "" ? r.note : null }));
}

/** A claimed row (object form: `id, job_type, payload, attempt, retry_policy, run_at, timeout_ms, meta`) as the seam's {@link ClaimedJob}. */
export function claimedJob(r: Row): ClaimedJob {
  return {
    id: String(r.id),
    jobType: String(r.job_type),
    payload: String(r.payload),
    attempt: Number(r.attempt),
    retryPolicy: storedPolicy(r.retry_policy),
    runAt: Number(r.run_at),
    timeoutMs: storedTimeout(r.timeout_ms),
    meta: storedMeta(r.meta),
  };
}
