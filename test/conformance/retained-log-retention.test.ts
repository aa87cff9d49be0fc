// Retention of the retained log (docs/semantics.md L6) on every backend, on a manual clock: records older than
// retentionMs (default seven days) and beyond the newest retainRecords of a partition are deleted
// in batches, moving the oldest retained offset (a read below it is OFFSET_OUT_OF_RANGE naming it);
// minRetainUntilCommitted holds what a group has not committed; overlapping sweeps delete each
// record once; under steady append and commit the records kept stay bounded.
//
// SQLite keeps the records of one append to one partition as one batch row and deletes a batch
// whole once a cut has passed all of its records (the oldest retained offset moves exactly, so
// reads are refused below it as on PostgreSQL). So the tests that count deleted or kept records
// exactly append one record at a time (fill); the one that appends in batches (fillBatch) asserts
// what a batch-granular cut guarantees.
import { describe, expect, it } from "vitest";
import { DEFAULT_LOG_RETENTION_MS, logTopic, type RetainedLog, type ServerEvent } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { refusal, useLog } from "./log-harness.js";

const DAY = 24 * 60 * 60 * 1000;
/** A sweep loop that never turns within a test (the clock moves days at most): these tests sweep with sweepRetention(). */
const byHand = (batchSize = 500) => ({ intervalMs: 3650 * DAY, batchSize });

/** Appends `n` records one append each: every record its own batch on SQLite, so cuts delete exactly. */
async function fill(log: RetainedLog, topic: string, partition: number, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await log.append(topic, { partition, value: `r${i}` });
}

/** Appends `n` records in one `appendMany`: one batch on SQLite. */
async function fillBatch(log: RetainedLog, topic: string, partition: number, n: number): Promise<void> {
  await log.appendMany(
    topic,
    Array.from({ length: n }, (_, i) => ({ partition, value: `r${i}` })),
  );
}

async function offsets(log: RetainedLog, topic: string, partition: number, fromOffset: number): Promise<number[]> {
  return (await log.read({ topic, partition, fromOffset, limit: 1000 })).map((r) => r.offset);
}

