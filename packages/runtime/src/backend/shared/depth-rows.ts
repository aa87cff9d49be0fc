/**
 * The depth reads' rows as the seam's results, the same on both backends:
 * each dialect sums its counters its own way (PostgreSQL over shards) into
 * rows of the same columns (`topic`, `partition_no`, `lease_owner`,
 * `partitions`, `unfinished`; bigints may come back as strings).
 */
import type { PartitionDepthResult, TopicDepthResult } from "../backend.js";
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
