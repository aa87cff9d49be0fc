import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../packages/runtime/src/errors.js";
import { ownedPartitions, rendezvousOwner, rendezvousWeight } from "../../packages/runtime/src/core/partition/rendezvous.js";

const THREE = ["server-a", "server-b", "server-c"];
const PARTITIONS = 64;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const owners = (members: readonly string[], topic = "orders", partitions = PARTITIONS) => range(partitions).map((p) => rendezvousOwner(members, topic, p));

describe("rendezvousWeight", () => {
  it("is SHA-256 of the length-prefixed (member, topic, partition), first 8 bytes big-endian", () => {
    // Built by hand: u32 len "a", "a", u32 len "t", "t", u32 partition 0.
    const input = Buffer.from([0, 0, 0, 1, 0x61, 0, 0, 0, 1, 0x74, 0, 0, 0, 0]);
    const expected = createHash("sha256").update(input).digest().readBigUInt64BE(0);
    expect(rendezvousWeight("a", "t", 0)).toBe(expected);
  });

  it("is pinned: changing the weight would move every partition of a running cluster", () => {
    expect(rendezvousWeight("a", "t", 0)).toBe(10027648851838913608n);
    expect(rendezvousWeight("server-a", "orders", 0)).toBe(8143352589289200959n);
  });

  it('keeps ("ab", "c") and ("a", "bc") apart thanks to the length prefixes', () => {
    expect(rendezvousWeight("ab", "c", 0)).not.toBe(rendezvousWeight("a", "bc", 0));
  });
});

