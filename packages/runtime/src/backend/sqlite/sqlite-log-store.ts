/**
 * The retained-log statements of the SQLite backend (`backend.log`): the
 * shared text of `shared/log-statements.ts` with `?` parameters, and record
 * batches (`sqlite-log-statements.ts`): one row per append and partition.
 *
 * Dense offsets: SQLite has one writer at a time, and every write here runs
 * in one `BEGIN IMMEDIATE` transaction, so an append's offset take and its
 * inserts cannot interleave with another process's; a rollback returns the
 * offsets. `appendIn` writes into the caller's Kysely transaction with the
 * same steps ({@link logBatchSteps}) awaited; this store's own transactions
 * run them synchronously (better-sqlite3 runs a transaction start to finish
 * inside one call).
 */
import { CompiledQuery } from "kysely";
import { PartitionCountMismatchError } from "../../errors.js";
import type * as B from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import {
  commitBeyondEnd,
  groupPartitionOfRow,
  leaseOfRows,
  LogStatements,
  missingPartition,
  positional,
  readBelowStart,
  retentionCutOfRow,
  staleEpoch,
  topicsOfRows,
} from "../shared/log-statements.js";
import { transactionRefusal } from "../transaction-refusal.js";
import { isKyselyExecutor } from "./kysely-executor.js";
import type { SqliteHost } from "./sqlite-connection.js";
import { logBatchSteps, recordsOfBatches, SQLITE_LOG_STATEMENTS as S } from "./sqlite-log-statements.js";

export class SqliteLogStore implements B.LogStore<B.SqliteTransaction> {
  private readonly sql = new LogStatements((name) => name, S.agedOffset);
  private readonly texts = new Map<string, { text: string; order: number[] }>();

  constructor(private readonly host: SqliteHost) {}

  private get ns(): string {
    return this.host.namespace;
  }

  /** `text` (with `$n`) as SQLite text and its values in binding order. */
  private bind(text: string, values: unknown[]): [string, unknown[]] {
    let p = this.texts.get(text);
    if (!p) this.texts.set(text, (p = positional(text)));
    return [p.text, p.order.map((i) => values[i])];
  }

  /** Runs `text`: its rows, or none for a write without `RETURNING` (better-sqlite3 runs those with `run`). */
  private all(text: string, values: unknown[]): Row[] {
    const [t, v] = this.bind(text, values);
    if (/^(INSERT|UPDATE|DELETE)\b/.test(t) && !/\bRETURNING\b/.test(t)) {
      this.host.conn().run(t, ...v);
      return [];
    }
    return this.host.conn().all(t, ...v);
  }

  async topicRegister(params: B.LogTopicRegisterParams): Promise<void> {
    const c = this.host.conn();
    c.immediate(() => {
      for (const t of params.topics) {
        const row = this.all(this.sql.topicRead, [this.ns, t.name])[0];
        if (row && Number(row.partitions) !== t.partitions) throw new PartitionCountMismatchError(t.name, Number(row.partitions), t.partitions);
      }
      for (const t of params.topics) {
        this.all(this.sql.topicUpsert, [this.ns, t.name, t.partitions, t.retentionMs, t.retainRecords, t.minRetainUntilCommitted ? 1 : 0, params.now]);
        for (let p = 0; p < t.partitions; p++) this.all(this.sql.partitionInsert, [this.ns, t.name, p]);
      }
    });
  }

  async recordAppendMany(params: B.LogRecordAppendParams): Promise<number[]> {
    if (params.records.length === 0) return [];
    return this.host.conn().immediate(() => {
      const steps = this.appendStatements(params);
      for (let next = steps.next(); ; next = steps.next(this.all(...next.value))) if (next.done) return next.value;
    });
  }

  /**
   * An append's statements, one after another: yields each statement (text
   * and values), is given its rows back, and returns the records' offsets.
   * The store's own transaction runs them synchronously, `appendIn` awaits
   * each in the caller's transaction.
   */
  private *appendStatements(params: B.LogRecordAppendParams): Generator<[string, unknown[]], number[], Row[]> {
    const offsets = new Array<number>(params.records.length);
    for (const step of logBatchSteps(this.ns, params)) {
      const row = (yield [this.sql.offsetTake, [this.ns, params.topic, step.partition, step.indexes.length]])[0];
      if (!row) throw missingPartition(params.topic, step.partition);
      const first = Number(row.first);
      for (const [i, index] of step.indexes.entries()) offsets[index] = first + i;
      yield [S.batchInsert, step.insert(first)];
    }
    return offsets;
  }

  async recordAppendIn(transaction: B.SqliteTransaction, params: B.LogRecordAppendParams): Promise<number[]> {
    if (!isKyselyExecutor(transaction) || (transaction as { isTransaction?: unknown }).isTransaction === false) {
      throw transactionRefusal(
        "appendIn",
        "the SQLite backend takes a Kysely transaction (db.transaction().execute(trx => ...)) on the same database file",
        transaction,
      );
    }
    if (params.records.length === 0) return [];
    const run = async (text: string, values: unknown[]): Promise<Row[]> => {
      const [t, v] = this.bind(text, values);
      return (await transaction.executeQuery(CompiledQuery.raw(t, v))).rows as Row[];
    };
    const steps = this.appendStatements(params);
    for (let next = steps.next(); ; next = steps.next(await run(...next.value))) if (next.done) return next.value;
  }

