/** The dashboard charts' value axis: round, distinct ticks from 0, whole numbers for counts. */
import { describe, expect, it } from "vitest";
import { axisTicks } from "../../packages/runtime/dashboard-page/src/axis-ticks.js";

describe("axisTicks", () => {
  it("gives counts distinct integer ticks, however small the values", () => {
    // Before: 0, top/2, top with top = 1 read "0 1 1" once rounded for a backlog of one job.
    expect(axisTicks(1, { integers: true })).toEqual([0, 1]);
    expect(axisTicks(0, { integers: true })).toEqual([0, 1]);
    expect(axisTicks(2, { integers: true })).toEqual([0, 1, 2]);
    expect(axisTicks(3, { integers: true })).toEqual([0, 1, 2, 3]);
    expect(axisTicks(4, { integers: true })).toEqual([0, 2, 4]);
    expect(axisTicks(7, { integers: true })).toEqual([0, 5, 10]);
    expect(axisTicks(11, { integers: true })).toEqual([0, 5, 10, 15]);
    expect(axisTicks(480, { integers: true })).toEqual([0, 200, 400, 600]);
    for (let max = 0; max <= 2_000; max += 1) {
      const ticks = axisTicks(max, { integers: true });
      expect(ticks.every(Number.isInteger), `max ${max}`).toBe(true);
      expect(new Set(ticks.map(String)).size, `max ${max}`).toBe(ticks.length);
      expect(ticks.at(-1)!, `max ${max}`).toBeGreaterThanOrEqual(max);
      expect(ticks.length, `max ${max}`).toBeGreaterThanOrEqual(2);
      expect(ticks.length, `max ${max}`).toBeLessThanOrEqual(4);
    }
  });

  it("steps by 1, 2 or 5 times a power of ten for other values, without floating-point noise", () => {
    expect(axisTicks(0.4)).toEqual([0, 0.2, 0.4]);
    expect(axisTicks(0.6)).toEqual([0, 0.2, 0.4, 0.6]);
    expect(axisTicks(1)).toEqual([0, 0.5, 1]);
    expect(axisTicks(10)).toEqual([0, 5, 10]);
    expect(axisTicks(Number.NaN)).toEqual([0, 0.5, 1]);
  });
});
