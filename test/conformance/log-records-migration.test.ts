/**
 * The SQLite migrations of the retained log's record storage, SQLite only
 * (PostgreSQL's records were a heap table from the start and stay one row each):
 * - 8 moved the records into a rowid table (2 KiB records no longer spill to an overflow page each);
 * - 10 stores them as record batches (`later_log_batches`: one row per append and partition),
 *   each record written before it becoming a batch of one.
 * Records written before them read back the same after them, offsets go on densely, and reads,
 * limits and cuts inside a batch keep the log's offsets.
 */
import { type Kysely, sql } from "kysely";
import { describe, expect, it } from "vitest";
import { type LogRecord, logTopic, RetainedLog } from "@later/runtime";
import { BACKENDS, type TestDatabase } from "./backends.js";
import { refusal } from "./log-harness.js";
import { migrationRewind } from "./migration-rewind.js";

const sqliteOnly = BACKENDS.filter((b) => b.name === "sqlite");
const TOPICS = [logTopic("events", 2)];
const T0 = Date.UTC(2026, 5, 1, 12);

/** `later_log_records` as migration 6 created it (a WITHOUT ROWID table) and as migration 8 left it (a rowid table with a unique key). */
const RECORDS_TABLE: Record<6 | 8, string> = {
  6: `CREATE TABLE later_log_records (namespace TEXT NOT NULL, topic TEXT NOT NULL, partition_no INTEGER NOT NULL, "offset" INTEGER NOT NULL,
    key TEXT, value BLOB NOT NULL, headers TEXT, "timestamp" INTEGER NOT NULL, PRIMARY KEY (namespace, topic, partition_no, "offset")) WITHOUT ROWID`,
  8: `CREATE TABLE later_log_records (namespace TEXT NOT NULL, topic TEXT NOT NULL, partition_no INTEGER NOT NULL, "offset" INTEGER NOT NULL,
    key TEXT, value BLOB NOT NULL, headers TEXT, "timestamp" INTEGER NOT NULL, UNIQUE (namespace, topic, partition_no, "offset"))`,
};

/** A record as the code before migration 10 wrote it: one row each. */
interface OldRecord {
  partition: number;
  key: string | null;
  value: Uint8Array;
  headers: Record<string, string> | null;
  timestamp: number;
}

/**
 * Takes a database at the latest migration back to the record table of migration `table` (6 or 8),
 * empty, with the migrations after it forgotten (9 and 11 up undone by `migrationRewind`), and writes `records`
 * as that schema's code did (offsets dense per partition from 0, the partition's next offset moved on).
 */
async function rewind(app: Kysely<Record<string, never>>, namespace: string, table: 6 | 8, records: readonly OldRecord[]): Promise<void> {
  for (const undo of [...migrationRewind("sqlite", "job-progress"), "DROP TABLE later_log_batches", RECORDS_TABLE[table]]) {
    await sql.raw(undo).execute(app);
  }
  await sql.raw(`DELETE FROM later_migrations WHERE version >= ${table === 6 ? 8 : 9}`).execute(app);
  const next = new Map<number, number>();
  for (const r of records) {
    const offset = next.get(r.partition) ?? 0;
    next.set(r.partition, offset + 1);
    const headers = r.headers === null ? null : JSON.stringify(r.headers);
    await sql`INSERT INTO later_log_records (namespace, topic, partition_no, "offset", key, value, headers, "timestamp")
      VALUES (${namespace}, 'events', ${r.partition}, ${offset}, ${r.key}, ${Buffer.from(r.value)}, ${headers}, ${r.timestamp})`.execute(app);
  }
  for (const [partition, n] of next) {
    await sql`UPDATE later_log_partitions SET next_offset = ${n} WHERE namespace = ${namespace} AND topic = 'events' AND partition_no = ${partition}`.execute(
      app,
    );
  }
}