  /** The partition's records from `fromOffset`, read from the batches holding them (see {@link recordsOfBatches}). */
  async recordRead(params: B.LogRecordReadParams): Promise<B.LogRecordRow[]> {
    const key = [this.ns, params.topic, params.partition];
    const c = this.host.conn();
    // One read transaction: the start offset and the records are of one snapshot.
    return c.db.transaction(() => {
      const p = this.all(this.sql.partitionRead, key)[0];
      if (!p) return [];
      const start = Number(p.start_offset);
      if (params.fromOffset < start) throw readBelowStart(params, start, Number(p.next_offset));
      // At the end (a consumer's idle poll): nothing to read, not even the last batch.
      if (params.fromOffset >= Number(p.next_offset)) return [];
      return recordsOfBatches(this.all(S.batchRead, [...key, params.fromOffset, params.limit]), params.fromOffset, params.limit);
    })();
  }

  /**
   * Moves the partition's start offset to `beforeOffset` (at most its end)
   * and deletes the batches wholly below it; resolves to how many records
   * those held. A batch straddling the cut stays until a later cut covers
   * it, and counts then: over a run of sweeps every record counts once.
   */
  async recordTruncate(params: B.LogRecordTruncateParams): Promise<number> {
    const key = [this.ns, params.topic, params.partition];
    return this.host.conn().immediate(() => {
      const p = this.all(this.sql.partitionRead, key)[0];
      if (!p) return 0;
      const before = Math.min(params.beforeOffset, Number(p.next_offset));
      this.all(this.sql.startMove, [...key, before]);
      return this.all(S.batchDelete, [...key, before]).reduce((sum, r) => sum + Number(r.record_count), 0);
    });
  }

  async offsetCommit(params: B.LogOffsetCommitParams): Promise<number> {
    const key = [this.ns, params.topic, params.partition];
    return this.host.conn().immediate(() => {
      const part = this.all(this.sql.partitionRead, key)[0];
      if (!part) throw missingPartition(params.topic, params.partition);
      const end = Number(part.next_offset);
      if (params.offset > end) throw commitBeyondEnd(params, end, Number(part.start_offset));
      const row = this.all(this.sql.groupRead, [...key, params.group])[0];
      const current = row ? Number(row.epoch) : 0;
      if (current !== params.epoch) throw staleEpoch(params, current);
      if (!row) {
        this.all(this.sql.groupInsert, [...key, params.group, params.offset, params.now]);
        return params.offset;
      }
      this.all(this.sql.groupCommit, [...key, params.group, params.offset, params.now, params.epoch]);
      return row.committed_offset === null ? params.offset : Math.max(Number(row.committed_offset), params.offset);
    });
  }

  async offsetList(params: B.LogGroupParams): Promise<B.LogCommittedRow[]> {
    return this.all(this.sql.offsetList, [this.ns, params.topic, params.group]).map((r) => ({
      partition: Number(r.partition_no),
      offset: Number(r.committed_offset),
    }));
  }

  async lagList(params: B.LogGroupParams): Promise<B.LogLagRow[]> {
    return this.all(this.sql.lagList, [this.ns, params.topic, params.group]).map((r) => ({
      partition: Number(r.partition_no),
      endOffset: Number(r.next_offset),
      startOffset: Number(r.start_offset),
      committedOffset: r.committed_offset === null ? null : Number(r.committed_offset),
    }));
  }

  async retentionCutList(params: B.LogRetentionCutParams): Promise<B.LogRetentionCutRow[]> {
    return this.all(this.sql.retentionCuts, [this.ns, params.now, params.defaultRetentionMs]).map(retentionCutOfRow);
  }

  async topicList(params: B.LogTopicListParams): Promise<B.LogTopicRow[]> {
    return topicsOfRows(this.all(this.sql.topicList, [this.ns, params.topic ?? null]));
  }

  async groupList(params: B.LogTopicListParams): Promise<B.LogGroupPartitionRow[]> {
    return this.all(this.sql.groupList, [this.ns, params.topic ?? null]).map(groupPartitionOfRow);
  }

  async memberHeartbeat(params: B.LogMemberParams & { expiresAt: number; now: number }): Promise<void> {
    const group = [this.ns, params.topic, params.group];
    this.host.conn().immediate(() => {
      this.all(this.sql.memberExpire, [...group, params.now]);
      this.all(this.sql.memberUpsert, [...group, params.memberId, params.expiresAt]);
    });
  }

  async memberRemove(params: B.LogMemberParams): Promise<void> {
    this.all(this.sql.memberDelete, [this.ns, params.topic, params.group, params.memberId]);
  }

  async memberList(params: B.LogGroupParams & { now: number }): Promise<string[]> {
    return this.all(this.sql.memberList, [this.ns, params.topic, params.group, params.now]).map((r) => String(r.member_id));
  }

  async leaseClaim(params: B.LogMemberParams & { partition: number; expiresAt: number; now: number }): Promise<B.LogLeaseRow | null> {
    const values = [this.ns, params.topic, params.group, params.memberId, params.partition, params.expiresAt, params.now];
    return this.host.conn().immediate(() => leaseOfRows(this.all(this.sql.leaseClaim, values)));
  }

  async leaseRelease(params: B.LogMemberParams & { partition: number }): Promise<void> {
    this.all(this.sql.leaseRelease, [this.ns, params.topic, params.group, params.memberId, params.partition]);
  }
}
