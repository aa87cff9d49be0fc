// enqueueIn, enqueueToPartitionIn and the retained log's appendIn never commit on their own: what
// they are given must be inside a transaction of the application's, or they refuse it with
// INVALID_ARGUMENT and write nothing. PostgreSQL: a pg client on which BEGIN was never run (its
// statements would autocommit); both: a Kysely instance. SQLite: a Kysely controlled transaction is
// taken (it is inside BEGIN) and a plain better-sqlite3 Database is refused.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import pg from "pg";
import { logTopic, topic } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { refusal, useHarness } from "./harness.js";

describe.each(BACKENDS)("enqueueIn outside a transaction on $name", (entry) => {
  const harness = useHarness(entry);
  const start = () =>
    harness().start({ handlers: { a: { handle: () => undefined } }, topics: [topic("orders", 2)], logTopics: [logTopic("events", 1)], workerCount: 1 });

  it("a Kysely instance (not a transaction) is refused by enqueueIn, enqueueToPartitionIn and appendIn; nothing is stored", async () => {
    const server = await start();
    const app = harness().db.appDatabase<Record<string, never>>();
    try {
      for (const p of [
        server.publisher.enqueueIn(app as never, "a", {}),
        server.publisher.enqueueToPartitionIn(app as never, "a", {}, { topic: "orders", partition: 0 }),
        server.log.appendIn(app as never, "events", { partition: 0, value: "x" }),
      ]) {
        const error = await refusal(p);
        expect(error.code).toBe("INVALID_ARGUMENT");
        expect(error.message).toMatch(/needs a transaction: .*got a Kysely instance/);
      }
      expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
      expect(await server.log.read({ topic: "events", partition: 0, fromOffset: 0 })).toEqual([]);
    } finally {
      await app.destroy();
    }
  });

  if (entry.name === "postgres") {
    it("a pg client that never ran BEGIN is refused (it would commit by itself); inside BEGIN the job commits with the client", async () => {
      const server = await start();
      const pool = new pg.Pool({ connectionString: harness().db.location, max: 1 });
      const client = await pool.connect();
      try {
        await client.query(`SET search_path TO "${harness().db.schema}"`);
        for (const p of [
          server.publisher.enqueueIn(client, "a", {}),
          server.publisher.enqueueToPartitionIn(client, "a", {}, { topic: "orders", partition: 0 }),
          server.log.appendIn(client, "events", { partition: 0, value: "x" }),
        ]) {
          const error = await refusal(p);
          expect(error.code).toBe("INVALID_ARGUMENT");
          expect(error.message).toMatch(/needs a transaction: got a pg client that is not inside one .*run BEGIN on it first/);
        }
        expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
        expect(await server.log.read({ topic: "events", partition: 0, fromOffset: 0 })).toEqual([]);

        // Rolled back: nothing. Committed: the job and the record.
        await client.query("BEGIN");
        await server.publisher.enqueueIn(client, "a", {});
        await client.query("ROLLBACK");
        expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
        await client.query("BEGIN");
        const id = await server.publisher.enqueueToPartitionIn(client, "a", {}, { topic: "orders", partition: 1 });
        await server.log.appendIn(client, "events", { partition: 0, value: "y" });
        expect(await server.backend.inspect.jobGet({ id })).toBeNull(); // not committed yet
        await client.query("COMMIT");
        expect((await server.backend.inspect.jobGet({ id }))?.id).toBe(id);
        expect((await server.log.read({ topic: "events", partition: 0, fromOffset: 0 })).map((r) => Buffer.from(r.value).toString())).toEqual(["y"]);
        // After the COMMIT the client is idle again: refused again.
        expect((await refusal(server.publisher.enqueueIn(client, "a", {}))).code).toBe("INVALID_ARGUMENT");
      } finally {
        client.release();
        await pool.end();
      }
    });
  }

  if (entry.name === "sqlite") {
    it("a Kysely controlled transaction is taken (committed: stored; rolled back: nothing); a plain better-sqlite3 Database is refused", async () => {
      const server = await start();
      const app = harness().db.appDatabase<Record<string, never>>();
      const raw = new Database(harness().db.location);
      try {
        const rolledBack = await app.startTransaction().execute();
        await server.publisher.enqueueIn(rolledBack as never, "a", {});
        await rolledBack.rollback().execute();
        expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
        const committed = await app.startTransaction().execute();
        const id = await server.publisher.enqueueIn(committed as never, "a", {});
        await committed.commit().execute();
        expect((await server.backend.inspect.jobGet({ id }))?.id).toBe(id);
        // A finished controlled transaction is not used again: Kysely refuses it, nothing autocommits.
        await expect(server.publisher.enqueueIn(committed as never, "a", {})).rejects.toThrow(/committed/);

        const error = await refusal(server.publisher.enqueueIn(raw as never, "a", {}));
        expect(error.code).toBe("INVALID_ARGUMENT");
        expect(error.message).toMatch(/^enqueueIn needs a transaction: the SQLite backend takes a Kysely transaction/);
        expect((await refusal(server.log.appendIn(raw as never, "events", { partition: 0, value: "x" }))).code).toBe("INVALID_ARGUMENT");
        expect((await server.backend.inspect.jobList({ limit: 10 })).map((j) => j.id)).toEqual([id]);
      } finally {
        raw.close();
        await app.destroy();
      }
    });
  }
});
