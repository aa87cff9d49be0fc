/**
 * The retained-log statements of the PostgreSQL backend (`backend.log`),
 * the shared text of `shared/log-statements.ts` run as named prepared
 * statements.
 *
 * Dense offsets across processes: an append takes its offsets with `UPDATE
 * later_log_partitions ... RETURNING` in its transaction; the row lock is
 * held to commit, so concurrent appenders of one partition take turns, and
 * a rolled-back append (its own, or the caller's transaction of `appendIn`)
 * returns its offsets. Appends to several partitions lock them in partition
 * order, so two appenders never deadlock. A commit locks its group
 * partition row (`FOR UPDATE`) before checking the epoch.
 */
import { PartitionCountMismatchError } from "../../errors.js";
import type * as B from "../backend.js";
import {
  groupPartitionOfRow,
  leaseOfRows,
  LogStatements,
  readBelowStart,
  recordOfRow,
  retentionCutOfRow,
  topicsOfRows,
  type LogRun,
} from "../shared/log-statements.js";
import { LogTransactions } from "../shared/log-transactions.js";
import { callerExecutor } from "./postgres-executors.js";
import { type Execute, statement, type Statement } from "./postgres-statement.js";
import type { PostgresRunner } from "./postgres-runner.js";

export class PostgresLogStore implements B.LogStore<B.PostgresTransaction> {
  private readonly sql: LogStatements;
  private readonly transactions: LogTransactions;
  private readonly named = new Map<string, Statement>();

  constructor(
    private readonly runner: PostgresRunner,
    quoted: string,
  ) {
    this.sql = new LogStatements((name) => `${quoted}.${name}`);
    const parts = `${quoted}.later_log_partitions`;
    this.transactions = new LogTransactions(this.sql, runner.namespace, " FOR UPDATE", {
      // `locked` takes the row locks in partition order (a SELECT … ORDER BY … FOR UPDATE locks rows as
      // it returns them); the count makes PostgreSQL run it whole before the update.
      offsetTake: `WITH locked AS (
  SELECT partition_no FROM ${parts} WHERE namespace = $1 AND topic = $2 AND partition_no = ANY($3::int[]) ORDER BY partition_no FOR UPDATE
)
UPDATE ${parts} p SET next_offset = p.next_offset + u.n
FROM unnest($3::int[], $4::int[]) AS u(pn, n)
WHERE p.namespace = $1 AND p.topic = $2 AND p.partition_no = u.pn AND (SELECT count(*) FROM locked) >= 0
RETURNING p.partition_no, p.next_offset - u.n AS first`,
      // The values travel as one bytea ($6: every value, end to end) cut by their lengths ($9), not as a
      // bytea[]: PostgreSQL parses an array literal element by element, which made 2 KiB records slower
      // to append in batches than jobs of the same size (bench/log.js).
      recordInsert: `INSERT INTO ${quoted}.later_log_records (namespace, topic, partition_no, "offset", key, value, headers, "timestamp")
SELECT $1, $2, u.p, u.o, u.k, substring($6::bytea FROM (u.e - u.l + 1)::int FOR u.l), u.h, $8
FROM unnest($3::int[], $4::bigint[], $5::text[], $7::text[], $9::int[], $10::bigint[]) AS u(p, o, k, h, l, e)`,
    });
  }

  private get ns(): string {
    return this.runner.namespace;
  }

  /** `execute` as a {@link LogRun}: each text named once. */
  private on(execute: Execute): LogRun {
    return (text, values) => {
      let s = this.named.get(text);
      if (!s) this.named.set(text, (s = statement(text)));
      return execute(s, values);
    };
  }

  async topicRegister(params: B.LogTopicRegisterParams): Promise<void> {
    if (params.topics.length === 0) return;
    await this.runner.inTransaction("log topic registration", async (execute) => {
      const run = this.on(execute);
      for (const t of [...params.topics].sort((a, b) => (a.name < b.name ? -1 : 1))) {
        const values = [this.ns, t.name, t.partitions, t.retentionMs, t.retainRecords, t.minRetainUntilCommitted ? 1 : 0, params.now];
        await run(this.sql.topicUpsert, values);
        // The upsert locked the topic row: a concurrent registration of it waits here, then sees this count.
        const stored = Number((await run(this.sql.topicRead, [this.ns, t.name]))[0]!.partitions);
        if (stored !== t.partitions) throw new PartitionCountMismatchError(t.name, stored, t.partitions);
        for (let p = 0; p < t.partitions; p++) await run(this.sql.partitionInsert, [this.ns, t.name, p]);
      }
    });
  }

  recordAppendMany(params: B.LogRecordAppendParams): Promise<number[]> {
    if (params.records.length === 0) return Promise.resolve([]);
    return this.runner.inTransaction("log append", (execute) => this.transactions.append(this.on(execute), params));
  }

