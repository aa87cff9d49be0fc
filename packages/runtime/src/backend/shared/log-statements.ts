/**
 * The retained log's statements, written once as SQL text that means the
 * same on SQLite and PostgreSQL: parameters are `$n` (SQLite runs them
 * through {@link positional}), tables are qualified by the dialect
 * (`table`), `"offset"` and `"timestamp"` are quoted (keywords on both).
 * What differs stays in the dialect's store: PostgreSQL locks the group
 * partition row it checks (`FOR UPDATE`), SQLite's `BEGIN IMMEDIATE` already
 * holds the write lock. SQLite stores records as batches
 * (`sqlite/sqlite-log-statements.ts`): `recordInsert`, `recordRead` and
 * `recordDelete` are PostgreSQL's, and retention's age cut is passed in.
 *
 * Also the pieces both dialects' log transactions share: record encoding
 * and decoding, the partition order appends lock in, and the errors.
 */
import { OffsetOutOfRangeError, StaleEpochError, UnknownTopicError } from "../../errors.js";
import type * as B from "../backend.js";
import type { Row } from "./job-rows.js";

export class LogStatements {
  readonly topicRead: string;
  readonly topicUpsert: string;
  readonly partitionInsert: string;
  readonly offsetTake: string;
  readonly recordInsert: string;
  readonly partitionRead: string;
  readonly recordRead: string;
  readonly recordDelete: string;
  readonly startMove: string;
  readonly groupRead: string;
  readonly groupInsert: string;
  readonly groupCommit: string;
  readonly offsetList: string;
  readonly lagList: string;
  readonly retentionCuts: string;
  readonly topicList: string;
  readonly groupList: string;
  readonly memberUpsert: string;
  readonly memberExpire: string;
  readonly memberDelete: string;
  readonly memberList: string;
  readonly leaseClaim: string;
  readonly leaseRelease: string;

