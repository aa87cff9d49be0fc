/**
 * Typed retained-log topics (docs/semantics.md L7): what a generated `openLogs()`
 * returns, one {@link TypedLog} per member of the schema's `interface Logs`.
 * Values are stored as JSON text (UTF-8 bytes) through the untyped
 * {@link RetainedLog}, refused before anything is written when they would
 * not come back as they went in (as job payloads are), and decoded on read
 * with their `Date` fields revived (as handlers get job payloads).
 */
import type { TransactionHandle } from "../backend/transaction-handle.js";
import { InvalidArgumentError, describeValue } from "../errors.js";
import type { RetainedLog } from "../retained-log/retained-log.js";
import type { ConsumeOptions, LogBatch, LogConsumer } from "../retained-log/log-consumer.js";
import type { CommittedOffset, LogPosition, LogRecord, LogRecordInput, PartitionLag } from "../retained-log/log-record.js";
import { encodePayload, jsonPayload } from "../core/encode-payload.js";
import { payloadDecoder, type DatePath } from "./job-catalog.js";

/** What the generated module knows about one declared log topic. */
export interface LogSpec {
  /** The topic's partition count (`@partitions N`), registered at open. */
  readonly partitions: number;
  /** The value field whose value is the record key (`@partitionKey FIELD`). Without it, each append names `{ key }` or `{ partition }`. */
  readonly partitionKey?: string;
  /** Its handle's name on `logs` (the member name in camelCase), when that is not the topic name itself. */
  readonly handle?: string;
  /** Paths of the value's `Date` fields. Default none. */
  readonly datePaths?: readonly DatePath[];
}

/** Every declared log topic, by stored topic name. */
export type LogCatalog = Readonly<Record<string, LogSpec>>;

/** Where a record of a topic without `@partitionKey` goes: a key (hashed, as `partitionForKey`) or a partition. */
export type LogTarget = { key: string; partition?: never } | { partition: number; key?: never };

/** String metadata stored with a record. */
export interface LogHeaders {
  headers?: Record<string, string>;
}

/** A typed record as `read` returns it: the untyped record with `value` decoded. */
export interface TypedLogRecord<T> extends LogPosition {
  key: string | null;
  value: T;
  headers: Record<string, string>;
  timestamp: Date;
}

/** Read, commit and lag: the same for every typed log topic. */
export interface TypedLogReader<T> {
  /** The stored topic name. */
  readonly topic: string;
  /** Up to `limit` (default 100) records of a partition from `fromOffset`, values decoded; see `RetainedLog.read`. */
  read(params: { partition: number; fromOffset: number; limit?: number }): Promise<TypedLogRecord<T>[]>;
  /** Commits a group's next offset of a partition, fenced by `epoch`; see `RetainedLog.commitOffset`. */
  commitOffset(params: { group: string; partition: number; epoch: number; offset: number }): Promise<number>;
  /** A group's committed offsets; see `RetainedLog.committed`. */
  committed(params: { group: string }): Promise<CommittedOffset[]>;
  /** A group's lag per partition; see `RetainedLog.lag`. */
  lag(params: { group: string }): Promise<PartitionLag[]>;
  /**
   * Starts a member of consumer group `group` on this topic (see
   * `RetainedLog.consume`: rendezvous sharing, 30 s epoch-fenced leases,
   * the offset after the batch committed when the handler resolves). The
   * handler gets the batch with values decoded; a record that is not this
   * topic's JSON (appended untyped) fails its batch as a throwing handler
   * does: not committed, delivered again after a backoff, an `error` event.
   */
  consume(options: TypedConsumeOptions<T>): Promise<LogConsumer>;
}

/** What a typed consumer's handler gets: one batch of one partition, values decoded. */
export interface TypedLogBatch<T> extends Omit<LogBatch, "records"> {
  /** In offset order, at least one. */
  records: TypedLogRecord<T>[];
}

/** Options of a typed `consume()`: as `RetainedLog.consume`'s, the topic being the handle's. */
export interface TypedConsumeOptions<T> extends Omit<ConsumeOptions, "topic" | "handler"> {
  /** Handles one batch; when it resolves, the offset after the batch is committed. */
  handler: (batch: TypedLogBatch<T>) => Promise<void> | void;
}

/** A topic with `@partitionKey`: the key is the value's field, so `append(value)` is enough. */
export interface KeyedTypedLog<T, Trx = TransactionHandle> extends TypedLogReader<T> {
  append(value: T, options?: LogHeaders): Promise<LogPosition>;
  /** One transaction, all or none; one position per value, in order. */
  appendMany(values: readonly T[], options?: LogHeaders): Promise<LogPosition[]>;
  /** In the caller's transaction: the record exists only if it commits. */
  appendIn(transaction: Trx, value: T, options?: LogHeaders): Promise<LogPosition>;
}

/** A topic without `@partitionKey`: each append names its `{ key }` or `{ partition }`. */
export interface TypedLog<T, Trx = TransactionHandle> extends TypedLogReader<T> {
  append(value: T, to: LogTarget & LogHeaders): Promise<LogPosition>;
  /** One transaction, all or none; one position per record, in order. */
  appendMany(records: readonly ({ value: T } & LogTarget & LogHeaders)[]): Promise<LogPosition[]>;
  /** In the caller's transaction: the record exists only if it commits. */
  appendIn(transaction: Trx, value: T, to: LogTarget & LogHeaders): Promise<LogPosition>;
}