  async recordAppendIn(transaction: B.PostgresTransaction, params: B.LogRecordAppendParams): Promise<number[]> {
    // Unnamed statements: the caller's connection is not ours to prepare on.
    const execute = callerExecutor(transaction, "appendIn");
    if (params.records.length === 0) return [];
    return this.transactions.append((text, values) => execute({ name: "", text }, values), params);
  }

  async recordRead(params: B.LogRecordReadParams): Promise<B.LogRecordRow[]> {
    const run = this.on(this.runner.execute);
    const key = [this.ns, params.topic, params.partition];
    const [part, rows] = await Promise.all([run(this.sql.partitionRead, key), run(this.sql.recordRead, [...key, params.fromOffset, params.limit])]);
    const p = part[0];
    if (!p) return [];
    const start = Number(p.start_offset);
    // Read side by side: the start can only move up, so a read below it (at the time of either statement) is refused.
    if (params.fromOffset < start) throw readBelowStart(params, start, Number(p.next_offset));
    return rows.filter((r) => Number(r.offset) >= start).map(recordOfRow);
  }

  async recordTruncate(params: B.LogRecordTruncateParams): Promise<number> {
    return this.runner.inTransaction("log truncate", async (execute) => {
      const run = this.on(execute);
      const key = [this.ns, params.topic, params.partition];
      const p = (await run(`${this.sql.partitionRead} FOR UPDATE`, key))[0];
      if (!p) return 0;
      const before = Math.min(params.beforeOffset, Number(p.next_offset));
      await run(this.sql.startMove, [...key, before]);
      const deleted = await run(`${this.sql.recordDelete} RETURNING 1`, [...key, before]);
      return deleted.length;
    });
  }

  offsetCommit(params: B.LogOffsetCommitParams): Promise<number> {
    return this.runner.inTransaction("log offset commit", (execute) => this.transactions.commit(this.on(execute), params));
  }

  async offsetList(params: B.LogGroupParams): Promise<B.LogCommittedRow[]> {
    const rows = await this.on(this.runner.execute)(this.sql.offsetList, [this.ns, params.topic, params.group]);
    return rows.map((r) => ({ partition: Number(r.partition_no), offset: Number(r.committed_offset) }));
  }

  async lagList(params: B.LogGroupParams): Promise<B.LogLagRow[]> {
    const rows = await this.on(this.runner.execute)(this.sql.lagList, [this.ns, params.topic, params.group]);
    return rows.map((r) => ({
      partition: Number(r.partition_no),
      endOffset: Number(r.next_offset),
      startOffset: Number(r.start_offset),
      committedOffset: r.committed_offset === null ? null : Number(r.committed_offset),
    }));
  }

  async retentionCutList(params: B.LogRetentionCutParams): Promise<B.LogRetentionCutRow[]> {
    const rows = await this.on(this.runner.execute)(this.sql.retentionCuts, [this.ns, params.now, params.defaultRetentionMs]);
    return rows.map(retentionCutOfRow);
  }

  async topicList(params: B.LogTopicListParams): Promise<B.LogTopicRow[]> {
    return topicsOfRows(await this.on(this.runner.execute)(this.sql.topicList, [this.ns, params.topic ?? null]));
  }

  async groupList(params: B.LogTopicListParams): Promise<B.LogGroupPartitionRow[]> {
    return (await this.on(this.runner.execute)(this.sql.groupList, [this.ns, params.topic ?? null])).map(groupPartitionOfRow);
  }

  async memberHeartbeat(params: B.LogMemberParams & { expiresAt: number; now: number }): Promise<void> {
    const group = [this.ns, params.topic, params.group];
    const run = this.on(this.runner.execute);
    await run(this.sql.memberExpire, [...group, params.now]);
    await run(this.sql.memberUpsert, [...group, params.memberId, params.expiresAt]);
  }

  async memberRemove(params: B.LogMemberParams): Promise<void> {
    await this.on(this.runner.execute)(this.sql.memberDelete, [this.ns, params.topic, params.group, params.memberId]);
  }

  async memberList(params: B.LogGroupParams & { now: number }): Promise<string[]> {
    const rows = await this.on(this.runner.execute)(this.sql.memberList, [this.ns, params.topic, params.group, params.now]);
    return rows.map((r) => String(r.member_id));
  }

  async leaseClaim(params: B.LogMemberParams & { partition: number; expiresAt: number; now: number }): Promise<B.LogLeaseRow | null> {
    const values = [this.ns, params.topic, params.group, params.memberId, params.partition, params.expiresAt, params.now];
    return leaseOfRows(await this.on(this.runner.execute)(this.sql.leaseClaim, values));
  }

  async leaseRelease(params: B.LogMemberParams & { partition: number }): Promise<void> {
    await this.on(this.runner.execute)(this.sql.leaseRelease, [this.ns, params.topic, params.group, params.memberId, params.partition]);
  }
}