/** What `read` should return for `records` of `partition`, in the order written. */
function expected(records: readonly OldRecord[], partition: number): Omit<LogRecord, "topic">[] {
  return records
    .filter((r) => r.partition === partition)
    .map((r, offset) => ({ partition, offset, key: r.key, value: r.value, headers: r.headers ?? {}, timestamp: new Date(r.timestamp) }));
}

const plain = (records: readonly LogRecord[]) => records.map(({ topic: _, ...rest }) => ({ ...rest, value: new Uint8Array(rest.value) }));
const bytes = (text: string) => new TextEncoder().encode(text);

/** Opens a log on `db` (migrating it), runs `body`, closes the log and disposes of the database. */
async function withLog(db: TestDatabase, body: (log: RetainedLog) => Promise<void>): Promise<void> {
  const log = await RetainedLog.open({ backend: db.backend(), topics: TOPICS, autoMigrate: true, retention: false });
  try {
    await body(log);
  } finally {
    await log.close();
  }
}

describe.each(sqliteOnly)("log records migrations on $name", (entry) => {
  it("records written before migration 8 read back the same after migrations 8 and 10; offsets go on densely", async () => {
    const db = await entry.createDatabase();
    const app = db.appDatabase<Record<string, never>>();
    try {
      const records = ["a", "b".repeat(3000), ""].map((v, i) => ({
        partition: 1,
        key: null,
        value: bytes(v),
        headers: { v: v.slice(0, 5) },
        timestamp: T0 + i,
      }));
      await withLog(db, async () => {});
      await rewind(app, "test", 6, records);

      await withLog(db, async (log) => {
        expect(plain(await log.read({ topic: "events", partition: 1, fromOffset: 0 }))).toEqual(expected(records, 1));
        expect(await log.append("events", { partition: 1, value: "next" })).toEqual({ topic: "events", partition: 1, offset: 3 });
        const tables = await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE name LIKE 'later_log_%' AND type = 'table' ORDER BY name`.execute(app);
        expect(tables.rows.map((r) => r.name)).not.toContain("later_log_records");
        // The batches' unique key refuses a second batch at an offset.
        const duplicate = sql`INSERT INTO later_log_batches (namespace, topic, partition_no, first_offset, record_count, "timestamp", "values")
          SELECT namespace, topic, partition_no, first_offset, 1, "timestamp", "values" FROM later_log_batches LIMIT 1`.execute(app);
        await expect(duplicate).rejects.toThrow(/UNIQUE/);
      });
    } finally {
      await app.destroy();
      await db.dispose();
    }
  });

  it("migration 10: records of one row each become batches of one and read back identically", async () => {
    const db = await entry.createDatabase();
    const app = db.appDatabase<Record<string, never>>();
    try {
      const big = new Uint8Array(3000).map((_, i) => (i * 7) % 256);
      const records: OldRecord[] = [
        { partition: 0, key: "order-1", value: bytes("first"), headers: { "content-type": 'text/"plain"', trace: "ü→✓" }, timestamp: T0 },
        { partition: 0, key: null, value: new Uint8Array(0), headers: null, timestamp: T0 + 1 },
        { partition: 0, key: 'clé ✓ "quoted" \\ back', value: big, headers: {}, timestamp: T0 + 2 },
        { partition: 0, key: null, value: bytes("no key, no headers"), headers: null, timestamp: T0 + 2 },
        { partition: 1, key: null, value: new Uint8Array(0), headers: null, timestamp: T0 + 3 },
        { partition: 1, key: "k", value: new Uint8Array([0, 255, 0]), headers: { a: "" }, timestamp: T0 + 4 },
      ];
      await withLog(db, async () => {});
      await rewind(app, "test", 8, records);

      await withLog(db, async (log) => {
        for (const partition of [0, 1]) {
          expect(plain(await log.read({ topic: "events", partition, fromOffset: 0 }))).toEqual(expected(records, partition));
        }
        // One batch per record written before the migration; keys and headers arrays only where some entry is set.
        const rows = await sql<{ n: number; keys: string | null; headers: string | null }>`SELECT record_count AS n, keys, headers FROM later_log_batches
          WHERE partition_no = 0 ORDER BY first_offset`.execute(app);
        expect(rows.rows).toEqual([
          { n: 1, keys: '["order-1"]', headers: JSON.stringify([JSON.stringify(records[0]!.headers)]) },
          { n: 1, keys: null, headers: null },
          { n: 1, keys: JSON.stringify([records[2]!.key]), headers: '["{}"]' },
          { n: 1, keys: null, headers: null },
        ]);
        expect((await log.appendMany("events", [{ partition: 0, value: "x" }])).map((p) => p.offset)).toEqual([4]);
      });
    } finally {
      await app.destroy();
      await db.dispose();
    }
  });

  it("reads from the middle of a batch, limits that end inside one, and a cut inside one keep offsets dense", async () => {
    const db = await entry.createDatabase();
    try {
      await withLog(db, async (log) => {
        const values = (from: number, n: number) => Array.from({ length: n }, (_, i) => `v${from + i}`);
        // Batches on partition 0: [0], [1..5], [6..9] (with keys and headers), [10..12].
        await log.append("events", { partition: 0, value: "v0" });
        await log.appendMany(
          "events",
          values(1, 5).map((value) => ({ partition: 0, value })),
        );
        await log.appendMany(
          "events",
          values(6, 4).map((value, i) => ({ partition: 0, value, ...(i % 2 === 0 ? { headers: { i: String(i) } } : {}) })),
        );
        await log.appendMany(
          "events",
          values(10, 3).map((value) => ({ partition: 0, value })),
        );
        const read = async (fromOffset: number, limit?: number) => {
          const rs = await log.read({ topic: "events", partition: 0, fromOffset, limit });
          return rs.map((r) => [r.offset, new TextDecoder().decode(r.value)]);
        };
        const range = (from: number, n: number) => values(from, n).map((v, i) => [from + i, v]);
        expect(await read(0)).toEqual(range(0, 13));
        expect(await read(3)).toEqual(range(3, 10));
        expect(await read(3, 2)).toEqual(range(3, 2));
        expect(await read(2, 6)).toEqual(range(2, 6));
        expect(await read(7, 1)).toEqual(range(7, 1));
        expect(await read(12, 100)).toEqual(range(12, 1));
        expect(await read(13)).toEqual([]);
        const headers = (await log.read({ topic: "events", partition: 0, fromOffset: 6, limit: 4 })).map((r) => r.headers);
        expect(headers).toEqual([{ i: "0" }, {}, { i: "2" }, {}]);

        const backend = db.backend();
        await backend.open();
        try {
          // A cut inside [1..5]: the oldest retained offset moves to 3, the batch stays until a cut passes it.
          expect(await backend.log.recordTruncate({ topic: "events", partition: 0, beforeOffset: 3 })).toBe(1);
          const below = await refusal(log.read({ topic: "events", partition: 0, fromOffset: 2 }));
          expect(below).toMatchObject({ code: "OFFSET_OUT_OF_RANGE", oldestOffset: 3, endOffset: 13 });
          expect(below.message).toContain("the oldest retained offset is 3");
          expect(await read(3)).toEqual(range(3, 10));
          // A cut at the batch's end deletes it: its five records count now.
          expect(await backend.log.recordTruncate({ topic: "events", partition: 0, beforeOffset: 6 })).toBe(5);
          expect(await read(6, 2)).toEqual(range(6, 2));
          // A cut inside the last batch, then appends go on from the end.
          expect(await backend.log.recordTruncate({ topic: "events", partition: 0, beforeOffset: 11 })).toBe(4);
          expect((await refusal(log.read({ topic: "events", partition: 0, fromOffset: 10 }))).message).toContain("the oldest retained offset is 11");
          expect(await read(11)).toEqual(range(11, 2));
          expect((await log.append("events", { partition: 0, value: "v13" })).offset).toBe(13);
          expect(await read(11)).toEqual(range(11, 3));
        } finally {
          await backend.close();
        }
      });
    } finally {
      await db.dispose();
    }
  });
});