  /**
   * `table("later_log_topics")` gives the name as the dialect's statements
   * write it. `agedOffset`: retention's age cut as a subquery over the
   * dialect's record storage (aliases `p` for the partition row and `t` for
   * the topic row, `$2` now, `$3` the default retention): the first offset at
   * or after `p.start_offset` whose records are not older than the topic's
   * retention, NULL when there is none (an offset below `p.start_offset`
   * means no age cut). Default: the first such row of `later_log_records`
   * (PostgreSQL); SQLite stores record batches and passes its own.
   */
  constructor(table: (name: string) => string, agedOffset?: string) {
    const topics = table("later_log_topics");
    const parts = table("later_log_partitions");
    const records = table("later_log_records");
    const groups = table("later_log_group_partitions");
    const members = table("later_log_group_members");
    const part = "namespace = $1 AND topic = $2 AND partition_no = $3";
    this.topicRead = `SELECT topic, partitions FROM ${topics} WHERE namespace = $1 AND topic = $2`;
    this.topicUpsert = `INSERT INTO ${topics} (namespace, topic, partitions, retention_ms, retain_records, min_retain_until_committed, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (namespace, topic) DO UPDATE SET retention_ms = excluded.retention_ms, retain_records = excluded.retain_records,
  min_retain_until_committed = excluded.min_retain_until_committed`;
    this.partitionInsert = `INSERT INTO ${parts} (namespace, topic, partition_no) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`;
    // The row lock of this UPDATE (PostgreSQL) is held to commit: the partition's appenders take turns, and a rollback returns the offsets.
    this.offsetTake = `UPDATE ${parts} SET next_offset = next_offset + $4 WHERE ${part} RETURNING next_offset - $4 AS first`;
    this.recordInsert = `INSERT INTO ${records} (namespace, topic, partition_no, "offset", key, value, headers, "timestamp")
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`;
    this.partitionRead = `SELECT next_offset, start_offset FROM ${parts} WHERE ${part}`;
    this.recordRead = `SELECT "offset", key, value, headers, "timestamp" FROM ${records}
WHERE ${part} AND "offset" >= $4 ORDER BY "offset" LIMIT $5 + 0`;
    this.recordDelete = `DELETE FROM ${records} WHERE ${part} AND "offset" < $4`;
    this.startMove = `UPDATE ${parts} SET start_offset = $4 WHERE ${part} AND start_offset < $4`;
    this.groupRead = `SELECT committed_offset, epoch FROM ${groups} WHERE ${part} AND group_name = $4`;
    this.groupInsert = `INSERT INTO ${groups} (namespace, topic, partition_no, group_name, committed_offset, epoch, updated_at)
VALUES ($1, $2, $3, $4, $5, 0, $6) ON CONFLICT DO NOTHING RETURNING epoch`;
    this.groupCommit = `UPDATE ${groups} SET committed_offset = $5, updated_at = $6
WHERE ${part} AND group_name = $4 AND epoch = $7 AND (committed_offset IS NULL OR committed_offset < $5)`;
    this.offsetList = `SELECT partition_no, committed_offset FROM ${groups}
WHERE namespace = $1 AND topic = $2 AND group_name = $3 AND committed_offset IS NOT NULL ORDER BY partition_no`;
    this.lagList = `SELECT p.partition_no, p.next_offset, p.start_offset, g.committed_offset FROM ${parts} p
LEFT JOIN ${groups} g ON g.namespace = p.namespace AND g.topic = p.topic AND g.partition_no = p.partition_no AND g.group_name = $3
WHERE p.namespace = $1 AND p.topic = $2 ORDER BY p.partition_no`;
    // $1 namespace, $2 now, $3 default retention. Greatest/least as CASE (SQLite has no GREATEST, PostgreSQL no two-argument max).
    // The age cut scans the partition's oldest records in offset order up to the first young one: the records it will delete, plus one.
    const aged =
      agedOffset ??
      `(SELECT r."offset" FROM ${records} r WHERE r.namespace = p.namespace AND r.topic = p.topic AND r.partition_no = p.partition_no
        AND r."offset" >= p.start_offset AND r."timestamp" >= $2 - COALESCE(t.retention_ms, $3) ORDER BY r."offset" LIMIT 1)`;
    const samePartition = "c.namespace = p.namespace AND c.topic = p.topic AND c.partition_no = p.partition_no";
    const uncommitted = (k: string) => `EXISTS (SELECT 1 FROM ${k === "k" ? groups : members} k WHERE k.namespace = p.namespace AND k.topic = p.topic
      AND NOT EXISTS (SELECT 1 FROM ${groups} c WHERE ${samePartition} AND c.group_name = k.group_name AND c.committed_offset IS NOT NULL))`;
    this.retentionCuts = `SELECT topic, partition_no, start_offset,
  CASE WHEN held = 1 AND floor_offset IS NOT NULL AND floor_offset < wanted THEN floor_offset ELSE wanted END AS cut_offset
FROM (
  SELECT topic, partition_no, start_offset, held, floor_offset, CASE WHEN aged > counted THEN aged ELSE counted END AS wanted
  FROM (
    SELECT p.topic, p.partition_no, p.start_offset, t.min_retain_until_committed AS held,
      COALESCE(${aged}, p.next_offset) AS aged,
      CASE WHEN t.retain_records IS NULL THEN 0 ELSE p.next_offset - t.retain_records END AS counted,
      CASE WHEN ${uncommitted("k")} OR ${uncommitted("m")} THEN p.start_offset
        ELSE (SELECT min(c.committed_offset) FROM ${groups} c WHERE ${samePartition}) END AS floor_offset
    FROM ${parts} p JOIN ${topics} t ON t.namespace = p.namespace AND t.topic = p.topic
    WHERE p.namespace = $1
  ) limits
) cuts
WHERE CASE WHEN held = 1 AND floor_offset IS NOT NULL AND floor_offset < wanted THEN floor_offset ELSE wanted END > start_offset
ORDER BY topic, partition_no`;
    // $2 NULL: every topic (the CAST gives PostgreSQL the type of a parameter it meets in `IS NULL` first).
    this.topicList = `SELECT t.topic, t.partitions, t.retention_ms, t.retain_records, t.min_retain_until_committed, p.partition_no, p.next_offset, p.start_offset
FROM ${topics} t LEFT JOIN ${parts} p ON p.namespace = t.namespace AND p.topic = t.topic
WHERE t.namespace = $1 AND (CAST($2 AS TEXT) IS NULL OR t.topic = $2) ORDER BY t.topic, p.partition_no`;
    this.groupList = `SELECT topic, group_name, partition_no, committed_offset, epoch, lease_owner, lease_expires_at FROM ${groups}
WHERE namespace = $1 AND (CAST($2 AS TEXT) IS NULL OR topic = $2) ORDER BY topic, group_name, partition_no`;
    // Consumer-group members and leases: $1 namespace, $2 topic, $3 group, $4 member.
    const member = "namespace = $1 AND topic = $2 AND group_name = $3";
    this.memberUpsert = `INSERT INTO ${members} (namespace, topic, group_name, member_id, expires_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (namespace, topic, group_name, member_id) DO UPDATE SET expires_at = excluded.expires_at`;
    this.memberExpire = `DELETE FROM ${members} WHERE ${member} AND expires_at <= $4`;
    this.memberDelete = `DELETE FROM ${members} WHERE ${member} AND member_id = $4`;
    this.memberList = `SELECT member_id FROM ${members} WHERE ${member} AND expires_at > $4 ORDER BY member_id`;
    // $5 partition, $6 lease expiry, $7 now. Takes a free, expired or own lease in one statement; a new owner moves the epoch on.
    this.leaseClaim = `INSERT INTO ${groups} AS g (namespace, topic, group_name, partition_no, committed_offset, epoch, lease_owner, lease_expires_at, updated_at)
VALUES ($1, $2, $3, $5, NULL, 1, $4, $6, $7)
ON CONFLICT (namespace, topic, group_name, partition_no) DO UPDATE SET
  epoch = CASE WHEN g.lease_owner = excluded.lease_owner THEN g.epoch ELSE g.epoch + 1 END,
  lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at, updated_at = excluded.updated_at
WHERE g.lease_owner IS NULL OR g.lease_owner = excluded.lease_owner OR g.lease_expires_at <= $7
RETURNING epoch, committed_offset`;
    this.leaseRelease = `UPDATE ${groups} SET lease_owner = NULL, lease_expires_at = NULL WHERE ${member} AND partition_no = $5 AND lease_owner = $4`;
  }
}

