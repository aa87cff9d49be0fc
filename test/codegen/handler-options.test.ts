// The generated builder's handler options: `timeoutMs` reaches the server; a misspelt option is refused at once.
import { describe, expect, it } from "vitest";
import { InvalidConfigError, topic, type JobId } from "@later/runtime";
import { BACKENDS, withDatabase } from "../conformance/backends.js";
import { waitFor } from "../conformance/harness.js";
import { JobsBuilder } from "./schemas/shop.generated.js";
import { JobsBuilder as LimitsBuilder } from "./schemas/limits.generated.js";

const FAST = { pollIntervalMs: 50, autoMigrate: true } as const;

describe.each(BACKENDS)("generated builder handler options on $name", (entry) => {
  it("an unknown handler option is INVALID_CONFIG naming it and the known ones, at the with...Handler call", () =>
    withDatabase(entry, async (db) => {
      const builder = new JobsBuilder({ context: {}, backend: db.backend(), ...FAST });
      const typo = (() => {
        try {
          builder.withSendEmailHandler(() => {}, { concurency: 2 } as never);
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(typo).toBeInstanceOf(InvalidConfigError);
      expect(typo).toMatchObject({
        code: "INVALID_CONFIG",
        message: 'withSendEmailHandler: unknown option "concurency"; the options are retry, timeoutMs, concurrency, rateLimit',
      });
      for (const timeoutMs of [0, 1.5, Number.POSITIVE_INFINITY]) {
        expect(() => builder.withSendEmailHandler(() => {}, { timeoutMs }), String(timeoutMs)).toThrow(
          /^withSendEmailHandler: timeoutMs must be an integer number of ms from 1 to 2147483647/,
        );
      }
    }));

  it("timeoutMs given with a handler times its attempts out: the signal aborts with JOB_TIMEOUT", () =>
    withDatabase(entry, async (db) => {
      const reasons: unknown[] = [];
      const server = await new JobsBuilder({ context: {}, backend: db.backend(), ...FAST, topics: [topic("orders", 4)] })
        .withSendEmailHandler(
          (ctx) =>
            new Promise<void>((_, reject) =>
              ctx.signal.addEventListener("abort", () => {
                reasons.push(ctx.signal.reason);
                reject(ctx.signal.reason as Error);
              }),
            ),
          { timeoutMs: 50 },
        )
        .withCreateAccountHandler(() => {})
        .withProcessOrderHandler(() => {})
        .build();
      try {
        const id: JobId = await server.jobs.sendEmail.enqueue({ address: "a@b.c", body: "hello" });
        await waitFor(() => reasons.length > 0, "the attempt's signal aborted", 10_000);
        expect(reasons[0]).toMatchObject({ code: "JOB_TIMEOUT", message: `job ${id} ran longer than the timeoutMs of "sendEmail" handlers (50 ms)` });
      } finally {
        await server.shutdown({ deadlineMs: 0 });
      }
    }));

  it("X9: the schema's @concurrency and @rateLimit are stored at build; a handler's own limit (null included) wins over them", () =>
    withDatabase(entry, async (db) => {
      const server = await new LimitsBuilder({ context: {}, backend: db.backend(), ...FAST })
        .withImportFeedHandler(() => {})
        .withCallPartnerHandler(() => {}, { rateLimit: { max: 7, perMs: 60_000 } })
        .withChargeCardHandler(() => {}, { concurrency: null })
        .withPlainHandler(() => {})
        .build();
      try {
        // Read back what the build stored (limitsSet returns the rows it replaces).
        const jobTypes = ["importFeed", "callPartner", "chargeCard", "plain"];
        const { previous } = await server.backend.jobs.limitsSet({ jobTypes, limits: [], now: Date.now() });
        expect(previous).toEqual([
          { jobType: "callPartner", concurrency: null, rateLimit: { max: 7, perMs: 60_000 } },
          { jobType: "chargeCard", concurrency: null, rateLimit: { max: 10, perMs: 500 } },
          { jobType: "importFeed", concurrency: 5, rateLimit: null },
        ]);
      } finally {
        await server.shutdown({ deadlineMs: 0 });
      }
    }));
});
