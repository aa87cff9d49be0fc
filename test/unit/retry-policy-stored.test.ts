// The stored form of a job's explicit retry policy (`later_jobs.retry_policy`, docs/storage.md): what
// storedRetryPolicy writes reads back as the same policy, the object form of rows written before it
// is still read, and text that is neither is a typed error (the retry decision then falls back to the
// server's policy and says so in the job's error).
import { describe, expect, it } from "vitest";
import { InvalidConfigError } from "../../packages/runtime/src/errors.js";
import { RetryPolicy, retryPolicyFromStored, storedRetryPolicy } from "../../packages/runtime/src/core/retry/retry-policy.js";

describe("stored retry policy", () => {
  const policies = [
    RetryPolicy.default(),
    RetryPolicy.noRetries(),
    RetryPolicy.fixed(3, 5_000),
    RetryPolicy.exponential(10, { initialMs: 250, factor: 1.5, maxMs: 60_000, jitter: 0 }),
  ];

  it("reads back as the policy it was written from", () => {
    for (const p of policies) expect(retryPolicyFromStored(storedRetryPolicy(p)!).toJSON()).toEqual(p.toJSON());
  });

  it("is a short array: the default policy takes 21 characters, where its object form took 105", () => {
    expect(storedRetryPolicy(RetryPolicy.default())).toBe("[6,1000,2,600000,0.2]");
    expect(storedRetryPolicy(RetryPolicy.fixed(3, 5_000))).toBe("[3,5000]");
    expect(JSON.stringify(RetryPolicy.default())).toHaveLength(105);
    expect(storedRetryPolicy(null)).toBeNull();
  });

  it("still reads the object form rows were written with before", () => {
    for (const p of policies) expect(retryPolicyFromStored(JSON.stringify(p)).toJSON()).toEqual(p.toJSON());
  });

  it("rejects text that is neither form, and values a policy cannot have", () => {
    for (const text of ["[1,2,3]", '["6",1000]', "null", "7", '"x"', "[-1,0]", "[2,1000,2,600000,-0.5]"])
      expect(() => retryPolicyFromStored(text), text).toThrow(InvalidConfigError);
    expect(() => retryPolicyFromStored("{not json")).toThrow(SyntaxError);
  });
});
