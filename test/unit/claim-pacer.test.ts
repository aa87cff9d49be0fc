import { describe, expect, it } from "vitest";
import { ClaimPacer } from "../../packages/runtime/src/worker/claim-pacer.js";

/** Feeds the pacer `rounds` claim cycles of `claimMs` each, finishing `perMs` jobs per ms meanwhile. */
function run(pacer: ClaimPacer, rounds: number, claimMs: number, perMs: number): void {
  let now = 1_000;
  pacer.sample(now);
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < perMs * claimMs; k++) pacer.jobFinished();
    now += claimMs;
    pacer.claimTook(claimMs);
    pacer.sample(now);
  }
}

describe("ClaimPacer", () => {
  it("starts at the backend's per-worker guess, within its maximum", () => {
    expect(new ClaimPacer({ perWorker: 25, max: 500 }).target(10)).toBe(250);
    expect(new ClaimPacer({ perWorker: 25, max: 100 }).target(10)).toBe(100);
  });

  it("keeps what the workers finish in three claim round trips in flight, up to the maximum", () => {
    const pacer = new ClaimPacer({ perWorker: 25, max: 500 });
    run(pacer, 50, 4, 20); // 20 jobs per ms, claims of 4 ms: 10 + 3 × 80
    expect(pacer.target(10)).toBe(250);
    run(pacer, 50, 5, 60); // 60 jobs per ms, claims of 5 ms: far above the maximum
    expect(pacer.target(10)).toBe(500);
  });

  it("keeps two per worker for slow jobs, where a fixed batch would park hundreds on one server", () => {
    const pacer = new ClaimPacer({ perWorker: 25, max: 500 });
    run(pacer, 50, 2, 0.1); // ten workers on 100 ms jobs
    expect(pacer.target(10)).toBe(20);
    expect(pacer.target(3)).toBe(6);
  });

  it("does not move under a clock that stands still", () => {
    const pacer = new ClaimPacer({ perWorker: 4, max: 32 });
    for (let i = 0; i < 100; i++) {
      pacer.jobFinished();
      pacer.claimTook(0);
      pacer.sample(5_000);
    }
    expect(pacer.target(6)).toBe(24);
  });
});
