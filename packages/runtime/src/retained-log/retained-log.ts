/**
 * The retained log (docs/semantics.md L1–L5): immutable records appended to the
 * partitions of a topic, each with a dense offset, kept in the database and
 * read back by offset; consumer groups' committed offsets and lag.
 *
 * ```text
 *   RetainedLog.open() ──► open (append, read, consume, commitOffset, committed, lag;
 *                                retention sweep every intervalMs) ──close()──► closed (sweep stopped)
 * ```
 *
 * A database-backed log, not a Kafka wire protocol. Consumer groups whose
 * members share partitions: {@link RetainedLog.consume} (see `LogConsumer`);
 * a manual-commit consumer commits with {@link RetainedLog.commitOffset} at
 * epoch 0 instead.
 */
import type { Backend } from "../backend/backend.js";
import type { TransactionHandle } from "../backend/transaction-handle.js";
import { systemClock, type Clock } from "../core/clock.js";
import { nameProblem, describeName } from "../core/stored-name.js";
import { InvalidArgumentError, InvalidConfigError, ServerStoppedError, UnknownTopicError, describeValue } from "../errors.js";
import { LogRetentionSweeper, type LogRetentionSweepResult } from "../maintenance/log-retention-sweeper.js";
import { checkLogger, eventSink } from "../events/event-sink.js";
import { acquireBackend, followDatabaseClock, releaseBackend } from "../backend/backend-preparation.js";
import type { ServerEvent } from "../events/server-event.js";
import { LogConsumer, type ConsumeOptions } from "./log-consumer.js";
import {
  checkOffset,
  encodeLogRecord,
  type CommittedOffset,
  type LogPosition,
  type LogRecord,
  type LogRecordInput,
  type PartitionLag,
  type LogGroupLag,
} from "./log-record.js";
import { logTopicsByName, type LogTopicConfig } from "./log-topic.js";
import { retentionSettings, type RetainedLogOptions } from "./retained-log-options.js";

/** Most records `read` returns at once. */
export const MAX_LOG_READ = 10_000;

/** A retained log on one backend: append, read, commit and lag for the topics it was opened with. */
export class RetainedLog<Trx = TransactionHandle> {
  private closed = false;
  private closing: Promise<void> | null = null;
  private readonly sweeper: LogRetentionSweeper;
  private readonly consumers = new Set<LogConsumer>();

  private constructor(
    private readonly backend: Backend<Trx>,
    private readonly topics: ReadonlyMap<string, LogTopicConfig>,
    private readonly clock: Clock,
    retention: { intervalMs: number; batchSize: number; start: boolean },
    private readonly onEvent: (event: ServerEvent) => void,
    private readonly ownsBackend: boolean,
  ) {
    this.sweeper = new LogRetentionSweeper({ backend: backend as Backend, clock, onEvent }, retention);
    if (retention.start) this.sweeper.start();
  }

  /**
   * Opens the backend, checks its schema (migrating it with `autoMigrate`)
   * and registers the topics: a topic stored with another partition count
   * throws `PartitionCountMismatchError` and nothing is registered; its
   * retention settings are updated to these. Times come from the database's
   * clock on PostgreSQL (an offset measured now, as servers do), from
   * `clock` on SQLite.
   */
  static async open<Trx = TransactionHandle>(options: RetainedLogOptions<Trx>): Promise<RetainedLog<Trx>> {
    if (options === null || typeof options !== "object") throw new InvalidConfigError("RetainedLog.open(options): options must be an object");
    const { backend } = options;
    if (backend === null || typeof backend !== "object" || typeof (backend as { log?: unknown }).log !== "object") {
      throw new InvalidConfigError("RetainedLog.open(): `backend` must be a backend (sqlite({ file }) or postgres({ connectionString }))");
    }
    const byName = logTopicsByName("RetainedLog.open()", options.topics);
    const retention = retentionSettings(options.retention);
    if (options.onEvent !== undefined && typeof options.onEvent !== "function")
      throw new InvalidConfigError(`RetainedLog.open(): \`onEvent\` must be a function, got ${describeValue(options.onEvent)}`);
    const onEvent = eventSink(options.onEvent, checkLogger(options.logger, "RetainedLog.open()")).emit;
    const local = options.clock ?? systemClock;
    await acquireBackend(backend, options.autoMigrate ?? false);
    try {
      const clock = (await followDatabaseClock("database", local, backend as Backend)) ?? local;
      await backend.log.topicRegister({ topics: [...byName.values()], now: clock.now() });
      const log = new RetainedLog(backend, byName, clock, retention, onEvent, true);
      onEvent({ type: "lifecycle", component: "retained-log", action: "started" });
      return log;
    } catch (error) {
      await releaseBackend(backend);
      throw error;
    }
  }

