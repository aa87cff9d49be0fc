/**
 * The records of the retained log as the application sees them, and the
 * checks that turn one into what the backend stores. Every check runs
 * before anything is written: bad input throws a `LaterError` and changes
 * nothing.
 */
import type { LogRecordInsert } from "../backend/log-store.js";
import { nameProblem } from "../core/stored-name.js";
import { partitionForKey } from "../core/partition/partition-for-key.js";
import { InvalidArgumentError, RecordTooLargeError, describeValue } from "../errors.js";

/** Largest record value, in bytes (a string counts its UTF-8 bytes): 1 MiB. Larger values belong in object storage, with their address in the log. */
export const MAX_LOG_VALUE_BYTES = 1024 * 1024;
/** Longest record key, in UTF-16 code units (keys are well-formed Unicode without NUL, as stored names). */
export const MAX_LOG_KEY_LENGTH = 1024;
/** Largest headers object, in bytes of its JSON text: 64 KiB. */
export const MAX_LOG_HEADERS_BYTES = 64 * 1024;

/** One record to append: give `key` (its partition is `partitionForKey(key, partitions)`) or `partition`, not both. */
export interface LogRecordInput {
  /** Picks the partition by hash, as job partitions do: records of one key stay in order. */
  key?: string;
  /** The partition, an integer from 0 to the topic's count − 1. */
  partition?: number;
  /** The bytes to store; a string is stored as its UTF-8 bytes. At most {@link MAX_LOG_VALUE_BYTES}. */
  value: Uint8Array | string;
  /** String metadata, stored as JSON; at most {@link MAX_LOG_HEADERS_BYTES}. */
  headers?: Record<string, string>;
}

/** Where an appended record is: offsets start at 0 and are dense and increasing per partition. */
export interface LogPosition {
  topic: string;
  partition: number;
  offset: number;
}

/** A stored record, as `read` returns it. */
export interface LogRecord extends LogPosition {
  /** The key it was appended with, or null (appended to a `partition`). */
  key: string | null;
  /**
   * The bytes appended (a string value comes back as its UTF-8 bytes). On
   * SQLite a view into a buffer it shares with the other values that the
   * same `read` returned from its append (so replay need not allocate per
   * record): `value.buffer` holds them too, and holding the record keeps
   * them in memory; `value.slice()` copies it alone.
   */
  value: Uint8Array;
  /** The headers it was appended with (`{}` when none). */
  headers: Record<string, string>;
  /** When it was appended: the database's clock on PostgreSQL, the log's clock on SQLite. */
  timestamp: Date;
}

/** A consumer group's committed offset of one partition: the next offset the group reads. */
export interface CommittedOffset {
  partition: number;
  offset: number;
}

/** One partition's lag for a group (docs/semantics.md L5). */
/** A consumer group's lag over a whole topic (`RetainedLog.groupLag`, `server.logLag()`). */
export interface LogGroupLag {
  topic: string;
  group: string;
  /** Records appended but not yet committed by the group, summed over the topic's partitions. */
  lag: number;
}

export interface PartitionLag {
  partition: number;
  /** The last offset + 1 (0 when nothing was appended). */
  endOffset: number;
  /** The next offset the group reads: its committed offset, else the oldest retained offset (where a new group starts). */
  committedOffset: number;
  /** `endOffset − committedOffset`: records the group has not committed yet. */
  lag: number;
}

const utf8 = new TextEncoder();

/** Checks `record` for a topic of `partitions` partitions and encodes it; `where` names the call in messages. */
export function encodeLogRecord(where: string, topic: string, partitions: number, record: LogRecordInput): LogRecordInsert {
  if (record === null || typeof record !== "object" || Array.isArray(record)) {
    throw new InvalidArgumentError(`${where}: a record must be an object { key | partition, value, headers? }, got ${describeValue(record)}`);
  }
  for (const field of Object.keys(record)) {
    if (field !== "key" && field !== "partition" && field !== "value" && field !== "headers") {
      throw new InvalidArgumentError(`${where}: unknown record field "${field}" (a record has key | partition, value, headers)`);
    }
  }
  const { key, partition } = record;
  let target: number;
  if (key !== undefined && partition !== undefined) throw new InvalidArgumentError(`${where}: give a record's key or its partition, not both`);
  if (key !== undefined) {
    if (typeof key !== "string") throw new InvalidArgumentError(`${where}: a record's key must be a string, got ${describeValue(key)}`);
    const bad = nameProblem(key, MAX_LOG_KEY_LENGTH);
    if (bad !== null) throw new InvalidArgumentError(`${where}: a record's key ${bad}`);
    target = partitionForKey(key, partitions);
  } else if (partition !== undefined) {
    if (typeof partition !== "number" || !Number.isInteger(partition) || partition < 0 || partition >= partitions) {
      throw new InvalidArgumentError(
        `${where}: partition must be an integer from 0 to ${partitions - 1} (topic "${topic}" has ${partitions}), got ${describeValue(partition)}`,
      );
    }
    target = partition;
  } else {
    throw new InvalidArgumentError(`${where}: a record needs a key (hashed to a partition) or a partition`);
  }
  const value = valueBytes(where, record.value);
  if (value.byteLength > MAX_LOG_VALUE_BYTES) {
    throw new RecordTooLargeError(
      `${where}: a record's value is ${value.byteLength} bytes, over the limit of ${MAX_LOG_VALUE_BYTES} (1 MiB); store large values elsewhere and append their address`,
      MAX_LOG_VALUE_BYTES,
    );
  }
  return { partition: target, key: key ?? null, value, headers: headersJson(where, record.headers) };
}

function valueBytes(where: string, value: unknown): Uint8Array {
  if (typeof value === "string") return utf8.encode(value);
  if (value instanceof Uint8Array) return value;
  throw new InvalidArgumentError(
    `${where}: a record's value must be a Uint8Array or a string, got ${value === null ? "null" : typeof value === "object" ? "an object" : describeValue(value)}`,
  );
}

function headersJson(where: string, headers: unknown): string | null {
  if (headers === undefined) return null;
  if (headers === null || typeof headers !== "object" || Array.isArray(headers)) {
    throw new InvalidArgumentError(`${where}: headers must be an object of strings, got ${describeValue(headers)}`);
  }
  for (const [name, v] of Object.entries(headers)) {
    if (typeof v !== "string") throw new InvalidArgumentError(`${where}: header "${name}" must be a string, got ${describeValue(v)}`);
  }
  const json = JSON.stringify(headers);
  const bytes = utf8.encode(json).byteLength;
  if (bytes > MAX_LOG_HEADERS_BYTES) {
    throw new RecordTooLargeError(
      `${where}: a record's headers are ${bytes} bytes of JSON, over the limit of ${MAX_LOG_HEADERS_BYTES} (64 KiB)`,
      MAX_LOG_HEADERS_BYTES,
    );
  }
  return json;
}

/** Checks an offset argument: a non-negative safe integer. */
export function checkOffset(where: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${where}: ${name} must be a non-negative integer, got ${describeValue(value)}`);
  }
  return value;
}
