/**
 * The retained log's transactions, written once for stores that run
 * statements asynchronously: PostgreSQL's own transactions and caller
 * transactions, and SQLite's caller transactions (`appendIn` on a Kysely
 * transaction). SQLite's own transactions are synchronous (better-sqlite3
 * runs one start to finish inside a call), so `sqlite-log-store.ts` repeats
 * these steps without awaits.
 */
import type * as B from "../backend.js";
import { byPartition, commitBeyondEnd, type LogRun, type LogStatements, missingPartition, staleEpoch, valueBuffer } from "./log-statements.js";

/** The log's transactions on a store that runs statements asynchronously (see the module doc). */
export class LogTransactions {
  constructor(
    private readonly sql: LogStatements,
    private readonly namespace: string,
    /** Appended to `groupRead` inside a commit: `" FOR UPDATE"` on PostgreSQL. */
    private readonly lockSuffix: string,
    /**
     * One statement inserting every record of an append from parallel
     * arrays (`$3` partitions, `$4` offsets, `$5` keys, `$6` values, `$7`
     * headers), or null to insert them one by one. PostgreSQL's: a round
     * trip per record made a batch of 1,000 cost 1,000 round trips (about
     * 7x slower in `bench/log.js`). SQLite's caller transactions insert one
     * by one (no array parameters; in process, a statement costs no round trip).
     */
    private readonly recordInsertMany: string | null = null,
  ) {}

  async append(run: LogRun, params: B.LogRecordAppendParams): Promise<number[]> {
    const ns = this.namespace;
    const offsets = new Array<number>(params.records.length);
    for (const [partition, indexes] of byPartition(params.records)) {
      const rows = await run(this.sql.offsetTake, [ns, params.topic, partition, indexes.length]);
      if (rows.length === 0) throw missingPartition(params.topic, partition);
      const first = Number(rows[0]!.first);
      for (const [i, index] of indexes.entries()) offsets[index] = first + i;
    }
    if (this.recordInsertMany !== null && params.records.length > 1) {
      const { records } = params;
      await run(this.recordInsertMany, [
        ns,
        params.topic,
        records.map((r) => r.partition),
        offsets,
        records.map((r) => r.key),
        records.map((r) => valueBuffer(r.value)),
        records.map((r) => r.headers),
        params.now,
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