  /**
   * @internal A log on a backend that a server has already opened and
   * checked (`server.log`, from the server's `logTopics`): registers the
   * topics on the server's clock; its `close()` stops its consumers and
   * sweep but leaves the backend to the server.
   */
  static async attach<Trx>(params: {
    backend: Backend<Trx>;
    topics: ReadonlyMap<string, LogTopicConfig>;
    clock: Clock;
    onEvent: (event: ServerEvent) => void;
  }): Promise<RetainedLog<Trx>> {
    await params.backend.log.topicRegister({ topics: [...params.topics.values()], now: params.clock.now() });
    return new RetainedLog(params.backend, params.topics, params.clock, retentionSettings(undefined), params.onEvent, false);
  }

  /** Appends one record; resolves to its position once committed. See {@link LogRecordInput} for what a record holds. */
  async append(topic: string, record: LogRecordInput): Promise<LogPosition> {
    const [position] = await this.appendRecords("append", topic, [record]);
    return position!;
  }

  /**
   * Appends records in one transaction (all or none); resolves to one
   * position per record, in order. Records of one partition get
   * consecutive offsets in the order given.
   */
  appendMany(topic: string, records: readonly LogRecordInput[]): Promise<LogPosition[]> {
    return this.appendRecords("appendMany", topic, records);
  }

  private async appendRecords(where: string, topic: string, records: readonly LogRecordInput[]): Promise<LogPosition[]> {
    const { config, encoded } = this.encode(where, topic, records);
    const offsets = await this.backend.log.recordAppendMany({ topic, records: encoded, now: this.clock.now() });
    return encoded.map((r, i) => ({ topic: config.name, partition: r.partition, offset: offsets[i]! }));
  }

  /**
   * Appends one record in the caller's transaction (SQLite: a Kysely
   * transaction on the same file; PostgreSQL: a Kysely transaction or the
   * `pg` client you ran BEGIN on). The record exists only if it commits; a
   * rollback uses up no offset. Anything but a transaction throws
   * `InvalidArgumentError` saying what it got.
   */
  async appendIn(transaction: Trx, topic: string, record: LogRecordInput): Promise<LogPosition> {
    const { config, encoded } = this.encode("appendIn", topic, [record]);
    const [offset] = await this.backend.log.recordAppendIn(transaction, { topic, records: encoded, now: this.clock.now() });
    return { topic: config.name, partition: encoded[0]!.partition, offset: offset! };
  }