describe("rendezvousOwner", () => {
  it("returns null when there are no members", () => {
    expect(rendezvousOwner([], "orders", 0)).toBeNull();
  });

  it("returns the only member", () => {
    expect(owners(["solo"])).toEqual(range(PARTITIONS).map(() => "solo"));
  });

  it("is deterministic", () => {
    expect(owners(THREE)).toEqual(owners([...THREE]));
    expect(rendezvousOwner(THREE, "orders", 0)).toBe("server-b");
    expect(rendezvousOwner(THREE, "orders", 2)).toBe("server-c");
  });

  it("picks the member with the highest weight", () => {
    for (const p of range(PARTITIONS)) {
      const best = [...THREE].sort((a, b) => {
        const wa = rendezvousWeight(a, "orders", p);
        const wb = rendezvousWeight(b, "orders", p);
        return wa === wb ? 0 : wa > wb ? -1 : 1;
      })[0];
      expect(rendezvousOwner(THREE, "orders", p)).toBe(best);
    }
  });

  it("does not depend on the order of members, nor on repeated ids", () => {
    const expected = owners(THREE);
    const orders = [
      ["server-a", "server-c", "server-b"],
      ["server-b", "server-a", "server-c"],
      ["server-b", "server-c", "server-a"],
      ["server-c", "server-a", "server-b"],
      ["server-c", "server-b", "server-a"],
      ["server-c", "server-b", "server-a", "server-b", "server-c"],
    ];
    for (const members of orders) expect(owners(members)).toEqual(expected);
  });

  it("spreads 64 partitions over 3 members so that every member owns some", () => {
    const counts = new Map<string, number>();
    for (const owner of owners(THREE)) counts.set(owner!, (counts.get(owner!) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual(THREE);
    for (const count of counts.values()) expect(count).toBeGreaterThan(5);
  });

  it("gives another topic an independent assignment", () => {
    expect(owners(THREE, "payments")).not.toEqual(owners(THREE, "orders"));
  });

  it("moves only the partitions the new member wins when a 4th member joins", () => {
    const before = owners(THREE);
    const after = owners([...THREE, "server-d"]);
    let moved = 0;
    for (const p of range(PARTITIONS)) {
      if (after[p] !== before[p]) {
        expect(after[p]).toBe("server-d");
        moved++;
      }
    }
    expect(moved).toBeGreaterThan(0);
    expect(moved).toBe(after.filter((o) => o === "server-d").length);
  });

  it("moves only the leaving member's partitions when a member leaves", () => {
    const before = owners(THREE);
    const after = owners(["server-a", "server-c"]);
    for (const p of range(PARTITIONS)) {
      if (before[p] === "server-b") expect(["server-a", "server-c"]).toContain(after[p]);
      else expect(after[p]).toBe(before[p]);
    }
  });

  it("refuses bad input with InvalidArgumentError", () => {
    const bad: Array<() => unknown> = [
      () => rendezvousOwner(["a", 1 as never], "orders", 0),
      () => rendezvousOwner("abc" as never, "orders", 0),
      () => rendezvousOwner(["a"], 7 as never, 0),
      () => rendezvousOwner(["a"], "orders", -1),
      () => rendezvousOwner(["a"], "orders", 1.5),
      () => rendezvousOwner(["a"], "orders", Number.NaN),
      () => rendezvousOwner(["a"], "orders", 2 ** 32),
    ];
    for (const call of bad) expect(call).toThrow(InvalidArgumentError);
  });
});

describe("ownedPartitions", () => {
  const TOPICS = [
    { name: "orders", partitions: PARTITIONS },
    { name: "emails", partitions: 8 },
  ];

  it("lists exactly the partitions whose owner is self", () => {
    for (const self of THREE) {
      const owned = ownedPartitions(self, THREE, TOPICS);
      for (const { topic, partition } of owned) expect(rendezvousOwner(THREE, topic, partition)).toBe(self);
      const expectedCount = TOPICS.reduce((sum, t) => sum + range(t.partitions).filter((p) => rendezvousOwner(THREE, t.name, p) === self).length, 0);
      expect(owned).toHaveLength(expectedCount);
    }
  });

  it("gives every partition exactly one owner across the members", () => {
    const seen = new Map<string, string>();
    for (const self of THREE) {
      for (const { topic, partition } of ownedPartitions(self, THREE, TOPICS)) {
        const key = `${topic}/${partition}`;
        expect(seen.has(key)).toBe(false);
        seen.set(key, self);
      }
    }
    expect(seen.size).toBe(PARTITIONS + 8);
  });

  it("counts self as a member even when members omits it", () => {
    expect(ownedPartitions("server-a", ["server-b", "server-c"], TOPICS)).toEqual(ownedPartitions("server-a", THREE, TOPICS));
    expect(ownedPartitions("solo", [], TOPICS)).toHaveLength(PARTITIONS + 8);
  });

  it("orders by topic name, then partition, whatever the order of topics", () => {
    const owned = ownedPartitions("solo", [], TOPICS);
    expect(owned.slice(0, 8)).toEqual(range(8).map((partition) => ({ topic: "emails", partition })));
    expect(owned.slice(8)).toEqual(range(PARTITIONS).map((partition) => ({ topic: "orders", partition })));
    expect(ownedPartitions("server-b", THREE, [...TOPICS].reverse())).toEqual(ownedPartitions("server-b", THREE, TOPICS));
  });

  it("does not depend on the order of members", () => {
    expect(ownedPartitions("server-c", ["server-c", "server-b", "server-a"], TOPICS)).toEqual(ownedPartitions("server-c", THREE, TOPICS));
  });

  it("returns nothing for no topics", () => {
    expect(ownedPartitions("server-a", THREE, [])).toEqual([]);
  });

  it("refuses bad input with InvalidArgumentError", () => {
    const bad: Array<() => unknown> = [
      () => ownedPartitions(1 as never, THREE, TOPICS),
      () => ownedPartitions("server-a", [null as never], TOPICS),
      () => ownedPartitions("server-a", THREE, [{ name: "orders", partitions: 0 }]),
      () => ownedPartitions("server-a", THREE, [{ name: "orders", partitions: 2.5 }]),
      () => ownedPartitions("server-a", THREE, [{ name: 5 as never, partitions: 2 }]),
      () => ownedPartitions("server-a", THREE, [null as never]),
      () => ownedPartitions("server-a", THREE, "orders" as never),
      () =>
        ownedPartitions("server-a", THREE, [
          { name: "orders", partitions: 2 },
          { name: "orders", partitions: 2 },
        ]),
    ];
    for (const call of bad) expect(call).toThrow(InvalidArgumentError);
  });
});