/** The rows of {@link LogStatements.topicList} (one per partition) as one entry per topic. */
export function topicsOfRows(rows: readonly Row[]): B.LogTopicRow[] {
  const topics: B.LogTopicRow[] = [];
  for (const r of rows) {
    let t = topics.at(-1);
    if (t?.name !== String(r.topic)) {
      t = {
        name: String(r.topic),
        partitions: Number(r.partitions),
        retentionMs: r.retention_ms === null ? null : Number(r.retention_ms),
        retainRecords: r.retain_records === null ? null : Number(r.retain_records),
        minRetainUntilCommitted: Number(r.min_retain_until_committed) === 1 || r.min_retain_until_committed === true,
        partitionOffsets: [],
      };
      topics.push(t);
    }
    if (r.partition_no !== null)
      t.partitionOffsets.push({ partition: Number(r.partition_no), startOffset: Number(r.start_offset), endOffset: Number(r.next_offset) });
  }
  return topics;
}

/** A row of {@link LogStatements.leaseClaim} (none: another member holds the lease). */
export function leaseOfRows(rows: readonly Row[]): B.LogLeaseRow | null {
  const r = rows[0];
  return r ? { epoch: Number(r.epoch), committedOffset: r.committed_offset === null ? null : Number(r.committed_offset) } : null;
}

