/**
 * The retained-log part of the seam (`backend.log`): topics, records with
 * dense offsets, and consumer groups' committed offsets.
 *
 * Offsets: each partition has one row holding its next offset. An append
 * takes offsets from it in the appending transaction (PostgreSQL: `UPDATE
 * ... RETURNING`, whose row lock serialises the partition's appenders until
 * commit; SQLite: the single writer of `BEGIN IMMEDIATE`), so offsets are
 * dense and increasing per partition, and a rolled-back append gives its
 * offsets back. The caller (`RetainedLog`) has checked topic, partition and
 * record before: the store trusts its params.
 *
 * Group partitions: one row per (group, partition) holds the committed
 * offset (the next offset the group reads) and the lease epoch. A missing
 * row is epoch 0 with nothing committed.
 */

/** The log statements of one backend, scoped to its namespace. `Trx`: the caller-owned transactions `recordAppendIn` accepts. */
export interface LogStore<Trx = unknown> {
  /**
   * Records the topics with one partition row each, unless present. A topic
   * stored with another partition count throws `PartitionCountMismatchError`
   * and writes nothing. Retention settings of a present topic are updated.
   */
  topicRegister(params: LogTopicRegisterParams): Promise<void>;
  /** Appends records (any partitions of one topic) in one transaction; resolves to their offsets, in order. */
  recordAppendMany(params: LogRecordAppendParams): Promise<number[]>;
  /** As {@link recordAppendMany}, in the caller's transaction; anything else throws `InvalidArgumentError` saying what it got. */
  recordAppendIn(transaction: Trx, params: LogRecordAppendParams): Promise<number[]>;
  /** Records from `fromOffset` in offset order; below the oldest retained offset throws `OffsetOutOfRangeError`. */
  recordRead(params: LogRecordReadParams): Promise<LogRecordRow[]>;
  /**
   * Moves the partition's oldest retained offset to `beforeOffset` (at most
   * its end) and deletes the records below it; resolves to how many were
   * deleted. The retention sweep's primitive. PostgreSQL deletes exactly
   * those records. SQLite stores one append's records of a partition as one
   * batch and deletes whole batches: one straddling the cut stays (reads
   * below the oldest retained offset are refused all the same) until a
   * later cut passes its last record, and its records count then, so over a
   * run of cuts each record counts once.
   */
  recordTruncate(params: LogRecordTruncateParams): Promise<number>;
  /**
   * Advances a group's committed offset if `epoch` is the group partition's
   * current one (else `StaleEpochError`) and `offset` is at most the
   * partition's end (else `OffsetOutOfRangeError`); never moves it back.
   * Resolves to the committed offset after the call.
   */
  offsetCommit(params: LogOffsetCommitParams): Promise<number>;
  /** The group's committed offsets, per partition that has one, by partition. */
  offsetList(params: LogGroupParams): Promise<LogCommittedRow[]>;
  /** Per partition of the topic: its end, oldest retained offset and the group's committed offset (null: none). */
  lagList(params: LogGroupParams): Promise<LogLagRow[]>;
  /**
   * The retention sweep's cuts, computed in one statement over every log
   * topic of the namespace with the settings stored for it: per partition
   * whose oldest retained offset retention lets move, that offset and the
   * cut (records below it may go). The cut is the higher of the first
   * offset not older than `retention_ms` (null: `defaultRetentionMs`) and
   * `next_offset - retain_records`; with `min_retain_until_committed`, at
   * most the lowest committed offset of the topic's groups on the partition,
   * where a group known on the topic (a group partition row or a member)
   * without a commit on it holds everything. Both dialects run the shared
   * text of `log-statements.ts`. Read-only: {@link recordTruncate} deletes.
   */
  retentionCutList(params: LogRetentionCutParams): Promise<LogRetentionCutRow[]>;
  /** The namespace's log topics (or only `topic`), by name: settings and each partition's start and end offsets. One statement (for `later log topics`). */
  topicList(params: LogTopicListParams): Promise<LogTopicRow[]>;
  /** The namespace's group partitions (of `topic`, or all), by topic, group and partition: committed offset, epoch, lease. One statement (for `later log groups`). */
  groupList(params: LogTopicListParams): Promise<LogGroupPartitionRow[]>;