  /**
   * Reads up to `limit` (default 100, at most {@link MAX_LOG_READ}) records
   * of a partition from `fromOffset`, in offset order. From the partition's
   * end on: `[]`. Below the oldest retained offset: `OffsetOutOfRangeError`
   * (code `OFFSET_OUT_OF_RANGE`) naming it.
   */
  async read(params: { topic: string; partition: number; fromOffset: number; limit?: number }): Promise<LogRecord[]> {
    const where = "read";
    this.checkOpen(where);
    if (params === null || typeof params !== "object")
      throw new InvalidArgumentError(`${where}: params must be an object { topic, partition, fromOffset, limit? }`);
    const config = this.topic(where, params.topic);
    const partition = this.partition(where, config, params.partition);
    const fromOffset = checkOffset(where, "fromOffset", params.fromOffset);
    const limit = params.limit ?? 100;
    if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_LOG_READ) {
      throw new InvalidArgumentError(`${where}: limit must be an integer from 1 to ${MAX_LOG_READ}, got ${describeValue(limit)}`);
    }
    const rows = await this.backend.log.recordRead({ topic: config.name, partition, fromOffset, limit });
    return rows.map((r) => ({
      topic: config.name,
      partition,
      offset: r.offset,
      key: r.key,
      value: r.value,
      headers: r.headers === null ? {} : (JSON.parse(r.headers) as Record<string, string>),
      timestamp: new Date(r.timestamp),
    }));
  }

  /**
   * Commits `offset` (the next offset the group reads) for a group's
   * partition, fenced by `epoch`: the group partition's current lease epoch,
   * else `StaleEpochError` (code `STALE_EPOCH`) and nothing changes. A group
   * partition no consumer has leased is at epoch 0: a manual-commit
   * consumer (no `consume()` member) commits with `epoch: 0`, and once a
   * member leases the partition the epoch moves on and epoch-0 commits are
   * stale. Never moves the offset back (a lower offset changes nothing);
   * beyond the partition's end is `OffsetOutOfRangeError`. Resolves to the
   * group's committed offset after the call.
   */
  async commitOffset(params: { topic: string; group: string; partition: number; epoch: number; offset: number }): Promise<number> {
    const where = "commitOffset";
    this.checkOpen(where);
    if (params === null || typeof params !== "object")
      throw new InvalidArgumentError(`${where}: params must be an object { topic, group, partition, epoch, offset }`);
    const config = this.topic(where, params.topic);
    const group = this.group(where, params.group);
    const partition = this.partition(where, config, params.partition);
    const epoch = checkOffset(where, "epoch", params.epoch);
    const offset = checkOffset(where, "offset", params.offset);
    return this.backend.log.offsetCommit({ topic: config.name, group, partition, epoch, offset, now: this.clock.now() });
  }

  /** The group's committed offsets, per partition that has one, by partition. */
  async committed(params: { topic: string; group: string }): Promise<CommittedOffset[]> {
    this.checkOpen("committed");
    const config = this.topic("committed", params?.topic);
    return this.backend.log.offsetList({ topic: config.name, group: this.group("committed", params.group) });
  }

  /**
   * Per partition of the topic: its end offset, the group's committed
   * offset (where a group without a commit starts: the oldest retained
   * offset) and the lag between them (docs/semantics.md L5).
   */
  async lag(params: { topic: string; group: string }): Promise<PartitionLag[]> {
    this.checkOpen("lag");
    const config = this.topic("lag", params?.topic);
    const rows = await this.backend.log.lagList({ topic: config.name, group: this.group("lag", params.group) });
    return rows.map((r) => {
      const committedOffset = r.committedOffset ?? r.startOffset;
      return { partition: r.partition, endOffset: r.endOffset, committedOffset, lag: Math.max(0, r.endOffset - committedOffset) };
    });
  }

  /**
   * Every consumer group of each of this log's topics (or of `topics`) with
   * its lag summed over the topic's partitions, by topic and group: what
   * `server.logLag()` reports for the dashboard and the
   * `later_retained_log_consumer_lag` gauge. A group is listed once it has
   * committed or leased a partition of the topic. Two statements per topic.
   */
  async groupLag(topics: readonly string[] = [...this.topics.keys()]): Promise<LogGroupLag[]> {
    this.checkOpen("groupLag");
    const result: LogGroupLag[] = [];
    for (const name of topics) {
      const config = this.topic("groupLag", name);
      const groups = [...new Set((await this.backend.log.groupList({ topic: config.name })).map((r) => r.group))].sort();
      for (const group of groups) {
        const rows = await this.backend.log.lagList({ topic: config.name, group });
        const lag = rows.reduce((sum, r) => sum + Math.max(0, r.endOffset - (r.committedOffset ?? r.startOffset)), 0);
        result.push({ topic: config.name, group, lag });
      }
    }
    return result;
  }

  /**
   * Runs a retention sweep now, whatever the schedule and whether or not
   * this log sweeps on its own: deletes every log topic's records past
   * their retention (for all topics of the namespace, as stored), in
   * batches; resolves to how many records it deleted in how many batches.
   */
  async sweepRetention(): Promise<LogRetentionSweepResult> {
    this.checkOpen("sweepRetention");
    return this.sweeper.sweep();
  }

  /**
   * Starts a member of consumer group `group` on `topic` (docs/semantics.md L3; see
   * {@link LogConsumer} for sharing, leases, commits and retries): resolves
   * once it is registered, to a consumer whose `stop()` finishes the batch
   * in flight, commits and deregisters. `maxBatch`: most records per
   * handler call (default 100, at most {@link MAX_LOG_READ}); `startFrom`:
   * where a group without a commit starts, `"oldest"` retained record
   * (default) or `"latest"`; `pollIntervalMs`: the wait when there is
   * nothing to handle (default 1000). Errors go to `onEvent`.
   */
  async consume(options: ConsumeOptions): Promise<LogConsumer> {
    const where = "consume";
    this.checkOpen(where);
    if (options === null || typeof options !== "object")
      throw new InvalidArgumentError(`${where}: options must be an object { topic, group, handler, maxBatch?, startFrom? }`);
    const config = this.topic(where, options.topic);
    const group = this.group(where, options.group);
    if (typeof options.handler !== "function") throw new InvalidArgumentError(`${where}: handler must be a function, got ${describeValue(options.handler)}`);
    const maxBatch = options.maxBatch ?? 100;
    if (typeof maxBatch !== "number" || !Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > MAX_LOG_READ)
      throw new InvalidArgumentError(`${where}: maxBatch must be an integer from 1 to ${MAX_LOG_READ}, got ${describeValue(maxBatch)}`);
    const startFrom = options.startFrom ?? "oldest";
    if (startFrom !== "oldest" && startFrom !== "latest")
      throw new InvalidArgumentError(`${where}: startFrom must be "oldest" or "latest", got ${describeValue(startFrom)}`);
    const pollIntervalMs = options.pollIntervalMs ?? 1000;
    if (typeof pollIntervalMs !== "number" || !Number.isInteger(pollIntervalMs) || pollIntervalMs < 1)
      throw new InvalidArgumentError(`${where}: pollIntervalMs must be an integer >= 1, got ${describeValue(pollIntervalMs)}`);
    const consumer = new LogConsumer({
      topic: config.name,
      partitions: config.partitions,
      group,
      handler: options.handler,
      maxBatch,
      startFrom,
      pollIntervalMs,
      store: this.backend.log as Backend["log"],
      clock: this.clock,
      read: (partition, fromOffset, limit) => this.read({ topic: config.name, partition, fromOffset, limit }),
      onEvent: this.onEvent,
    });
    await consumer.start();
    this.consumers.add(consumer);
    return consumer;
  }

  /**
   * Stops this log's consumers (as their `stop()`) and the retention sweep,
   * and gives back its use of the backend: the backend closes when no server,
   * publisher or other log opened on it is left open. Later calls throw
   * `ServerStoppedError`. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.consumers].map((c) => c.stop()));
      this.closed = true;
      await this.sweeper.stop();
      if (this.ownsBackend) {
        await releaseBackend(this.backend);
        this.onEvent({ type: "lifecycle", component: "retained-log", action: "stopped" });
      }
    })();
    return this.closing;
  }

  private encode(where: string, topic: string, records: readonly LogRecordInput[]) {
    this.checkOpen(where);
    const config = this.topic(where, topic);
    if (!Array.isArray(records)) throw new InvalidArgumentError(`${where}: records must be an array, got ${describeValue(records)}`);
    return { config, encoded: records.map((r) => encodeLogRecord(where, config.name, config.partitions, r)) };
  }

  private checkOpen(where: string): void {
    if (this.closed) throw new ServerStoppedError(`${where} on a closed RetainedLog`);
  }

  private topic(where: string, name: unknown): LogTopicConfig {
    const config = typeof name === "string" ? this.topics.get(name) : undefined;
    if (!config) {
      const known = [...this.topics.keys()].map((t) => `"${t}"`).join(", ") || "none";
      throw new UnknownTopicError(
        String(name),
        undefined,
        `${where}: log topic ${describeName(name)} is not registered: add logTopic(${typeof name === "string" ? JSON.stringify(name) : "name"}, N) to RetainedLog.open's topics (registered: ${known})`,
      );
    }
    return config;
  }

  private partition(where: string, config: LogTopicConfig, partition: unknown): number {
    if (typeof partition !== "number" || !Number.isInteger(partition) || partition < 0 || partition >= config.partitions) {
      throw new InvalidArgumentError(
        `${where}: partition must be an integer from 0 to ${config.partitions - 1} (topic "${config.name}" has ${config.partitions}), got ${describeValue(partition)}`,
      );
    }
    return partition;
  }

  private group(where: string, group: unknown): string {
    const bad = nameProblem(group);
    if (bad !== null) throw new InvalidArgumentError(`${where}: group name ${describeName(group)} ${bad}`);
    return group as string;
  }
}
