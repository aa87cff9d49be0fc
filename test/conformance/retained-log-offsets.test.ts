// Consumer groups' committed offsets and lag (docs/semantics.md L4, L5) on every backend: commitOffset is
// fenced by the group partition's epoch (STALE_EPOCH, nothing changed), never moves an offset
// back, refuses one beyond the partition's end; committed() lists the commits; lag() per
// partition is endOffset − committedOffset, a group without a commit at the oldest retained offset.
import { describe, expect, it } from "vitest";
import { BACKENDS } from "./backends.js";
import { refusal, useLog } from "./log-harness.js";

describe.each(BACKENDS)("retained log offsets on $name", (entry) => {
  const harness = useLog(entry);

  it("L4: a manual-commit consumer commits at epoch 0; an offset never moves back; committed() lists the commits", async () => {
    const h = await harness();
    const log = await h.open();
    await log.appendMany(
      "events",
      Array.from({ length: 5 }, () => ({ partition: 1, value: "x" })),
    );
    await log.appendMany(
      "events",
      Array.from({ length: 2 }, () => ({ partition: 3, value: "y" })),
    );
    expect(await log.committed({ topic: "events", group: "billing" })).toEqual([]);
    expect(await log.commitOffset({ topic: "events", group: "billing", partition: 1, epoch: 0, offset: 3 })).toBe(3);
    expect(await log.commitOffset({ topic: "events", group: "billing", partition: 1, epoch: 0, offset: 1 })).toBe(3); // not back
    expect(await log.commitOffset({ topic: "events", group: "billing", partition: 3, epoch: 0, offset: 2 })).toBe(2); // at the end
    expect(await log.commitOffset({ topic: "events", group: "billing", partition: 1, epoch: 0, offset: 5 })).toBe(5);
    expect(await log.committed({ topic: "events", group: "billing" })).toEqual([
      { partition: 1, offset: 5 },
      { partition: 3, offset: 2 },
    ]);
    // Groups are independent.
    expect(await log.committed({ topic: "events", group: "audit" })).toEqual([]);
  });

  it("L4: a stale epoch is STALE_EPOCH and changes nothing; only the current epoch advances the offset", async () => {
    const h = await harness();
    const log = await h.open();
    await log.appendMany(
      "events",
      Array.from({ length: 6 }, () => ({ partition: 0, value: "x" })),
    );
    // No lease yet: the group partition is at epoch 0, so any other epoch is stale.
    const before = await h.counts();
    const none = await refusal(log.commitOffset({ topic: "events", group: "g", partition: 0, epoch: 1, offset: 2 }));
    expect(none.code).toBe("STALE_EPOCH");
    expect(none).toMatchObject({ currentEpoch: 0 });
    expect(await h.counts()).toEqual(before);
    await log.commitOffset({ topic: "events", group: "g", partition: 0, epoch: 0, offset: 2 });
    // A member of the group takes the partition's lease (what consume() will write): the epoch moves to 3.
    await h.exec(
      "UPDATE later_log_group_partitions SET epoch = 3, lease_owner = 'member-b', lease_expires_at = 9999999999999 WHERE topic = 'events' AND group_name = 'g' AND partition_no = 0",
    );
    for (const epoch of [0, 2, 4]) {
      const error = await refusal(log.commitOffset({ topic: "events", group: "g", partition: 0, epoch, offset: 5 }));
      expect(error.code).toBe("STALE_EPOCH");
      expect(error.message).toContain(`has epoch ${epoch}, but the partition's current epoch is 3`);
    }
    expect(await log.committed({ topic: "events", group: "g" })).toEqual([{ partition: 0, offset: 2 }]);
    expect(await log.commitOffset({ topic: "events", group: "g", partition: 0, epoch: 3, offset: 5 })).toBe(5);
    expect(await log.committed({ topic: "events", group: "g" })).toEqual([{ partition: 0, offset: 5 }]);
  });

  it("L4: a commit beyond the partition's end is OFFSET_OUT_OF_RANGE; nothing is written", async () => {
    const h = await harness();
    const log = await h.open();
    await log.appendMany("events", [
      { partition: 2, value: "a" },
      { partition: 2, value: "b" },
    ]);
    const before = await h.counts();
    const error = await refusal(log.commitOffset({ topic: "events", group: "g", partition: 2, epoch: 0, offset: 3 }));
    expect(error.code).toBe("OFFSET_OUT_OF_RANGE");
    expect(error.message).toContain("beyond the partition's end (end offset 2)");
    const empty = await refusal(log.commitOffset({ topic: "events", group: "g", partition: 0, epoch: 0, offset: 1 }));
    expect(empty.code).toBe("OFFSET_OUT_OF_RANGE");
    expect(await h.counts()).toEqual(before);
    expect(await log.committed({ topic: "events", group: "g" })).toEqual([]);
  });

  it("L5: lag per partition is endOffset − committedOffset; without a commit the group is at the oldest retained offset", async () => {
    const h = await harness();
    const log = await h.open();
    await log.appendMany("events", [
      ...Array.from({ length: 7 }, () => ({ partition: 0, value: "a" })),
      ...Array.from({ length: 3 }, () => ({ partition: 2, value: "b" })),
    ]);
    await log.commitOffset({ topic: "events", group: "g", partition: 0, epoch: 0, offset: 4 });
    expect(await log.lag({ topic: "events", group: "g" })).toEqual([
      { partition: 0, endOffset: 7, committedOffset: 4, lag: 3 },
      { partition: 1, endOffset: 0, committedOffset: 0, lag: 0 },
      { partition: 2, endOffset: 3, committedOffset: 0, lag: 3 },
      { partition: 3, endOffset: 0, committedOffset: 0, lag: 0 },
    ]);
    // Retention moved partition 2's oldest offset: a group without a commit starts there.
    const backend = h.db.backend();
    await backend.open();
    try {
      await backend.log.recordTruncate({ topic: "events", partition: 2, beforeOffset: 2 });
    } finally {
      await backend.close();
    }
    const lag = await log.lag({ topic: "events", group: "g" });
    expect(lag[2]).toEqual({ partition: 2, endOffset: 3, committedOffset: 2, lag: 1 });
    expect((await log.lag({ topic: "events", group: "other" })).map((l) => l.lag)).toEqual([7, 0, 1, 0]);
    expect(typeof lag[0]!.endOffset).toBe("number");
  });
});