/**
 * The runtime object behind both {@link KeyedTypedLog} and {@link TypedLog}
 * (the generated interface picks the shape): encodes, then calls the
 * untyped log. Every refusal is a rejected promise, never a synchronous throw.
 */
export class TypedLogTopic<Trx = TransactionHandle> {
  private readonly decode: (json: string) => unknown;
  private static readonly text = new TextDecoder("utf-8", { fatal: true });

  constructor(
    private readonly log: RetainedLog<Trx>,
    readonly topic: string,
    private readonly spec: LogSpec,
  ) {
    this.decode = payloadDecoder(`log ${topic}`, { handlerMethod: "", ...(spec.datePaths ? { datePaths: spec.datePaths } : {}) });
  }

  async append(value: unknown, to?: LogTarget & LogHeaders): Promise<LogPosition> {
    return this.log.append(this.topic, this.record("append", value, to));
  }

  async appendMany(items: readonly unknown[], options?: LogHeaders): Promise<LogPosition[]> {
    if (!Array.isArray(items)) throw new InvalidArgumentError(`appendMany on log "${this.topic}": pass an array, got ${describeValue(items)}`);
    const records = this.spec.partitionKey
      ? items.map((value) => this.record("appendMany", value, options))
      : items.map((item) => {
          if (item === null || typeof item !== "object" || !("value" in item))
            throw new InvalidArgumentError(
              `appendMany on log "${this.topic}": each record is { value, key | partition, headers? }, got ${describeValue(item)}`,
            );
          const { value, ...to } = item as { value: unknown } & LogTarget & LogHeaders;
          return this.record("appendMany", value, to);
        });
    return this.log.appendMany(this.topic, records);
  }

  async appendIn(transaction: Trx, value: unknown, to?: LogTarget & LogHeaders): Promise<LogPosition> {
    return this.log.appendIn(transaction, this.topic, this.record("appendIn", value, to));
  }

  async read(params: { partition: number; fromOffset: number; limit?: number }): Promise<TypedLogRecord<unknown>[]> {
    const records = await this.log.read({ ...params, topic: this.topic });
    return records.map((r) => this.decodeRecord("read", r));
  }

  async consume(options: TypedConsumeOptions<unknown>): Promise<LogConsumer> {
    if (options === null || typeof options !== "object")
      throw new InvalidArgumentError(`consume on log "${this.topic}": options must be an object { group, handler, maxBatch?, startFrom? }`);
    const { handler } = options;
    if (typeof handler !== "function")
      throw new InvalidArgumentError(`consume on log "${this.topic}": handler must be a function, got ${describeValue(handler)}`);
    return this.log.consume({
      ...options,
      topic: this.topic,
      handler: (batch) => handler({ ...batch, records: batch.records.map((r) => this.decodeRecord("consume", r)) }),
    });
  }

  async commitOffset(params: { group: string; partition: number; epoch: number; offset: number }): Promise<number> {
    return this.log.commitOffset({ ...params, topic: this.topic });
  }

  async committed(params: { group: string }): Promise<CommittedOffset[]> {
    return this.log.committed({ ...params, topic: this.topic });
  }

  async lag(params: { group: string }): Promise<PartitionLag[]> {
    return this.log.lag({ ...params, topic: this.topic });
  }

  private decodeRecord(where: string, r: LogRecord): TypedLogRecord<unknown> {
    try {
      return { ...r, value: this.decode(TypedLogTopic.text.decode(r.value)) };
    } catch (cause) {
      throw new InvalidArgumentError(
        `${where} on log "${this.topic}": record ${r.partition}/${r.offset} is not this topic's JSON: ${(cause as Error).message}`,
      );
    }
  }

  /** The untyped record: JSON text of `value`, its key from `@partitionKey` or from `to`. */
  private record(where: string, value: unknown, to: (Partial<LogTarget> & LogHeaders) | undefined): LogRecordInput {
    const text = encodePayload(jsonPayload, `log ${this.topic}`, value);
    const headers = to?.headers === undefined ? {} : { headers: to.headers };
    const field = this.spec.partitionKey;
    if (field !== undefined) {
      const key = value !== null && typeof value === "object" ? (value as Record<string, unknown>)[field] : undefined;
      if (typeof key !== "string" && typeof key !== "number")
        throw new InvalidArgumentError(
          `${where} on log "${this.topic}": partition key field "${field}" must be a string or number (a number is stored as its decimal text), got ${describeValue(key)}`,
        );
      return { key: String(key), value: text, ...headers };
    }
    if (to === null || typeof to !== "object")
      throw new InvalidArgumentError(`${where} on log "${this.topic}": name where it goes, { key } or { partition } (the schema declares no @partitionKey)`);
    return { ...(to.key === undefined ? {} : { key: to.key }), ...(to.partition === undefined ? {} : { partition: to.partition }), value: text, ...headers };
  }
}
