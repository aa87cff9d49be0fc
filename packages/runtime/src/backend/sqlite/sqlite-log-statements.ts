/**
 * The SQLite retained log's record batches (`later_log_batches`, SQLite
 * migration 10): the statements that write, read and delete them, and the
 * encoding of one append's records of a partition as one batch row and back.
 * Everything else of the log runs the shared text of
 * `shared/log-statements.ts`.
 *
 * A batch holds the records one append wrote to one partition, as Kafka's
 * record batches do: offsets `first_offset` to `first_offset + record_count
 * - 1`, one timestamp, the values end to end in `"values"` with their
 * cumulative ends in `value_ends` (`record_count` uint32 big-endian; NULL for
 * a batch of one), keys and headers as JSON arrays of one entry per record
 * (string or null; NULL when every entry is null). One row per append and
 * partition instead of one per record is what lifts replay of small records
 * (better-sqlite3's cost is per row) and batched append of 2 KiB records
 * (values packed into consecutive pages, not a page each); see the migration
 * for the figures.
 */
import type * as B from "../backend.js";
import { byPartition, valueBuffer } from "../shared/log-statements.js";

/** `$1` namespace, `$2` topic, `$3` partition: one partition's batches. */
const part = "namespace = $1 AND topic = $2 AND partition_no = $3";

