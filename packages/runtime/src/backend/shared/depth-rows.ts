/**
 * The depth reads' rows as the seam's results, the same on both backends:
 * each dialect sums its counters its own way (PostgreSQL over shards) into
 * rows of the same columns (`topic`, `partition_no`, `lease_owner`,
 * `lease_expires_at`, `head_id`, `partitions`, `unfinished`; bigints may
 * come back as strings).
 */
import type { PartitionDepthResult, PartitionListResult, TopicDepthResult } from "../backend.js";
import type { Row } from "./job-rows.js";

export function partitionDepthFromRows(rows: readonly Row[]): PartitionDepthResult {
  return {
    partitions: rows.map((r) => ({
      topic: String(r.topic),
      partition: Number(r.partition_no),
      unfinished: Number(r.unfinished),
      leaseOwner: (r.lease_owner as string | null) ?? null,
    })),
  };
}

export function topicDepthFromRows(rows: readonly Row[]): TopicDepthResult {
  return { topics: rows.map((r) => ({ topic: String(r.topic), partitions: Number(r.partitions), unfinished: Number(r.unfinished) })) };
}

export function partitionListFromRows(rows: readonly Row[]): PartitionListResult {
  return {
    partitions: rows.map((r) => ({
      topic: String(r.topic),
      partition: Number(r.partition_no),
      headJobId: (r.head_id as string | null) ?? null,
      depth: Number(r.unfinished),
      leaseOwner: (r.lease_owner as string | null) ?? null,
      leaseExpiresAt: r.lease_expires_at === null || r.lease_expires_at === undefined ? null : Number(r.lease_expires_at),
    })),
  };
}
