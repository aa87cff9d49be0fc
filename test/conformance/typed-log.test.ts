// Typed retained logs through later-gen (docs/semantics.md L7) on every backend: the generated openLogs()
// registers every schema log topic with its partition count; logs.<name>.append(value) stores the
// value as JSON (keyed by the @partitionKey field, or at the { key } / { partition } given), and
// read returns typed records with their Date fields revived; appendMany, appendIn, commitOffset,
// committed and lag go through to the untyped log underneath.
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { logTopic, partitionForKey } from "@later/runtime";
import type { ManualClock } from "@later/runtime/testing";
import { openLogs } from "../codegen/schemas/events.generated.js";
import type { OrderEvent } from "../codegen/schemas/events.schema.js";
import { BACKENDS, type TestDatabase } from "./backends.js";
import { drive, POLL, refusal, useLog } from "./log-harness.js";

const placed: OrderEvent = {
  customerId: "c-7",
  orderId: "o-1",
  kind: "placed",
  at: new Date(Date.UTC(2026, 5, 1, 9, 30)),
  lines: [
    { sku: "tea", quantity: 2, promisedBy: new Date(Date.UTC(2026, 5, 3)) },
    { sku: "cup", quantity: 1 },
  ],
};

describe.each(BACKENDS)("typed log on $name", (entry) => {
  const harness = useLog(entry);
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((l) => l.close()));
  });
  const open = async (db: TestDatabase, clock: ManualClock) => {
    const logs = await openLogs({ backend: db.backend(), autoMigrate: true, clock, retention: false });
    opened.push(logs);
    return logs;
  };

  it("L7: append keys by @partitionKey; read returns the typed value with Dates revived", async () => {
    const h = await harness();
    const logs = await open(h.db, h.clock);
    const first = await logs.orderEvents.append(placed);
    expect(first).toEqual({ topic: "orderEvents", partition: partitionForKey("c-7", 8), offset: 0 });
    const second = await logs.orderEvents.append({ ...placed, kind: "paid" }, { headers: { source: "web" } });
    expect(second).toEqual({ ...first, offset: 1 });
    const records = await logs.orderEvents.read({ partition: first.partition, fromOffset: 0 });
    expect(records.map((r) => r.value)).toEqual([placed, { ...placed, kind: "paid" }]);
    const value = records[0]!.value;
    expect(value.at).toBeInstanceOf(Date);
    expect(value.lines[0]!.promisedBy).toBeInstanceOf(Date);
    expect(value.lines[0]!.promisedBy!.getTime()).toBe(Date.UTC(2026, 5, 3));
    expect(records[0]!.key).toBe("c-7");
    expect(records[1]!.headers).toEqual({ source: "web" });
    expect(records[0]!.timestamp).toBeInstanceOf(Date);
    // The untyped log underneath holds the JSON text as UTF-8 bytes.
    const [raw] = await logs.log.read({ topic: "orderEvents", partition: first.partition, fromOffset: 0, limit: 1 });
    expect(JSON.parse(new TextDecoder().decode(raw!.value))).toEqual(JSON.parse(JSON.stringify(placed)));
  });

  it("L7: a topic without @partitionKey appends to the { key } or { partition } given", async () => {
    const h = await harness();
    const logs = await open(h.db, h.clock);
    const atPartition = await logs.auditTrail.append({ actor: "ann", action: "login" }, { partition: 1 });
    expect(atPartition).toEqual({ topic: "audit-trail", partition: 1, offset: 0 });
    const byKey = await logs.auditTrail.append({ actor: "bob", action: "logout" }, { key: "bob" });
    expect(byKey.partition).toBe(partitionForKey("bob", 2));
    const many = await logs.auditTrail.appendMany([
      { value: { actor: "a", action: "x" }, partition: 0 },
      { value: { actor: "b", action: "y" }, partition: 0 },
    ]);
    expect(many.map((p) => p.partition)).toEqual([0, 0]);
    expect(many[1]!.offset).toBe(many[0]!.offset + 1);
    expect((await logs.auditTrail.read({ partition: 1, fromOffset: 0 })).map((r) => r.value)).toEqual([{ actor: "ann", action: "login" }]);
    expect((await refusal(logs.auditTrail.append({ actor: "c", action: "z" }, undefined as never))).code).toBe("INVALID_ARGUMENT");
    // An inline value type (`Logs["clicks"]`) is revived too.
    const at = new Date(Date.UTC(2026, 0, 2));
    await logs.clicks.append({ url: "/a", at }, { partition: 0 });
    const [click] = await logs.clicks.read({ partition: 0, fromOffset: 0 });
    expect(click!.value).toEqual({ url: "/a", at });
  });

  it("L7: a value that would not round-trip through JSON is refused before anything is written", async () => {
    const h = await harness();
    const logs = await open(h.db, h.clock);
    const before = await h.counts();
    const error = await refusal(logs.orderEvents.appendMany([placed, { ...placed, lines: [{ sku: "x", quantity: Number.NaN }] }]));
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("NaN");
    expect(await h.counts()).toEqual(before);
  });

  it("L7: appendIn writes in the caller's transaction; commitOffset, committed and lag per group", async () => {
    const h = await harness();
    const logs = await open(h.db, h.clock);
    const app = h.db.appDatabase<Record<string, never>>();
    try {
      const position = await app.transaction().execute((trx) => logs.orderEvents.appendIn(trx as never, placed));
      await expect(
        app.transaction().execute(async (trx) => {
          await logs.orderEvents.appendIn(trx as never, { ...placed, kind: "shipped" });
          throw new Error("roll back");
        }),
      ).rejects.toThrow("roll back");
      const again = await logs.orderEvents.append({ ...placed, kind: "paid" });
      expect(again).toEqual({ ...position, offset: position.offset + 1 });
      const p = position.partition;
      expect((await logs.orderEvents.lag({ group: "billing" })).find((l) => l.partition === p)).toEqual({
        partition: p,
        endOffset: 2,
        committedOffset: 0,
        lag: 2,
      });
      expect(await logs.orderEvents.commitOffset({ group: "billing", partition: p, epoch: 0, offset: 1 })).toBe(1);
      expect(await logs.orderEvents.committed({ group: "billing" })).toEqual([{ partition: p, offset: 1 }]);
      expect((await logs.orderEvents.lag({ group: "billing" })).find((l) => l.partition === p)?.lag).toBe(1);
      expect((await logs.orderEvents.read({ partition: p, fromOffset: 1 })).map((r) => r.value.kind)).toEqual(["paid"]);
    } finally {
      await app.destroy();
    }
  });

  it("L7: openLogs registers every schema log topic with its count; a stored topic with another count is refused", async () => {
    const h = await harness();
    const untyped = await h.open({ topics: [logTopic("orderEvents", 3)] });
    await untyped.close();
    const error = await refusal(openLogs({ backend: h.db.backend(), autoMigrate: true, clock: h.clock, retention: false }));
    expect(error.code).toBe("PARTITION_COUNT_MISMATCH");
  });

  it("L7: topicOptions sets a schema log topic's retention; a name outside the schema is refused", async () => {
    const h = await harness();
    const logs = await openLogs({
      backend: h.db.backend(),
      autoMigrate: true,
      clock: h.clock,
      retention: false,
      topicOptions: { orderEvents: { retentionMs: 60_000, retainRecords: 10 } },
    });
    opened.push(logs);
    const app = h.db.appDatabase();
    try {
      const rows = await sql<{ topic: string; retention_ms: number | string | null; retain_records: number | string | null }>`
        SELECT topic, retention_ms, retain_records FROM later_log_topics ORDER BY topic`.execute(app);
      const byName = Object.fromEntries(
        rows.rows.map((r) => [r.topic, [r.retention_ms === null ? null : Number(r.retention_ms), r.retain_records === null ? null : Number(r.retain_records)]]),
      );
      expect(byName.orderEvents).toEqual([60_000, 10]);
      expect(byName["audit-trail"]?.[1]).toBeNull();
    } finally {
      await app.destroy();
    }
    const error = await refusal(openLogs({ backend: h.db.backend(), clock: h.clock, retention: false, topicOptions: { orders: { retentionMs: 1 } } }));
    expect(error.code).toBe("INVALID_CONFIG");
  });

  it("L7: consume hands each batch's records typed, Dates revived, and commits after the handler", async () => {
    const h = await harness();
    const logs = await open(h.db, h.clock);
    const appended = await logs.orderEvents.appendMany([placed, { ...placed, kind: "paid" }, { ...placed, kind: "shipped" }]);
    const seen: OrderEvent[] = [];
    const consumer = await logs.orderEvents.consume({
      group: "billing",
      pollIntervalMs: POLL,
      handler: (batch) => {
        for (const r of batch.records) seen.push(r.value);
      },
    });
    await drive(h.clock, async () => (await logs.orderEvents.lag({ group: "billing" })).every((p) => p.lag === 0) && seen.length === 3);
    await consumer.stop();
    expect(seen.map((v) => v.kind)).toEqual(["placed", "paid", "shipped"]);
    expect(seen[0]!.at).toBeInstanceOf(Date);
    expect(seen[0]!.lines[0]!.promisedBy!.getTime()).toBe(Date.UTC(2026, 5, 3));
    const partition = appended[0]!.partition;
    expect(await logs.orderEvents.committed({ group: "billing" })).toContainEqual({ partition, offset: 3 });
    expect((await refusal(logs.orderEvents.consume({ group: "g", handler: "no" as never }))).code).toBe("INVALID_ARGUMENT");
  });
});
