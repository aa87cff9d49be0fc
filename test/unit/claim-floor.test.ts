/** `ClaimFloor`: when a PostgreSQL claim is floored, and where its floor is (docs/storage.md "A held-back horizon"). */
import { describe, expect, it } from "vitest";
import { ClaimFloor, type FloorRow } from "../../packages/runtime/src/backend/postgres/claim-floor.js";

const T = ["a", "b"];
const rows = (...runAts: number[]) => runAts.map((runAt) => ({ runAt, priority: 0 }));
/** What a claim that took `taken` reports: how many, and the last. */
const claimOf = (taken: readonly FloorRow[]) => [taken.length, taken.at(-1)] as const;

describe("ClaimFloor", () => {
  it("stays full while claims are fast", () => {
    const f = new ClaimFloor({ slowMs: 50 });
    expect(f.floorFor(1_000, T)).toBeNull();
    f.claimed(1_000, T, 10, ...claimOf(rows(1, 2, 3)), 49);
    expect(f.floorFor(1_001, T)).toBeNull();
  });

  it("a slow full claim starts a spell of 20 times its time, at least 1 s and at most 60 s", () => {
    for (const [took, spell] of [
      [50, 1_000],
      [200, 4_000],
      [5_000, 60_000],
    ] as const) {
      const f = new ClaimFloor({ slowMs: 50 });
      f.claimed(10_000, T, 10, ...claimOf([]), took);
      expect(f.floorFor(10_000 + spell - 1, T)).not.toBeNull();
      expect(f.floorFor(10_000 + spell, T)).toBeNull();
    }
  });

  it("the floor: the last row's run_at after a full batch, else now minus the slack; never above now minus the slack", () => {
    const f = new ClaimFloor({ slowMs: 0, slackMs: 1_000 });
    f.claimed(100_000, T, 3, ...claimOf(rows(10, 20, 30)), 5);
    expect(f.floorFor(100_001, T)).toEqual({ runAt: 30, priority: 0 });
    f.claimed(100_002, T, 3, ...claimOf(rows(40, 50)), null); // short: everything due was taken
    expect(f.floorFor(100_003, T)).toEqual({ runAt: 99_002, priority: 0 });
    f.claimed(100_004, T, 2, ...claimOf(rows(99_500, 99_900)), null); // a full batch of rows newer than now minus the slack
    expect(f.floorFor(100_005, T)?.runAt).toBe(99_004);
  });

  it("the floor is the last row's priority's, or the one before when nothing was taken", () => {
    const f = new ClaimFloor({ slowMs: 0 });
    f.claimed(
      5_000,
      T,
      2,
      ...claimOf([
        { runAt: 1, priority: -3 },
        { runAt: 2, priority: 4 },
      ]),
      1,
    );
    expect(f.floorFor(5_001, T)).toEqual({ runAt: 2, priority: 4 });
    f.claimed(5_002, T, 10, ...claimOf([]), null);
    expect(f.floorFor(5_003, T)?.priority).toBe(4);
  });

  it("another set of job types, or a fast full claim, ends the spell", () => {
    const f = new ClaimFloor({ slowMs: 50 });
    f.claimed(1_000, T, 10, ...claimOf([]), 100);
    expect(f.floorFor(1_001, ["a"])).toBeNull();
    expect(f.floorFor(1_001, T)).not.toBeNull();
    f.claimed(1_002, T, 10, ...claimOf([]), 10);
    expect(f.floorFor(1_003, T)).toBeNull();
  });
});