describe.each(BACKENDS)("retained log retention on $name", (entry) => {
  const harness = useLog(entry);

  it("L6: records older than retentionMs are deleted; a read below is OFFSET_OUT_OF_RANGE naming the new oldest offset", async () => {
    const h = await harness();
    const log = await h.open({ topics: [logTopic("events", 2, { retentionMs: 60_000 })], retention: byHand() });
    await fill(log, "events", 0, 5);
    h.clock.advance(30_000);
    await fill(log, "events", 0, 3);
    h.clock.advance(30_000); // the first five are exactly 60 s old: not older than retentionMs
    expect(await log.sweepRetention()).toEqual({ deleted: 0, batches: 0 });
    h.clock.advance(1);
    expect(await log.sweepRetention()).toEqual({ deleted: 5, batches: 1 });
    const error = await refusal(log.read({ topic: "events", partition: 0, fromOffset: 4 }));
    expect(error.code).toBe("OFFSET_OUT_OF_RANGE");
    expect(error).toMatchObject({ oldestOffset: 5, endOffset: 8 });
    expect(error.message).toContain("the oldest retained offset is 5");
    expect(await offsets(log, "events", 0, 5)).toEqual([5, 6, 7]);
    expect((await h.counts()).records).toBe(3);
    // The group that never committed starts at the new oldest offset.
    expect((await log.lag({ topic: "events", group: "g" }))[0]).toEqual({ partition: 0, endOffset: 8, committedOffset: 5, lag: 3 });
    h.clock.advance(30_000);
    expect(await log.sweepRetention()).toEqual({ deleted: 3, batches: 1 });
    expect(await offsets(log, "events", 0, 8)).toEqual([]);
    await fill(log, "events", 0, 1); // offsets go on from the end
    expect(await offsets(log, "events", 0, 8)).toEqual([8]);
  });

  it("L6: without retentionMs a topic keeps seven days", async () => {
    const h = await harness();
    const log = await h.open({ topics: [logTopic("events", 1)], retention: byHand() });
    await fill(log, "events", 0, 2);
    h.clock.advance(DAY);
    await fill(log, "events", 0, 1);
    h.clock.advance(DEFAULT_LOG_RETENTION_MS - DAY);
    expect(DEFAULT_LOG_RETENTION_MS).toBe(7 * DAY);
    expect((await log.sweepRetention()).deleted).toBe(0);
    h.clock.advance(1);
    expect((await log.sweepRetention()).deleted).toBe(2);
    expect(await offsets(log, "events", 0, 2)).toEqual([2]);
  });

  it("L6: retainRecords keeps the newest N of each partition", async () => {
    const h = await harness();
    const log = await h.open({ topics: [logTopic("events", 3, { retainRecords: 3 })], retention: byHand() });
    await fill(log, "events", 1, 10);
    await fill(log, "events", 2, 2);
    expect(await log.sweepRetention()).toEqual({ deleted: 7, batches: 1 });
    expect(await offsets(log, "events", 1, 7)).toEqual([7, 8, 9]);
    expect((await refusal(log.read({ topic: "events", partition: 1, fromOffset: 6 }))).code).toBe("OFFSET_OUT_OF_RANGE");
    expect(await offsets(log, "events", 2, 0)).toEqual([0, 1]);
    expect(await log.sweepRetention()).toEqual({ deleted: 0, batches: 0 });
    await fill(log, "events", 1, 2);
    expect((await log.sweepRetention()).deleted).toBe(2);
    expect(await offsets(log, "events", 1, 9)).toEqual([9, 10, 11]);
  });

  it("L6: minRetainUntilCommitted keeps what a group has not committed, then frees it after the commit", async () => {
    const h = await harness();
    const topics = [
      logTopic("events", 2, { retentionMs: 1000, minRetainUntilCommitted: true }),
      logTopic("nobody", 1, { retentionMs: 1000, minRetainUntilCommitted: true }),
    ];
    const log = await h.open({ topics, retention: byHand() });
    await fill(log, "events", 0, 10);
    await fill(log, "events", 1, 4);
    await fill(log, "nobody", 0, 3);
    await log.commitOffset({ topic: "events", group: "billing", partition: 0, epoch: 0, offset: 6 });
    await log.commitOffset({ topic: "events", group: "audit", partition: 0, epoch: 0, offset: 4 });
    h.clock.advance(5000); // every record is past retentionMs
    // Partition 0: up to the lowest commit (audit's 4). Partition 1: neither group has committed it, so it is held whole.
    // Topic "nobody" has no groups: retention applies as usual.
    expect((await log.sweepRetention()).deleted).toBe(4 + 3);
    expect(await offsets(log, "events", 0, 4)).toEqual([4, 5, 6, 7, 8, 9]);
    expect(await offsets(log, "events", 1, 0)).toEqual([0, 1, 2, 3]);
    expect(await offsets(log, "nobody", 0, 3)).toEqual([]);
    await log.commitOffset({ topic: "events", group: "audit", partition: 0, epoch: 0, offset: 10 });
    expect((await log.sweepRetention()).deleted).toBe(2); // now billing's 6 is the lowest
    await log.commitOffset({ topic: "events", group: "billing", partition: 0, epoch: 0, offset: 10 });
    await log.commitOffset({ topic: "events", group: "billing", partition: 1, epoch: 0, offset: 4 });
    expect((await log.sweepRetention()).deleted).toBe(4); // partition 1: audit still holds it
    await log.commitOffset({ topic: "events", group: "audit", partition: 1, epoch: 0, offset: 3 });
    expect((await log.sweepRetention()).deleted).toBe(3);
    expect(await offsets(log, "events", 1, 3)).toEqual([3]);
    expect((await h.counts()).records).toBe(1);
  });

  it("L6: minRetainUntilCommitted: a group with a live member but no commit yet holds every partition", async () => {
    const h = await harness();
    const log = await h.open({ topics: [logTopic("events", 2, { retainRecords: 1, minRetainUntilCommitted: true })], retention: byHand() });
    await fill(log, "events", 0, 3);
    await fill(log, "events", 1, 3);
    // A member of group "fresh" joins (what consume() will write) before the group commits anything.
    await h.exec(
      "INSERT INTO later_log_group_members (namespace, topic, group_name, member_id, expires_at) SELECT namespace, topic, 'fresh', 'member-a', 9999999999999 FROM later_log_topics WHERE topic = 'events'",
    );
    expect((await log.sweepRetention()).deleted).toBe(0);
    await log.commitOffset({ topic: "events", group: "fresh", partition: 1, epoch: 0, offset: 3 });
    expect((await log.sweepRetention()).deleted).toBe(2); // partition 1 only: partition 0 is still uncommitted
    expect(await offsets(log, "events", 0, 0)).toEqual([0, 1, 2]);
    expect(await offsets(log, "events", 1, 2)).toEqual([2]);
  });

  it("L6: deletes in batches of batchSize records; two processes sweeping at once delete each record once", async () => {
    const h = await harness();
    const topics = [logTopic("events", 2, { retainRecords: 5 })];
    const a = await h.open({ topics, retention: byHand(7) });
    const b = await h.open({ topics, retention: byHand(7) });
    await fill(a, "events", 0, 40);
    await fill(a, "events", 1, 12);
    expect(await a.sweepRetention()).toEqual({ deleted: 35 + 7, batches: 5 + 1 });
    expect(await offsets(b, "events", 0, 35)).toEqual([35, 36, 37, 38, 39]);
    await fill(b, "events", 0, 30);
    await fill(b, "events", 1, 30);
    const [ra, rb] = await Promise.all([a.sweepRetention(), b.sweepRetention()]);
    expect(ra.deleted + rb.deleted).toBe(60);
    expect((await h.counts()).records).toBe(10);
    expect(await offsets(a, "events", 0, 65)).toEqual([65, 66, 67, 68, 69]);
    expect(await offsets(a, "events", 1, 37)).toEqual([37, 38, 39, 40, 41]);
  });

  it("L6: RetainedLog sweeps every intervalMs on its own clock and reports it; close() stops the sweep", async () => {
    const h = await harness();
    const events: ServerEvent[] = [];
    const log = await h.open({ topics: [logTopic("events", 1, { retainRecords: 2 })], retention: { intervalMs: 1000 }, onEvent: (e) => events.push(e) });
    await fill(log, "events", 0, 5);
    h.clock.advance(1000);
    await expect.poll(() => events, { timeout: 10_000 }).toContainEqual({ type: "maintenance", task: "log-retention", count: 3 });
    expect(await offsets(log, "events", 0, 3)).toEqual([3, 4]);
    await log.close();
    await log.close(); // idempotent
    expect((await refusal(log.sweepRetention())).code).toBe("SERVER_STOPPED");
  });

  it("L6: bad retention settings are INVALID_CONFIG at open", async () => {
    const h = await harness();
    for (const retention of [{ intervalMs: 0 }, { batchSize: 1.5 }, { batchSize: -1 }, null, "daily"]) {
      const error = await refusal(h.open({ retention: retention as never }));
      expect(error.code).toBe("INVALID_CONFIG");
      expect(error.message).toContain("retention");
    }
  });

  it("L6: under steady append (in batches) and commit the records kept stay bounded", async () => {
    const h = await harness();
    const partitions = 2;
    const retainRecords = 50;
    const perRound = 30;
    const topics = [logTopic("events", partitions, { retainRecords, retentionMs: 60_000, minRetainUntilCommitted: true })];
    const log = await h.open({ topics, retention: byHand(20) });
    const baseline = await h.counts();
    let appended = 0;
    for (let round = 0; round < 40; round++) {
      for (let p = 0; p < partitions; p++) await fillBatch(log, "events", p, perRound);
      appended += partitions * perRound;
      h.clock.advance(10_000);
      // A consumer that keeps up, a few records behind (stands in for consume() until it lands).
      for (const lag of await log.lag({ topic: "events", group: "reader" })) {
        await log.commitOffset({
          topic: "events",
          group: "reader",
          partition: lag.partition,
          epoch: 0,
          offset: Math.max(lag.committedOffset, lag.endOffset - 5),
        });
      }
      await log.sweepRetention();
      const counts = await h.counts();
      // Committed beyond the count limit, so each partition's oldest retained offset is its end - retainRecords
      // (once it has that many). PostgreSQL keeps exactly those records; SQLite keeps whole batches, so at most
      // the batch straddling the cut more: never fewer than retention keeps, never more than one batch beyond it.
      const perPartition = Math.min(retainRecords, appended / partitions);
      expect(counts.records).toBeGreaterThanOrEqual(partitions * perPartition);
      expect(counts.records).toBeLessThanOrEqual(partitions * (perPartition + perRound - 1));
      // The oldest retained offset moved exactly, on both backends: reads start there, and below it are refused.
      const end = appended / partitions;
      for (let p = 0; p < partitions; p++) {
        expect(await offsets(log, "events", p, end - perPartition)).toHaveLength(perPartition);
        if (end > perPartition) {
          const below = await refusal(log.read({ topic: "events", partition: p, fromOffset: end - perPartition - 1 }));
          expect(below).toMatchObject({ code: "OFFSET_OUT_OF_RANGE", oldestOffset: end - perPartition });
        }
      }
      expect(counts.later_log_partitions).toBe(baseline.later_log_partitions);
      expect(counts.later_log_topics).toBe(baseline.later_log_topics);
      expect(counts.later_log_group_partitions).toBe(partitions);
    }
    expect(appended).toBe(2400);
    expect((await log.lag({ topic: "events", group: "reader" })).map((l) => l.lag)).toEqual([5, 5]);
  });
});
