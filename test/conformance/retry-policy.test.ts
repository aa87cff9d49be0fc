// J3: which retry policy a failed job follows, and PermanentJobError. The job's policy follows the
// server that runs it (the type's `retry`, then the server default), whichever process enqueued it;
// an explicit policy given at enqueue wins. The stuck-job rescue asks the same decision
// (lifecycle.test.ts, "J3/J7").
import { describe, expect, it } from "vitest";
import { PermanentJobError, RetryPolicy, type JobId } from "@later/runtime";
import type { BackgroundJobServer } from "@later/runtime";
import { openJobsPublisher } from "../codegen/schemas/shop.generated.js";
import { BACKENDS } from "./backends.js";
import { useHarness, waitFor, type Harness } from "./harness.js";

const email = { address: "a@example.com", body: "hi" };

/** The job once it is terminal. */
async function finished(server: BackgroundJobServer<unknown>, id: JobId) {
  return waitFor(async () => {
    const job = await server.backend.inspect.jobGet({ id });
    return job && (job.stage === "success" || job.stage === "failed") ? job : null;
  }, `job ${id} to finish`);
}

/** The stored retry policy of a job no server here handles, read by claiming it as a ghost worker would. */
async function storedPolicy(h: Harness, id: JobId): Promise<string | null> {
  const ghost = h.db.backend();
  await ghost.open();
  try {
    const now = Date.now() + 60_000;
    const { jobs } = await ghost.jobs.claimReady({ owner: "ghost", limit: 10, now, leaseExpiresAt: now + 1_000, jobTypes: ["createAccount"] });
    const job = jobs.find((j) => j.id === id);
    if (!job) throw new Error(`job ${id} was not claimable`);
    return job.retryPolicy;
  } finally {
    await ghost.close();
  }
}

describe.each(BACKENDS)("retry policy on $name", (entry) => {
  const harness = useHarness(entry);

  /** A server whose `sendEmail` handler always throws, and how many times it ran. */
  async function failingServer(h: Harness, options: { retry?: RetryPolicy; defaultRetryPolicy?: RetryPolicy } = {}) {
    const runs: number[] = [];
    const server = await h.start({
      defaultRetryPolicy: options.defaultRetryPolicy ?? RetryPolicy.fixed(3, 10),
      handlers: {
        sendEmail: {
          handle: (ctx) => {
            runs.push(ctx.attempt);
            throw new Error(`boom ${ctx.attempt}`);
          },
          ...(options.retry ? { retry: () => options.retry! } : {}),
        },
      },
    });
    return { server, runs };
  }

  it("a job another process's publisher enqueued without a policy follows the running server's default, and stores none", async () => {
    const h = harness();
    const { server, runs } = await failingServer(h);
    const publisher = await openJobsPublisher({ backend: h.db.backend() });
    try {
      const id = await publisher.jobs.sendEmail.enqueue(email);
      const job = await finished(server, id);
      // fixed(3, 10): the first run and three retries, then failed (the publisher's library default,
      // exponential with 6 retries, would have requeued attempt 4 about 8 s later).
      expect(job).toMatchObject({ stage: "failed", attempt: 4, lastError: "boom 4" });
      expect(runs).toEqual([1, 2, 3, 4]);
      expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "running", "requeued", "running", "requeued", "running", "failed"]);
      const unhandled = await publisher.jobs.createAccount.enqueue({ id: "acct", createdAt: new Date() });
      expect(await storedPolicy(h, unhandled)).toBeNull();
    } finally {
      await publisher.close();
    }
  });

  it("a policy given explicitly at enqueue wins over the running server's: the publisher's defaultRetryPolicy, or EnqueueOptions.retryPolicy", async () => {
    const h = harness();
    const { server, runs } = await failingServer(h);
    const publisher = await openJobsPublisher({ backend: h.db.backend(), defaultRetryPolicy: RetryPolicy.noRetries() });
    try {
      const fromPublisher = await publisher.jobs.sendEmail.enqueue(email);
      expect(await finished(server, fromPublisher)).toMatchObject({ stage: "failed", attempt: 1 });
      // Stored in its short form (docs/storage.md): `[retries, delayMs]` for a fixed backoff.
      expect(await storedPolicy(h, await publisher.jobs.createAccount.enqueue({ id: "acct", createdAt: new Date() }))).toBe("[0,0]");
      const fromOption = await server.publisher.enqueue("sendEmail", email, { retryPolicy: RetryPolicy.fixed(1, 10) });
      expect(await finished(server, fromOption)).toMatchObject({ stage: "failed", attempt: 2 });
      expect(runs).toEqual([1, 1, 2]);
    } finally {
      await publisher.close();
    }
  });

  it("the job type's own retry option wins over the server default", async () => {
    const h = harness();
    const { server, runs } = await failingServer(h, { retry: RetryPolicy.fixed(1, 10), defaultRetryPolicy: RetryPolicy.fixed(3, 10) });
    const id = await server.publisher.enqueue("sendEmail", email);
    expect(await finished(server, id)).toMatchObject({ stage: "failed", attempt: 2, lastError: "boom 2" });
    expect(runs).toEqual([1, 2]);
  });

  it("a handler that throws PermanentJobError fails its job at once, whatever the policy", async () => {
    const h = harness();
    const runs: number[] = [];
    const server = await h.start({
      defaultRetryPolicy: RetryPolicy.fixed(3, 10),
      handlers: {
        sendEmail: {
          handle: (ctx) => {
            runs.push(ctx.attempt);
            throw new PermanentJobError("no such mailbox");
          },
          retry: () => RetryPolicy.fixed(5, 10),
        },
      },
    });
    const explicit = await server.publisher.enqueue("sendEmail", email, { retryPolicy: RetryPolicy.fixed(2, 10) });
    const plain = await server.publisher.enqueue("sendEmail", email);
    for (const id of [explicit, plain]) {
      const job = await finished(server, id);
      expect(job).toMatchObject({ stage: "failed", attempt: 1, lastError: "no such mailbox" });
      expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "failed"]);
    }
    expect(runs).toEqual([1, 1]);
    expect(new PermanentJobError("x").code).toBe("PERMANENT_FAILURE");
  });
});
