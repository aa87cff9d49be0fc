// X6: which resolved values are stored as a job's result, and the INVALID_RESULT failure of the
// rest (retried per policy), at the 64 KiB boundary counted in UTF-8 bytes.
import { describe, expect, it } from "vitest";
import { RetryPolicy } from "../../packages/runtime/src/core/retry/retry-policy.js";
import { systemClock } from "../../packages/runtime/src/core/clock.js";
import { resultOutcome } from "../../packages/runtime/src/worker/job-result.js";

const options = { context: {}, handlers: {}, defaultRetryPolicy: RetryPolicy.fixed(3, 1_000), random: () => 0.5, clock: systemClock };
const job = (attempt = 1) => ({ id: "01J", jobType: "work", payload: "{}", attempt, retryPolicy: null, runAt: 0 });

describe("resultOutcome", () => {
  it("stores JSON text as JSON.stringify writes it", () => {
    expect(resultOutcome(options, job(), { a: [1, "b"], d: new Date(0) })).toEqual({ kind: "success", result: '{"a":[1,"b"],"d":"1970-01-01T00:00:00.000Z"}' });
    expect(resultOutcome(options, job(), null)).toEqual({ kind: "success", result: "null" });
    expect(resultOutcome(options, job(), 0)).toEqual({ kind: "success", result: "0" });
  });

  it("takes exactly 64 KiB of UTF-8 and refuses one byte more, multi-byte characters counted as bytes", () => {
    const at = (n: number) => "x".repeat(n - 2); // the quotes take two bytes
    expect(resultOutcome(options, job(), at(65_536))).toMatchObject({ kind: "success" });
    expect(resultOutcome(options, job(), at(65_537))).toMatchObject({ kind: "retry", error: expect.stringMatching(/^INVALID_RESULT: .*65537 bytes/) });
    const euros = "€".repeat(21_845); // 3 bytes each: 65,535 + 2 quotes = 65,537 bytes, 21,847 UTF-16 units
    expect(resultOutcome(options, job(), euros)).toMatchObject({ kind: "retry", error: expect.stringMatching(/65537 bytes, over the limit of 65536/) });
  });

  it("fails what JSON cannot hold, retried per policy, and for good once the retries are spent", () => {
    expect(resultOutcome(options, job(), 1n)).toMatchObject({ kind: "retry", error: expect.stringMatching(/^INVALID_RESULT: .*not JSON/) });
    expect(resultOutcome(options, job(), Symbol("s"))).toMatchObject({ error: expect.stringMatching(/turned the symbol into nothing/) });
    expect(resultOutcome(options, job(4), () => 1)).toMatchObject({ kind: "fail", error: expect.stringMatching(/turned the function into nothing/) });
  });
});
