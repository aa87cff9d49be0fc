// Consumer groups of the retained log (docs/semantics.md L3, L4) on every backend, on manual clocks: one
// member consumes every record in order and commits; two groups each see every record; three
// members split eight partitions by rendezvous and handle each record once; stop() hands its
// partitions over at once; a member whose lease expired has its late commit refused with
// STALE_EPOCH and the offset never moves back; a handler that throws is re-delivered after a backoff.
import { describe, expect, it } from "vitest";
import { logTopic, type LogBatch, type LogConsumer, type RetainedLog, type ServerEvent } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { rendezvousOwner } from "../../packages/runtime/src/core/partition/rendezvous.js";
import { BACKENDS } from "./backends.js";
import { drive, POLL, refusal, useLog } from "./log-harness.js";

async function fill(log: RetainedLog, partitions: number, perPartition: number): Promise<void> {
  const records = [];
  for (let p = 0; p < partitions; p++) for (let i = 0; i < perPartition; i++) records.push({ partition: p, value: `p${p}-${i}` });
  await log.appendMany("events", records);
}

/** A handler recording every (partition, offset) it gets, in order. */
function recorder() {
  const seen: { partition: number; offset: number; member?: string }[] = [];
  const handler = (member?: string) => (b: LogBatch) => {
    for (const r of b.records) seen.push({ partition: b.partition, offset: r.offset, member });
  };
  const offsetsOf = (partition: number) => seen.filter((s) => s.partition === partition).map((s) => s.offset);
  return { seen, handler, offsetsOf };
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe.each(BACKENDS)("retained log consumer groups on $name", (entry) => {
  const harness = useLog(entry);

  it("L3: one member handles every record, per partition in offset order, and commits the offset after each batch", async () => {
    const h = await harness();
    const log = await h.open({ retention: false });
    await fill(log, 4, 5);
    const r = recorder();
    const consumer = await log.consume({ topic: "events", group: "g", handler: r.handler(), maxBatch: 2, pollIntervalMs: POLL });
    await drive(h.clock, () => r.seen.length === 20);
    for (const p of range(4)) expect(r.offsetsOf(p)).toEqual(range(5));
    await consumer.stop();
    expect(await log.committed({ topic: "events", group: "g" })).toEqual(range(4).map((p) => ({ partition: p, offset: 5 })));
    expect((await h.counts()).later_log_group_members).toBe(0);
  });

  it("L3: members of different groups each see every record; startFrom latest starts at the end", async () => {
    const h = await harness();
    const log = await h.open({ retention: false });
    await fill(log, 4, 3);
    const a = recorder();
    const b = recorder();
    const late = recorder();
    await log.consume({ topic: "events", group: "a", handler: a.handler(), pollIntervalMs: POLL });
    await log.consume({ topic: "events", group: "b", handler: b.handler(), pollIntervalMs: POLL });
    const latest = await log.consume({ topic: "events", group: "late", handler: late.handler(), startFrom: "latest", pollIntervalMs: POLL });
    await drive(h.clock, () => a.seen.length === 12 && b.seen.length === 12 && latest.assigned().length === 4);
    await log.append("events", { partition: 1, value: "new" });
    await drive(h.clock, () => a.seen.length === 13 && b.seen.length === 13 && late.seen.length === 1);
    expect(late.seen).toEqual([{ partition: 1, offset: 3, member: undefined }]);
    for (const p of range(4)) expect(a.offsetsOf(p)).toEqual(b.offsetsOf(p));
  });

  it("L3: three members split eight partitions by rendezvous and handle each record once while a producer appends", async () => {
    const h = await harness();
    const log = await h.open({ topics: [logTopic("events", 8)], retention: false });
    const r = recorder();
    const consumers: LogConsumer[] = [];
    for (let i = 0; i < 3; i++) {
      // Named by index: the handler may run before consume() resolves to the member.
      consumers.push(await log.consume({ topic: "events", group: "g", handler: r.handler(String(i)), maxBatch: 3, pollIntervalMs: POLL }));
      await fill(log, 8, 2);
    }
    const ids: string[] = consumers.map((c) => c.memberId);
    const settled = () =>
      consumers.every((c) => {
        const want = range(8).filter((p) => rendezvousOwner(ids, "events", p) === c.memberId);
        return JSON.stringify(c.assigned()) === JSON.stringify(want);
      });
    await drive(h.clock, settled);
    await fill(log, 8, 4);
    await drive(h.clock, () => r.seen.length === 8 * 10);
    for (const p of range(8)) expect(r.offsetsOf(p)).toEqual(range(10)); // once each, in order
    for (const p of range(8)) {
      const owner = String(ids.indexOf(rendezvousOwner(ids, "events", p)!));
      expect(r.seen.filter((s) => s.partition === p && s.offset >= 6).every((s) => s.member === owner)).toBe(true);
    }
    // The last batch's commit follows its handler: wait for it.
    await drive(h.clock, async () => (await log.lag({ topic: "events", group: "g" })).every((l) => l.lag === 0));
  });

  it("L3: a member joining moves only the partitions it wins; every other partition keeps its holder", async () => {
    const h = await harness();
    const log = await h.open({ topics: [logTopic("events", 8)], retention: false });
    const noop = () => {};
    const first = [
      await log.consume({ topic: "events", group: "g", handler: noop, pollIntervalMs: POLL }),
      await log.consume({ topic: "events", group: "g", handler: noop, pollIntervalMs: POLL }),
    ];
    const holders = (cs: LogConsumer[]) => range(8).map((p) => cs.find((c) => c.assigned().includes(p))?.memberId ?? null);
    const rendezvous = (cs: LogConsumer[]) =>
      range(8).map((p) =>
        rendezvousOwner(
          cs.map((c) => c.memberId),
          "events",
          p,
        ),
      );
    await drive(h.clock, () => JSON.stringify(holders(first)) === JSON.stringify(rendezvous(first)));
    const before = holders(first);
    const joined = [...first, await log.consume({ topic: "events", group: "g", handler: noop, pollIntervalMs: POLL })];
    const after = rendezvous(joined);
    // On the way (sampled every step) and at the end, a partition the newcomer does not win never changes holder.
    await drive(h.clock, () => {
      const now = holders(joined);
      for (const p of range(8)) if (after[p] !== joined[2]!.memberId) expect(now[p]).toBe(before[p]);
      return JSON.stringify(now) === JSON.stringify(after);
    });
    expect(
      range(8)
        .filter((p) => after[p] !== before[p])
        .every((p) => after[p] === joined[2]!.memberId),
    ).toBe(true);
  });

  it("consume() refuses bad options with INVALID_ARGUMENT and an unregistered topic with UNKNOWN_TOPIC, registering no member", async () => {
    const h = await harness();
    const log = await h.open({ retention: false });
    const handler = () => {};
    for (const bad of [
      { topic: "events", group: "", handler },
      { topic: "events", group: "g", handler: "h" },
      { topic: "events", group: "g", handler, maxBatch: 0 },
      { topic: "events", group: "g", handler, startFrom: "newest" },
      { topic: "events", group: "g", handler, pollIntervalMs: -1 },
    ]) {
      expect((await refusal(log.consume(bad as never))).code).toBe("INVALID_ARGUMENT");
    }
    expect((await refusal(log.consume({ topic: "nope", group: "g", handler }))).code).toBe("UNKNOWN_TOPIC");
    expect((await h.counts()).later_log_group_members).toBe(0);
  });

  it("L3: stop() finishes the batch, commits and deregisters: another member takes its partitions at once, not after expiry", async () => {
    const h = await harness();
    const log = await h.open({ retention: false });
    await fill(log, 4, 2);
    const r = recorder();
    const a = await log.consume({ topic: "events", group: "g", handler: r.handler("a"), pollIntervalMs: POLL });
    await drive(h.clock, () => a.assigned().length === 4 && r.seen.length === 8);
    const b = await log.consume({ topic: "events", group: "g", handler: r.handler("b"), pollIntervalMs: POLL });
    await a.stop();
    const stoppedAt = h.clock.now();
    await fill(log, 4, 1);
    await drive(h.clock, () => b.assigned().length === 4 && r.seen.length === 12);
    expect(h.clock.now() - stoppedAt).toBeLessThan(6_000); // a heartbeat interval, well before the 15 s expiry
    expect(r.seen.slice(8).every((s) => s.member === "b" && s.offset === 2)).toBe(true);
  });

  it("L4: a member whose lease expired has its late commit refused with STALE_EPOCH; the offset never moves back", async () => {
    const h = await harness();
    const start = h.clock.now();
    const clockA = new ManualClock(start);
    const eventsA: ServerEvent[] = [];
    const logA = await h.open({ topics: [logTopic("events", 1)], retention: false, clock: clockA, onEvent: (e) => eventsA.push(e) });
    const logB = await h.open({ topics: [logTopic("events", 1)], retention: false });
    await logA.appendMany(
      "events",
      range(4).map(() => ({ partition: 0, value: "x" })),
    );
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    let aborted: AbortSignal | undefined;
    // A takes the partition and stalls in its first batch (as a stopped process: its clock stands still).
    await logA.consume({
      topic: "events",
      group: "g",
      maxBatch: 2,
      pollIntervalMs: POLL,
      handler: async (b) => {
        aborted = b.signal;
        await blocked;
      },
    });
    await drive(clockA, () => aborted !== undefined, 1);
    const r = recorder();
    const b = await logB.consume({ topic: "events", group: "g", handler: r.handler("b"), pollIntervalMs: POLL });
    // B's clock passes A's member expiry and lease: B takes the partition with a new epoch and handles from the last commit.
    try {
      await drive(h.clock, async () => (await logB.committed({ topic: "events", group: "g" }))[0]?.offset === 4);
      expect(r.offsetsOf(0)).toEqual(range(4));
      expect(b.assigned()).toEqual([0]);
      // Not before A's lease ran out (a 15 s member expiry alone is not enough). Loosely: on PostgreSQL each log
      // follows the database clock by an offset measured at its open, so B's clock runs a little ahead of A's.
      expect(h.clock.now() - start).toBeGreaterThan(20_000);
    } finally {
      release();
    }
    await drive(clockA, () => eventsA.some((e) => e.type === "error" && e.code === "STALE_EPOCH"), 1);
    expect(eventsA.find((e) => e.type === "error")).toMatchObject({ where: "log commit", code: "STALE_EPOCH" });
    expect(await logB.committed({ topic: "events", group: "g" })).toEqual([{ partition: 0, offset: 4 }]);
    // A learnt it lost the lease (renewal or its refused commit) and holds nothing.
    await drive(clockA, () => eventsA.length > 0 && aborted?.aborted === true, 1);
  });

  it("L3: a handler that throws: the batch is not committed and is delivered again after a 1 s backoff", async () => {
    const h = await harness();
    const events: ServerEvent[] = [];
    const log = await h.open({ topics: [logTopic("events", 1)], retention: false, onEvent: (e) => events.push(e) });
    await log.appendMany(
      "events",
      range(3).map(() => ({ partition: 0, value: "x" })),
    );
    const calls: { at: number; offsets: number[] }[] = [];
    await log.consume({
      topic: "events",
      group: "g",
      pollIntervalMs: POLL,
      handler: (b) => {
        calls.push({ at: h.clock.now(), offsets: b.records.map((x) => x.offset) });
        if (calls.length === 1) throw new Error("boom");
      },
    });
    await drive(h.clock, () => calls.length === 2);
    expect(calls.map((c) => c.offsets)).toEqual([range(3), range(3)]);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(1_000);
    expect(events).toContainEqual({ type: "error", where: "log handler", error: expect.stringContaining("boom") });
    await drive(h.clock, async () => (await log.committed({ topic: "events", group: "g" }))[0]?.offset === 3);
  });
});
