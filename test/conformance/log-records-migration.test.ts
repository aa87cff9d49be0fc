/**
 * SQLite migration 8 moves the retained log's records into a rowid table (2 KiB records no
 * longer spill to an overflow page each): records appended before it read back the same after
 * it, offsets keep counting from where they were, and a duplicate offset is still refused by the
 * table's unique key. SQLite only: PostgreSQL's records were a heap table from the start.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { logTopic, RetainedLog } from "@later/runtime";
import { BACKENDS } from "./backends.js";

const sqliteOnly = BACKENDS.filter((b) => b.name === "sqlite");

describe.each(sqliteOnly)("log records migration on $name", (entry) => {
  it("records written before migration 8 read back the same after it; offsets go on densely", async () => {
    const db = await entry.createDatabase();
    const app = db.appDatabase<Record<string, never>>();
    try {
      const before = await RetainedLog.open({ backend: db.backend(), topics: [logTopic("events", 2)], autoMigrate: true, retention: false });
      const values = ["a", "b".repeat(3000), ""];
      await before.appendMany(
        "events",
        values.map((value) => ({ partition: 1, value, headers: { v: value.slice(0, 5) } })),
      );
      await before.close();
      // Back to the table as migration 6 made it, holding the same rows, and migrations 8 and 9 forgotten.
      await sql.raw("CREATE TABLE old_records AS SELECT * FROM later_log_records").execute(app);
      await sql.raw("DROP TABLE later_log_records").execute(app);
      await sql
        .raw(`CREATE TABLE later_log_records (namespace TEXT NOT NULL, topic TEXT NOT NULL, partition_no INTEGER NOT NULL, "offset" INTEGER NOT NULL,
          key TEXT, value BLOB NOT NULL, headers TEXT, "timestamp" INTEGER NOT NULL, PRIMARY KEY (namespace, topic, partition_no, "offset")) WITHOUT ROWID`)
        .execute(app);
      await sql.raw("INSERT INTO later_log_records SELECT * FROM old_records").execute(app);
      await sql.raw("DROP TABLE old_records").execute(app);
      // Migration 9 (job progress) comes after it: undone too, so both apply again.
      await sql.raw("ALTER TABLE later_jobs DROP COLUMN progress").execute(app);
      await sql.raw("DELETE FROM later_migrations WHERE version >= 8").execute(app);

      const after = await RetainedLog.open({ backend: db.backend(), topics: [logTopic("events", 2)], autoMigrate: true, retention: false });
      try {
        const read = await after.read({ topic: "events", partition: 1, fromOffset: 0 });
        expect(read.map((r) => new TextDecoder().decode(r.value))).toEqual(values);
        expect(read.map((r) => r.headers)).toEqual(values.map((v) => ({ v: v.slice(0, 5) })));
        expect(await after.append("events", { partition: 1, value: "next" })).toEqual({ topic: "events", partition: 1, offset: 3 });
        const table = await sql<{ sql: string }>`SELECT sql FROM sqlite_master WHERE name = 'later_log_records'`.execute(app);
        expect(table.rows[0]!.sql).not.toMatch(/WITHOUT ROWID/i);
        const duplicate = sql`INSERT INTO later_log_records (namespace, topic, partition_no, "offset", value, "timestamp")
          SELECT namespace, topic, partition_no, "offset", value, "timestamp" FROM later_log_records LIMIT 1`.execute(app);
        await expect(duplicate).rejects.toThrow(/UNIQUE/);
      } finally {
        await after.close();
      }
    } finally {
      await app.destroy();
      await db.dispose();
    }
  });
});