/** A row of {@link LogStatements.groupList}. */
export function groupPartitionOfRow(r: Row): B.LogGroupPartitionRow {
  return {
    topic: String(r.topic),
    group: String(r.group_name),
    partition: Number(r.partition_no),
    committedOffset: r.committed_offset === null ? null : Number(r.committed_offset),
    epoch: Number(r.epoch),
    leaseOwner: r.lease_owner === null ? null : String(r.lease_owner),
    leaseExpiresAt: r.lease_expires_at === null ? null : Number(r.lease_expires_at),
  };
}

/**
 * A `$n` statement as SQLite's positional `?` text, and the order its
 * values bind in (a `$n` used twice binds twice). Computed once per text.
 */
export function positional(text: string): { text: string; order: number[] } {
  const order: number[] = [];
  const out = text.replace(/\$(\d+)/g, (_, n: string) => {
    order.push(Number(n) - 1);
    return "?";
  });
  return { text: out, order };
}

/** Runs one statement asynchronously (`text` with `$n` parameters) and resolves to its rows. */
export type LogRun = (text: string, values: unknown[]) => Promise<Row[]>;

/** The bytes as a Node `Buffer` over the same memory (both drivers bind a `Buffer` as a blob). */
export function valueBuffer(value: Uint8Array): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/** A stored record as the seam returns it: a fresh `Uint8Array` (not the driver's `Buffer`), numbers for offsets and times. */
export function recordOfRow(r: Row): B.LogRecordRow {
  return {
    offset: Number(r.offset),
    key: r.key === null || r.key === undefined ? null : String(r.key),
    value: new Uint8Array(r.value as Uint8Array),
    headers: r.headers === null || r.headers === undefined ? null : String(r.headers),
    timestamp: Number(r.timestamp),
  };
}

/** The partitions of `records`, ascending, with the indexes of their records: appenders lock partition rows in this order, so two never deadlock. */
export function byPartition(records: readonly B.LogRecordInsert[]): [number, number[]][] {
  const groups = new Map<number, number[]>();
  records.forEach((r, i) => {
    let list = groups.get(r.partition);
    if (!list) groups.set(r.partition, (list = []));
    list.push(i);
  });
  return [...groups.entries()].sort((a, b) => a[0] - b[0]);
}

/** A row of `retentionCuts` as the seam returns it. */
export function retentionCutOfRow(r: Row): B.LogRetentionCutRow {
  return { topic: String(r.topic), partition: Number(r.partition_no), startOffset: Number(r.start_offset), cutOffset: Number(r.cut_offset) };
}

/** The partition's end is `endOffset`: a commit beyond it is refused. */
export function commitBeyondEnd(params: B.LogOffsetCommitParams, endOffset: number, startOffset: number): OffsetOutOfRangeError {
  return new OffsetOutOfRangeError(
    `cannot commit offset ${params.offset} for group "${params.group}" on topic "${params.topic}" partition ${params.partition}: beyond the partition's end (end offset ${endOffset})`,
    startOffset,
    endOffset,
  );
}

/** A read from below the oldest retained offset, naming it. */
export function readBelowStart(params: B.LogRecordReadParams, oldest: number, end: number): OffsetOutOfRangeError {
  return new OffsetOutOfRangeError(
    `cannot read topic "${params.topic}" partition ${params.partition} from offset ${params.fromOffset}: the oldest retained offset is ${oldest} (older records were deleted by retention)`,
    oldest,
    end,
  );
}

export function staleEpoch(params: B.LogOffsetCommitParams, current: number): StaleEpochError {
  return new StaleEpochError(
    `commit of group "${params.group}" on topic "${params.topic}" partition ${params.partition} has epoch ${params.epoch}, but the partition's current epoch is ${current} (a partition no member has leased is at epoch 0; each lease moves it on); nothing was committed`,
    current,
  );
}

export function missingPartition(topic: string, partition: number): UnknownTopicError {
  return new UnknownTopicError(
    topic,
    partition,
    `log topic "${topic}" partition ${partition} is not in the database: open a RetainedLog with logTopic("${topic}", N) in its topics first`,
  );
}
