/**
 * The retained log's transactions, written once for stores that run
 * statements asynchronously: PostgreSQL's own transactions and caller
 * transactions. (SQLite stores record batches and runs its appends with
 * `sqlite/sqlite-log-statements.ts`' steps, in its own synchronous
 * transactions and in caller transactions alike.)
 */
import type * as B from "../backend.js";
import { byPartition, commitBeyondEnd, type LogRun, type LogStatements, missingPartition, staleEpoch, valueBuffer } from "./log-statements.js";

/** An append's statements for every partition and record at once (PostgreSQL's, in `postgres-log-store.ts`). */
export interface BatchLogStatements {
  /**
   * Moves the end offsets of the partitions `$3` (int[], ascending) by the
   * counts `$4` (int[]), locking the partition rows in ascending order as
   * the one-by-one path does (so two appenders never deadlock); returns
   * `partition_no` and `first` (the first offset taken) per partition.
   */
  offsetTake: string;
  /**
   * Inserts every record: `$3` partitions, `$4` offsets, `$5` keys, `$7`
   * headers (arrays, one entry per record), `$6` every value end to end in
   * one bytea, `$9` their lengths and `$10` their ends in it.
   */
  recordInsert: string;
}

/** The log's transactions on a store that runs statements asynchronously (see the module doc). */
export class LogTransactions {
  constructor(
    private readonly sql: LogStatements,
    private readonly namespace: string,
    /** Appended to `groupRead` inside a commit: `" FOR UPDATE"` on PostgreSQL. */
    private readonly lockSuffix: string,
    /**
     * Statements that take a whole append in one round trip: a batch of
     * 1,000 records over 8 partitions took 8 + 1,000 round trips one
     * statement at a time; `bench/log.js` measured batched appends 2.5x
     * faster at 2 KiB with these. One partition's offsets and one record
     * still go through the one-row statements. See {@link BatchLogStatements}.
     */
    private readonly many: BatchLogStatements,
  ) {}

  async append(run: LogRun, params: B.LogRecordAppendParams): Promise<number[]> {
    const ns = this.namespace;
    const offsets = new Array<number>(params.records.length);
    const groups = byPartition(params.records);
    if (groups.length > 1) {
      const rows = await run(this.many.offsetTake, [ns, params.topic, groups.map(([p]) => p), groups.map(([, indexes]) => indexes.length)]);
      const firsts = new Map(rows.map((r) => [Number(r.partition_no), Number(r.first)]));
      for (const [partition, indexes] of groups) {
        const first = firsts.get(partition);
        if (first === undefined) throw missingPartition(params.topic, partition);
        for (const [i, index] of indexes.entries()) offsets[index] = first + i;
      }
    } else {
      for (const [partition, indexes] of groups) {
        const rows = await run(this.sql.offsetTake, [ns, params.topic, partition, indexes.length]);
        if (rows.length === 0) throw missingPartition(params.topic, partition);
        const first = Number(rows[0]!.first);
        for (const [i, index] of indexes.entries()) offsets[index] = first + i;
      }
    }
    if (params.records.length > 1) {
      const { records } = params;
      const values = records.map((r) => valueBuffer(r.value));
      let end = 0;
      const ends = values.map((v) => (end += v.byteLength));
      await run(this.many.recordInsert, [
        ns,
        params.topic,
        records.map((r) => r.partition),
        offsets,
        records.map((r) => r.key),
        Buffer.concat(values),
        records.map((r) => r.headers),
        params.now,
        values.map((v) => v.byteLength),
        ends,
      ]);
      return offsets;
    }
    for (const [i, r] of params.records.entries()) {
      await run(this.sql.recordInsert, [ns, params.topic, r.partition, offsets[i], r.key, valueBuffer(r.value), r.headers, params.now]);
    }
    return offsets;
  }

  async commit(run: LogRun, params: B.LogOffsetCommitParams): Promise<number> {
    const key = [this.namespace, params.topic, params.partition];
    const part = (await run(this.sql.partitionRead, key))[0];
    if (!part) throw missingPartition(params.topic, params.partition);
    const end = Number(part.next_offset);
    if (params.offset > end) throw commitBeyondEnd(params, end, Number(part.start_offset));
    let row = (await run(this.sql.groupRead + this.lockSuffix, [...key, params.group]))[0];
    if (!row && params.epoch === 0) {
      const inserted = await run(this.sql.groupInsert, [...key, params.group, params.offset, params.now]);
      if (inserted.length > 0) return params.offset;
      // Another commit created the row meanwhile: check against it.
      row = (await run(this.sql.groupRead + this.lockSuffix, [...key, params.group]))[0];
    }
    const current = row ? Number(row.epoch) : 0;
    if (!row || current !== params.epoch) throw staleEpoch(params, current);
    await run(this.sql.groupCommit, [...key, params.group, params.offset, params.now, params.epoch]);
    const committed = row.committed_offset === null ? null : Number(row.committed_offset);
    return committed === null ? params.offset : Math.max(committed, params.offset);
  }
}