/** SQLite's statements of record batches (`$n` parameters, as the shared ones). */
export const SQLITE_LOG_STATEMENTS = {
  /** `$4` first offset, `$5` record count, `$6` timestamp, `$7` keys, `$8` headers, `$9` value ends, `$10` values. */
  batchInsert: `INSERT INTO later_log_batches (namespace, topic, partition_no, first_offset, record_count, "timestamp", keys, headers, value_ends, "values")
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
  /**
   * The batches holding offsets `$4` to `$4 + $5 - 1`, in offset order: the
   * one holding `$4` (the last to start at or before it) and those starting
   * before `$4 + $5`. Two range probes of the unique key.
   */
  batchRead: `SELECT first_offset, record_count, "timestamp", keys, headers, value_ends, "values" FROM later_log_batches
WHERE ${part} AND first_offset >= (SELECT coalesce(max(first_offset), 0) FROM later_log_batches WHERE ${part} AND first_offset <= $4)
  AND first_offset < $4 + $5
ORDER BY first_offset`,
  /**
   * Deletes the batches wholly below `$4`; returns each one's record count.
   * A batch straddling `$4` stays until a later cut passes its last record
   * (reads below the partition's start offset are refused anyway).
   */
  batchDelete: `DELETE FROM later_log_batches WHERE ${part} AND first_offset < $4 AND first_offset + record_count <= $4 RETURNING record_count`,
  /**
   * Retention's age cut (`LogStatements.retentionCuts`, aliases `p` and `t`,
   * `$2` now, `$3` default retention): the first offset of the partition's
   * oldest batch that is not older than the retention and not wholly below
   * the start offset. Scans the batches in offset order up to that one: those
   * the cut deletes, plus one (and the one straddling the start offset, when
   * an earlier cut left one). A straddling young batch gives an offset below
   * the start offset: no age cut, as the shared statement reads it.
   */
  agedOffset: `(SELECT b.first_offset FROM later_log_batches b
        WHERE b.namespace = p.namespace AND b.topic = p.topic AND b.partition_no = p.partition_no
        AND b.first_offset + b.record_count > p.start_offset AND b."timestamp" >= $2 - COALESCE(t.retention_ms, $3) ORDER BY b.first_offset LIMIT 1)`,
} as const;

/**
 * Most bytes of values in one batch: 1 MiB (a record of more is a batch of
 * its own). An append of more to one partition is stored as several
 * batches. Bounds what reading one record loads (the whole batch: a
 * consumer reading 100 records of 2 KiB at a time loads at most 1 MiB per
 * read), what a cut inside a batch leaves behind, and keeps a batch far
 * below SQLite's limit on a blob (1 GB). Batches of 1 MiB still hold 512
 * records of 2 KiB, plenty to amortise the per-row cost.
 */
export const MAX_BATCH_VALUE_BYTES = 1024 * 1024;

/** One batch of an append: its offsets are taken, then its row is inserted. */
export interface LogBatchStep {
  partition: number;
  /** The indexes (into the append's records) of this batch's records, in order. */
  indexes: number[];
  /** The values of `batchInsert` once the batch's first offset is known. */
  insert(first: number): unknown[];
}

/**
 * An append as one step per batch, by partition ascending (appenders take
 * partition rows in this order), then in record order: a partition's
 * records in batches of at most {@link MAX_BATCH_VALUE_BYTES} of values.
 * Both of the SQLite store's append paths (its own synchronous
 * transaction, the caller's asynchronous one) run these, taking the
 * batch's offsets then inserting it.
 */
export function logBatchSteps(namespace: string, params: B.LogRecordAppendParams): LogBatchStep[] {
  const steps: LogBatchStep[] = [];
  for (const [partition, all] of byPartition(params.records)) {
    let indexes: number[] = [];
    let bytes = 0;
    for (const index of all) {
      const size = params.records[index]!.value.byteLength;
      if (indexes.length > 0 && bytes + size > MAX_BATCH_VALUE_BYTES) {
        steps.push(batchStep(namespace, params, partition, indexes));
        indexes = [];
        bytes = 0;
      }
      indexes.push(index);
      bytes += size;
    }
    steps.push(batchStep(namespace, params, partition, indexes));
  }
  return steps;
}

function batchStep(namespace: string, params: B.LogRecordAppendParams, partition: number, indexes: number[]): LogBatchStep {
  return {
    partition,
    indexes,
    insert: (first) => {
      const records = indexes.map((i) => params.records[i]!);
      let keys: string | null = null;
      if (records.some((r) => r.key !== null)) keys = JSON.stringify(records.map((r) => r.key));
      let headers: string | null = null;
      if (records.some((r) => r.headers !== null)) headers = JSON.stringify(records.map((r) => r.headers));
      let ends: Buffer | null = null;
      let values: Buffer;
      if (records.length === 1) {
        values = valueBuffer(records[0]!.value);
      } else {
        const parts = records.map((r) => valueBuffer(r.value));
        values = Buffer.concat(parts);
        ends = Buffer.allocUnsafe(4 * parts.length);
        let end = 0;
        for (const [i, v] of parts.entries()) ends.writeUInt32BE((end += v.byteLength), 4 * i);
      }
      return [namespace, params.topic, partition, first, records.length, params.now, keys, headers, ends, values];
    },
  };
}

/**
 * The records of `batchRead`'s rows from `fromOffset` on, at most `limit`.
 *
 * Values are views (`subarray`), not a copy each: a copy per record
 * (`slice`, a fresh `ArrayBuffer` of 100 bytes each) held replay of
 * 100-byte records to 63 MB/s in `bench/log.js`; with views, 158 MB/s over
 * its timed passes (1.6 million records/s; see bench/README.md, "Retained
 * log"). Their buffer holds exactly the values this
 * read returned from the batch, never more: a batch read whole is viewed in
 * the driver's own copy of the row's blob; a batch read in part (the read
 * starts inside it, or its limit ends inside it) has just those values
 * copied once, and viewed there. So a record the application holds keeps
 * alive at most the other values its read returned from that batch (at most
 * {@link MAX_BATCH_VALUE_BYTES}), and `value.buffer` holds them too.
 */
export function recordsOfBatches(rows: readonly Record<string, unknown>[], fromOffset: number, limit: number): B.LogRecordRow[] {
  const out: B.LogRecordRow[] = [];
  for (const row of rows) {
    const first = Number(row.first_offset);
    const count = Number(row.record_count);
    const from = fromOffset > first ? fromOffset - first : 0;
    const to = Math.min(count, from + limit - out.length);
    if (from >= to) continue;
    const timestamp = Number(row.timestamp);
    const keys = row.keys === null ? null : (JSON.parse(row.keys as string) as (string | null)[]);
    const headers = row.headers === null ? null : (JSON.parse(row.headers as string) as (string | null)[]);
    const endsBlob = row.value_ends as Buffer | null;
    const ends = endsBlob === null ? null : new DataView(endsBlob.buffer, endsBlob.byteOffset, endsBlob.byteLength);
    const blob = row.values as Buffer;
    const endOf = (i: number) => (ends === null ? blob.byteLength : ends.getUint32(4 * i));
    let start = from === 0 ? 0 : endOf(from - 1);
    // What the values are views of, and where it starts in the batch's values.
    let base = 0;
    let bytes = new Uint8Array(blob.buffer, blob.byteOffset, blob.byteLength);
    if (from > 0 || to < count) {
      base = start;
      bytes = bytes.slice(start, endOf(to - 1));
    }
    for (let i = from; i < to; i++) {
      const end = endOf(i);
      out.push({
        offset: first + i,
        key: keys === null ? null : (keys[i] ?? null),
        value: bytes.subarray(start - base, end - base),
        headers: headers === null ? null : (headers[i] ?? null),
        timestamp,
      });
      start = end;
    }
    if (out.length >= limit) break;
  }
  return out;
}