  // Consumer-group members and partition leases (`consume()`, docs/semantics.md L3).
  /** Records the member as live until `expiresAt` (insert or refresh), and deletes the group's members expired by `now`. */
  memberHeartbeat(params: LogMemberParams & { expiresAt: number; now: number }): Promise<void>;
  /** Deletes the member at once (a graceful stop): the others see it gone on their next look. */
  memberRemove(params: LogMemberParams): Promise<void>;
  /** The group's members live at `now` (expiry after it), by id. */
  memberList(params: LogGroupParams & { now: number }): Promise<string[]>;
  /**
   * Takes or renews the lease of a group partition until `expiresAt`, if it
   * is free (never leased, released, or expired by `now`) or already the
   * member's; one statement. Taking it from another owner (or from none)
   * moves the epoch on, so the previous holder's commits become stale;
   * renewing keeps it. Resolves to the epoch and committed offset, or null
   * when another member holds a live lease.
   */
  leaseClaim(params: LogMemberParams & { partition: number; expiresAt: number; now: number }): Promise<LogLeaseRow | null>;
  /** Frees the member's lease of the group partition (if it still holds it) so another member can take it at once; the epoch stays. */
  leaseRelease(params: LogMemberParams & { partition: number }): Promise<void>;
}

export interface LogMemberParams extends LogGroupParams {
  memberId: string;
}

export interface LogLeaseRow {
  epoch: number;
  /** The next offset the group reads; null: nothing committed. */
  committedOffset: number | null;
}

export interface LogRetentionCutParams {
  now: number;
  /** Age limit of a topic stored without `retention_ms`, ms. */
  defaultRetentionMs: number;
}

export interface LogRetentionCutRow {
  topic: string;
  partition: number;
  startOffset: number;
  /** Records below this offset may be deleted; above `startOffset`. */
  cutOffset: number;
}

export interface LogTopicSpec {
  name: string;
  partitions: number;
  retentionMs: number | null;
  retainRecords: number | null;
  minRetainUntilCommitted: boolean;
}

export interface LogTopicRegisterParams {
  topics: readonly LogTopicSpec[];
  now: number;
}

/** One record to append, checked and encoded. */
export interface LogRecordInsert {
  partition: number;
  key: string | null;
  value: Uint8Array;
  /** JSON text of the headers, or null. */
  headers: string | null;
}

export interface LogRecordAppendParams {
  topic: string;
  records: readonly LogRecordInsert[];
  /** The records' timestamp, ms. */
  now: number;
}

export interface LogRecordReadParams {
  topic: string;
  partition: number;
  fromOffset: number;
  limit: number;
}

export interface LogRecordRow {
  offset: number;
  key: string | null;
  /**
   * The record's bytes, never the driver's `Buffer` itself. PostgreSQL: a
   * copy each. SQLite: a view into one buffer per batch holding the values
   * the read returned from that batch (`sqlite-log-statements.ts`,
   * `recordsOfBatches`).
   */
  value: Uint8Array;
  headers: string | null;
  timestamp: number;
}

export interface LogRecordTruncateParams {
  topic: string;
  partition: number;
  beforeOffset: number;
}

export interface LogGroupParams {
  topic: string;
  group: string;
}

export interface LogOffsetCommitParams extends LogGroupParams {
  partition: number;
  epoch: number;
  offset: number;
  now: number;
}

export interface LogCommittedRow {
  partition: number;
  offset: number;
}

export interface LogLagRow {
  partition: number;
  endOffset: number;
  startOffset: number;
  committedOffset: number | null;
}

export interface LogTopicListParams {
  /** Only this topic (none when it is not stored). Default: every topic of the namespace. */
  topic?: string | undefined;
}

export interface LogTopicRow extends LogTopicSpec {
  /** One entry per partition, by partition. */
  partitionOffsets: { partition: number; startOffset: number; endOffset: number }[];
}

export interface LogGroupPartitionRow {
  topic: string;
  group: string;
  partition: number;
  /** The next offset the group reads; null: nothing committed. */
  committedOffset: number | null;
  epoch: number;
  leaseOwner: string | null;
  /** ms; null: never leased. */
  leaseExpiresAt: number | null;
}
