/** `ClaimFloor`: when a PostgreSQL claim is floored, where its floor is, and the check that ends a spell (docs/storage.md "A held-back horizon"). */
import { describe, expect, it } from "vitest";
import { ClaimFloor, type FloorRow } from "../../packages/runtime/src/backend/postgres/claim-floor.js";

const T = ["a", "b"];
const rows = (...runAts: number[]) => runAts.map((runAt) => ({ runAt, priority: 0 }));
/** What a claim that took `taken` reports: how many, and the last. */
const claimOf = (taken: readonly FloorRow[]) => [taken.length, taken.at(-1)] as const;

describe("ClaimFloor", () => {
  it("stays full while claims are fast", () => {
    const f = new ClaimFloor({ slowMs: 50 });
    expect(f.floorFor(T)).toBeNull();
    f.claimed(1_000, T, 10, ...claimOf(rows(1, 2, 3)), 49);
    expect(f.floorFor(T)).toBeNull();
    expect(f.checkDue(1_001, f.floorFor(T))).toBeNull();
  });

  it("a slow full claim starts a spell of 20 times its time, at least 1 s and at most 60 s; its end is one check", () => {
    for (const [took, spell] of [
      [50, 1_000],
      [200, 4_000],
      [5_000, 60_000],
    ] as const) {
      const f = new ClaimFloor({ slowMs: 50 });
      f.claimed(10_000, T, 10, ...claimOf([]), took);
      expect(f.checkDue(10_000 + spell - 1, f.floorFor(T))).toBeNull();
      const floor = f.floorFor(T);
      expect(floor).not.toBeNull();
      expect(f.checkDue(10_000 + spell, f.floorFor(T))).toBe(floor);
      expect(f.checkDue(10_000 + spell + 1, f.floorFor(T))).toBeNull(); // one check at a time
      expect(f.floorFor(T)).toBe(floor); // claims stay floored while it runs
    }
  });

  it("a fast check ends the degraded state; a failed one too", () => {
    for (const tookMs of [10, null]) {
      const f = new ClaimFloor({ slowMs: 50 });
      f.claimed(0, T, 10, ...claimOf([]), 100);
      const floor = f.checkDue(2_000, f.floorFor(T))!;
      f.checked(floor, null, tookMs, 2_010);
      expect(f.floorFor(T)).toBeNull();
    }
  });

  it("a slow check starts the next spell, the floor lowered to the row it found", () => {
    const f = new ClaimFloor({ slowMs: 50, slackMs: 1_000 });
    f.claimed(100_000, T, 10, ...claimOf(rows(5)), 100); // short: the floor is now minus the slack
    const floor = f.checkDue(102_000, f.floorFor(T))!;
    expect(floor.runAt).toBe(99_000);
    f.checked(floor, 42, 500, 102_500); // a spell of 10 s from its end
    expect(f.floorFor(T)).toEqual({ runAt: 42, priority: 0 });
    expect(f.checkDue(112_499, f.floorFor(T))).toBeNull();
    expect(f.checkDue(112_500, f.floorFor(T))).not.toBeNull();
  });

  it("a floored claim moves only the floor it read: one a check lowered meanwhile stays", () => {
    const f = new ClaimFloor({ slowMs: 50, slackMs: 1_000 });
    f.claimed(100_000, T, 2, ...claimOf(rows(10, 20)), 100);
    const read = f.floorFor(T);
    const check = f.checkDue(102_000, f.floorFor(T))!;
    f.checked(check, 5, 500, 102_500);
    f.claimed(102_600, T, 2, ...claimOf(rows(30, 40)), null, read); // started before the check ended
    expect(f.floorFor(T)?.runAt).toBe(5);
    f.claimed(102_700, T, 2, ...claimOf(rows(6, 7)), null, f.floorFor(T));
    expect(f.floorFor(T)?.runAt).toBe(7);
  });

  it("the floor: the last row's run_at after a full batch, else now minus the slack; never above now minus the slack", () => {
    const f = new ClaimFloor({ slowMs: 0, slackMs: 1_000 });
    f.claimed(100_000, T, 3, ...claimOf(rows(10, 20, 30)), 5);
    expect(f.floorFor(T)).toEqual({ runAt: 30, priority: 0 });
    f.claimed(100_002, T, 3, ...claimOf(rows(40, 50)), null, f.floorFor(T)); // short: everything due was taken
    expect(f.floorFor(T)).toEqual({ runAt: 99_002, priority: 0 });
    f.claimed(100_004, T, 2, ...claimOf(rows(99_500, 99_900)), null, f.floorFor(T)); // a full batch of rows newer than now minus the slack
    expect(f.floorFor(T)?.runAt).toBe(99_004);
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
    expect(f.floorFor(T)).toEqual({ runAt: 2, priority: 4 });
    f.claimed(5_002, T, 10, ...claimOf([]), null, f.floorFor(T));
    expect(f.floorFor(T)?.priority).toBe(4);
  });

  it("a check of a priority the claims have left does not lower the floor of the new one", () => {
    const f = new ClaimFloor({ slowMs: 50 });
    f.claimed(0, T, 1, ...claimOf([{ runAt: 100, priority: 1 }]), 100);
    const check = f.checkDue(2_000, f.floorFor(T))!;
    f.claimed(2_001, T, 1, ...claimOf([{ runAt: 200, priority: 2 }]), null, f.floorFor(T));
    f.checked(check, 50, 500, 2_500);
    expect(f.floorFor(T)).toEqual({ runAt: 200, priority: 2 });
  });

  it("another set of job types, or a fast full claim, ends the spell", () => {
    const f = new ClaimFloor({ slowMs: 50 });
    f.claimed(1_000, T, 10, ...claimOf([]), 100);
    expect(f.floorFor(["a"])).toBeNull();
    expect(f.floorFor(T)).not.toBeNull();
    f.claimed(1_002, T, 10, ...claimOf([]), 10);
    expect(f.floorFor(T)).toBeNull();
  });
});
