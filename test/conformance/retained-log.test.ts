// The retained log's appends and reads (docs/semantics.md L1, L2) on every backend: dense offsets per
// partition from 0, key → partitionForKey, appendMany in one transaction, appendIn in the
// caller's transaction (a rollback uses up no offset), the same bytes read back in offset order,
// topics registered at open (a changed partition count refused), reading below the oldest
// retained offset is OFFSET_OUT_OF_RANGE naming it.
import { describe, expect, it } from "vitest";
import { logTopic, partitionForKey, type LogRecordInput } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { refusal, useLog } from "./log-harness.js";

const bytes = (...b: number[]) => new Uint8Array(b);

describe.each(BACKENDS)("retained log on $name", (entry) => {
  const harness = useLog(entry);

  it("L1: append resolves to { topic, partition, offset }; offsets start at 0, dense per partition; a key picks partitionForKey", async () => {
    const h = await harness();
    const log = await h.open();
    expect(await log.append("events", { partition: 2, value: "a" })).toEqual({ topic: "events", partition: 2, offset: 0 });
    expect(await log.append("events", { partition: 2, value: "b" })).toEqual({ topic: "events", partition: 2, offset: 1 });
    expect(await log.append("events", { partition: 0, value: "c" })).toEqual({ topic: "events", partition: 0, offset: 0 });
    const keyed = await log.append("events", { key: "customer-42", value: "d" });
    expect(keyed.partition).toBe(partitionForKey("customer-42", 4));
    const again = await log.append("events", { key: "customer-42", value: "e" });
    expect(again).toEqual({ ...keyed, offset: keyed.offset + 1 });
  });

  it("L1: appendMany is one transaction resolving to one position per record, consecutive per partition", async () => {
    const h = await harness();
    const log = await h.open();
    await log.append("events", { partition: 1, value: "first" });
    const positions = await log.appendMany("events", [
      { partition: 1, value: "a" },
      { partition: 3, value: "b" },
      { partition: 1, value: "c" },
    ]);
    expect(positions).toEqual([
      { topic: "events", partition: 1, offset: 1 },
      { topic: "events", partition: 3, offset: 0 },
      { topic: "events", partition: 1, offset: 2 },
    ]);
    expect(await log.appendMany("events", [])).toEqual([]);
    // A bad record anywhere: none of them is written.
    const before = await h.counts();
    const error = await refusal(
      log.appendMany("events", [
        { partition: 0, value: "ok" },
        { partition: 0, value: 7 as never },
      ]),
    );
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(await h.counts()).toEqual(before);
    expect((await log.read({ topic: "events", partition: 1, fromOffset: 0 })).map((r) => r.offset)).toEqual([0, 1, 2]);
  });

  it("L2: appendMany stores each record's bytes, key and headers exactly as one append would", async () => {
    const h = await harness();
    const log = await h.open();
    const awkward = ["a,b", '{"x": "y"}', "back\\slash", "NULL", "quote \" and ' both", "é ☃ 𝄞", ""];
    const records: LogRecordInput[] = [
      { partition: 2, value: new Uint8Array([0, 255, 92, 120, 0]), headers: { "a,b": '{"}', NULL: "" } },
      { partition: 2, value: new Uint8Array(0) },
      ...awkward.map((text, i) => ({ key: awkward[(i + 1) % awkward.length] || "k", value: text, headers: { h: text } })),
    ];
    const positions = await log.appendMany("events", records);
    for (const [i, at] of positions.entries()) {
      const [got] = await log.read({ topic: "events", partition: at.partition, fromOffset: at.offset, limit: 1 });
      const r = records[i]!;
      expect([...got!.value]).toEqual([...(typeof r.value === "string" ? new TextEncoder().encode(r.value) : r.value)]);
      expect(got!.key).toBe(r.key ?? null);
      expect(got!.headers).toEqual(r.headers ?? {});
    }
  });

  it("L1: concurrent appendMany batches over the same partitions, listed in any order, leave every partition's offsets dense", async () => {
    const h = await harness();
    const log = await h.open();
    const batches = Array.from({ length: 12 }, (_, b) =>
      Array.from({ length: 40 }, (_, i) => ({ partition: (b % 2 === 0 ? i : 39 - i) % 4, value: `b${b}-${i}` })),
    );
    const positions = (await Promise.all(batches.map((records) => log.appendMany("events", records)))).flat();
    for (let p = 0; p < 4; p++) {
      const offsets = positions.filter((x) => x.partition === p).map((x) => x.offset);
      expect(offsets.sort((a, b) => a - b)).toEqual(Array.from({ length: 120 }, (_, i) => i));
      const stored = await log.read({ topic: "events", partition: p, fromOffset: 0, limit: 1000 });
      expect(stored.map((r) => r.offset)).toEqual(Array.from({ length: 120 }, (_, i) => i));
    }
  });

  it("L1: appendIn writes in the caller's transaction; a rolled-back one writes nothing and uses up no offset", async () => {
    const h = await harness();
    const log = await h.open();
    const app = h.db.appDatabase<Record<string, never>>();
    try {
      const committed = await app.transaction().execute((trx) => log.appendIn(trx, "events", { partition: 0, value: "kept" }));
      expect(committed).toEqual({ topic: "events", partition: 0, offset: 0 });
      const before = await h.counts();
      await expect(
        app.transaction().execute(async (trx) => {
          expect(await log.appendIn(trx, "events", { partition: 0, value: "rolled back" })).toEqual({ topic: "events", partition: 0, offset: 1 });
          throw new Error("roll back");
        }),
      ).rejects.toThrow("roll back");
      expect(await h.counts()).toEqual(before);
      // The rolled-back offset is given back: the next append takes it.
      expect(await log.append("events", { partition: 0, value: "next" })).toEqual({ topic: "events", partition: 0, offset: 1 });
      const read = await log.read({ topic: "events", partition: 0, fromOffset: 0 });
      expect(read.map((r) => new TextDecoder().decode(r.value))).toEqual(["kept", "next"]);
      // Not a transaction: refused, saying what it got.
      const error = await refusal(log.appendIn(app as never, "events", { partition: 0, value: "x" }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toMatch(/^appendIn needs a transaction: .*; got a Kysely instance/);
      expect(await h.counts()).toEqual({ ...before, records: 2 });
    } finally {
      await app.destroy();
    }
  });

  it("L1: an unregistered topic is UNKNOWN_TOPIC and a changed partition count PARTITION_COUNT_MISMATCH; nothing is written", async () => {
    const h = await harness();
    const log = await h.open({ topics: [logTopic("events", 4), logTopic("audit", 2, { retentionMs: 60_000 })] });
    const before = await h.counts();
    expect(before.later_log_topics).toBe(2);
    expect(before.later_log_partitions).toBe(6);
    for (const call of [
      () => log.append("orders", { partition: 0, value: "x" }),
      () => log.appendMany("orders", [{ partition: 0, value: "x" }]),
      () => log.read({ topic: "orders", partition: 0, fromOffset: 0 }),
      () => log.commitOffset({ topic: "orders", group: "g", partition: 0, epoch: 0, offset: 0 }),
      () => log.lag({ topic: "orders", group: "g" }),
      () => log.committed({ topic: "orders", group: "g" }),
    ]) {
      const error = await refusal(call);
      expect(error.code).toBe("UNKNOWN_TOPIC");
      expect(error.message).toContain('log topic "orders" is not registered: add logTopic("orders", N)');
    }
    const mismatch = await refusal(h.open({ topics: [logTopic("fresh", 3), logTopic("events", 8)] }));
    expect(mismatch.code).toBe("PARTITION_COUNT_MISMATCH");
    expect(mismatch.message).toContain('topic "events" has 4 partitions in the database but 8');
    expect(await h.counts()).toEqual(before); // "fresh" was not registered either
  });

  it("L2: read returns the appended bytes, key, headers and timestamp in offset order; strings are stored as UTF-8", async () => {
    const h = await harness();
    const log = await h.open();
    const binary = bytes(0, 1, 255, 0, 128, 10);
    await log.append("events", { partition: 3, value: binary, headers: { source: "test", "trace-id": "ä€𝄞" } });
    await log.append("events", { partition: 3, value: "héllo 𝄞" });
    const records = await log.read({ topic: "events", partition: 3, fromOffset: 0 });
    expect(records.map((r) => r.offset)).toEqual([0, 1]);
    const [a, b] = records;
    expect(a).toMatchObject({ topic: "events", partition: 3, offset: 0, key: null, headers: { source: "test", "trace-id": "ä€𝄞" } });
    expect(a!.value).toBeInstanceOf(Uint8Array);
    expect([...a!.value]).toEqual([...binary]);
    expect(b!.headers).toEqual({});
    expect([...b!.value]).toEqual([...new TextEncoder().encode("héllo 𝄞")]);
    expect(typeof a!.offset).toBe("number");
    expect(a!.timestamp).toBeInstanceOf(Date);
    if (entry.name === "sqlite") expect(a!.timestamp.getTime()).toBe(h.clock.now());
    // PostgreSQL: the database's clock (the log measured its offset at open), not the manual one.
    else expect(Math.abs(a!.timestamp.getTime() - Date.now())).toBeLessThan(60_000);
    const keyed = await log.append("events", { key: "k", value: "v" });
    const [k] = await log.read({ topic: "events", partition: keyed.partition, fromOffset: keyed.offset, limit: 1 });
    expect(k!.key).toBe("k");
  });

  it("L2: read from an offset with a limit; from the end on it is empty", async () => {
    const h = await harness();
    const log = await h.open();
    await log.appendMany(
      "events",
      Array.from({ length: 10 }, (_, i) => ({ partition: 0, value: `r${i}` })),
    );
    const text = (rs: { value: Uint8Array }[]) => rs.map((r) => new TextDecoder().decode(r.value));
    expect(text(await log.read({ topic: "events", partition: 0, fromOffset: 4, limit: 3 }))).toEqual(["r4", "r5", "r6"]);
    expect(text(await log.read({ topic: "events", partition: 0, fromOffset: 8 }))).toEqual(["r8", "r9"]);
    expect(await log.read({ topic: "events", partition: 0, fromOffset: 10 })).toEqual([]);
    expect(await log.read({ topic: "events", partition: 0, fromOffset: 1_000 })).toEqual([]);
    expect(await log.read({ topic: "events", partition: 1, fromOffset: 0 })).toEqual([]);
  });

  it("L2: reading below the oldest retained offset is OFFSET_OUT_OF_RANGE naming it", async () => {
    const h = await harness();
    const log = await h.open();
    await log.appendMany(
      "events",
      Array.from({ length: 6 }, (_, i) => ({ partition: 2, value: `r${i}` })),
    );
    // What the retention sweep will do: delete records below an offset and move the oldest retained offset there.
    // It resolves to the records deleted: PostgreSQL deletes the four; SQLite keeps the six as one batch (one
    // appendMany) and deletes it whole once a cut passes its last record, so it counts them then.
    const backend = h.db.backend();
    await backend.open();
    try {
      const cut = await backend.log.recordTruncate({ topic: "events", partition: 2, beforeOffset: 4 });
      expect(cut).toBe(entry.name === "sqlite" ? 0 : 4);
      const error = await refusal(log.read({ topic: "events", partition: 2, fromOffset: 3 }));
      expect(error.code).toBe("OFFSET_OUT_OF_RANGE");
      expect(error.message).toContain("the oldest retained offset is 4");
      expect(error).toMatchObject({ oldestOffset: 4, endOffset: 6 });
      expect((await log.read({ topic: "events", partition: 2, fromOffset: 4 })).map((r) => r.offset)).toEqual([4, 5]);
      // Appends go on from the end.
      expect((await log.append("events", { partition: 2, value: "r6" })).offset).toBe(6);
      // A cut past the batch deletes the rest: each record counted once over both cuts.
      expect(cut + (await backend.log.recordTruncate({ topic: "events", partition: 2, beforeOffset: 6 }))).toBe(6);
      expect((await log.read({ topic: "events", partition: 2, fromOffset: 6 })).map((r) => r.offset)).toEqual([6]);
    } finally {
      await backend.close();
    }
  });
});
