// The generated builder's handler options: `timeoutMs` reaches the server; a misspelt option is refused at once.
// J11: the schema's `@retain*` tags reach the server as the type's retention, a `retention` option wins
// field by field, and a bad one is INVALID_ARGUMENT at build naming the type and field.
// X9: the schema's `@concurrency` and `@rateLimit` are stored at build; a handler's own limit (null included) wins.
import { describe, expect, it } from "vitest";
import { InvalidConfigError, topic, type JobId } from "@later/runtime";
import { BACKENDS, withDatabase } from "../conformance/backends.js";
import { waitFor } from "../conformance/harness.js";
import { JobsBuilder } from "./schemas/shop.generated.js";
import { JobsBuilder as LimitsBuilder } from "./schemas/limits.generated.js";
import { JobsBuilder as RetentionBuilder } from "./schemas/retention.generated.js";

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
        message: 'withSendEmailHandler: unknown option "concurency"; the options are retry, timeoutMs, retention, concurrency, rateLimit, groupConcurrency',
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

  it("X9: the schema's @concurrency, @rateLimit and @groupConcurrency are stored at build; a handler's own limit (null included) wins over them", () =>
    withDatabase(entry, async (db) => {
      const server = await new LimitsBuilder({ context: {}, backend: db.backend(), ...FAST })
        .withImportFeedHandler(() => {})
        .withCallPartnerHandler(() => {}, { rateLimit: { max: 7, perMs: 60_000 } })
        .withChargeCardHandler(() => {}, { concurrency: null })
        .withPlainHandler(() => {})
        .withTenantReportHandler(() => {})
        .build();
      try {
        // Read back what the build stored (limitsSet returns the rows it replaces).
        const jobTypes = ["importFeed", "callPartner", "chargeCard", "plain", "tenantReport"];
        const { previous } = await server.backend.jobs.limitsSet({ jobTypes, limits: [], now: Date.now() });
        expect(previous).toEqual([
          { jobType: "callPartner", concurrency: null, rateLimit: { max: 7, perMs: 60_000 }, groupConcurrency: null },
          { jobType: "chargeCard", concurrency: null, rateLimit: { max: 10, perMs: 500 }, groupConcurrency: null },
          { jobType: "importFeed", concurrency: 5, rateLimit: null, groupConcurrency: null },
          { jobType: "tenantReport", concurrency: null, rateLimit: null, groupConcurrency: 2 },
        ]);
      } finally {
        await server.shutdown({ deadlineMs: 0 });
      }
    }));

  it("X9: @group fills a job's group from its payload field unless the enqueue names one; enqueueMany takes each payload's", () =>
    withDatabase(entry, async (db) => {
      const server = await new LimitsBuilder({ context: {}, backend: db.backend(), ...FAST })
        .withImportFeedHandler(() => {})
        .withCallPartnerHandler(() => {})
        .withChargeCardHandler(() => {})
        .withPlainHandler(() => {})
        .withTenantReportHandler(() => {}, { groupConcurrency: 1 })
        .build();
      try {
        const groupOf = async (id: string) => (await server.backend.inspect.jobGet({ id }))?.group;
        const own = await server.jobs.tenantReport.enqueue({ tenantId: "t1", month: "2026-11" });
        const named = await server.jobs.tenantReport.enqueue({ tenantId: "t1", month: "2026-11" }, { group: "other" });
        const delayed = await server.jobs.tenantReport.enqueueDelayed({ tenantId: "t3", month: "2026-11" }, 3_600_000);
        const many = await server.jobs.tenantReport.enqueueMany([
          { tenantId: "t1", month: "2026-11" },
          { tenantId: "t2", month: "2026-11" },
        ]);
        expect(await groupOf(own)).toBe("t1");
        expect(await groupOf(named)).toBe("other");
        expect(await groupOf(delayed)).toBe("t3");
        expect(await Promise.all(many.map(groupOf))).toEqual(["t1", "t2"]);
        // A field value that is no group is refused as the option would be, naming group; nothing written.
        const before = (await server.backend.inspect.jobList({ limit: 100 })).length;
        await expect(server.jobs.tenantReport.enqueue({ tenantId: "", month: "2026-11" })).rejects.toMatchObject({
          code: "INVALID_ARGUMENT",
          message: expect.stringContaining("group"),
        });
        await expect(
          server.jobs.tenantReport.enqueueMany([
            { tenantId: "ok", month: "2026-11" },
            { tenantId: "x".repeat(201), month: "2026-11" },
          ]),
        ).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("group") });
        expect(await server.backend.inspect.jobList({ limit: 100 })).toHaveLength(before);
      } finally {
        await server.shutdown({ deadlineMs: 0 });
      }
    }));

  it("J11: @retainSuccess 0 deletes a success; a retention option wins over a tag field by field; a bad one fails build", () =>
    withDatabase(entry, async (db) => {
      const bad = new RetentionBuilder({ backend: db.backend(), ...FAST })
        .withPingHandler(() => {}, { retention: { failedMs: -5 } })
        .withReportHandler(() => {})
        .withAuditHandler(() => {});
      await expect(bad.build()).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/ping\.retention\.failedMs/) });
      const server = await new RetentionBuilder({ backend: db.backend(), ...FAST })
        .withPingHandler(() => {})
        .withReportHandler(() => {}, { retention: { successMs: 0, cancelledMs: undefined } })
        .withAuditHandler(() => {})
        .build();
      try {
        const ping = await server.jobs.ping.enqueue({ to: "x" });
        const report = await server.jobs.report.enqueue({ month: "2026-11" });
        const audit = await server.jobs.audit.enqueue({ entry: "e" });
        await waitFor(async () => (await server.backend.inspect.jobGet({ id: audit }))?.stage === "success", "audit done", 10_000);
        await waitFor(async () => (await server.backend.inspect.jobGet({ id: ping })) === null, "ping deleted", 10_000);
        await waitFor(async () => (await server.backend.inspect.jobGet({ id: report })) === null, "report deleted", 10_000);
        const cancelled = await server.jobs.report.enqueue({ month: "2026-12" }, { delayMs: 3_600_000 });
        await server.cancel(cancelled);
        const row = await server.backend.inspect.jobGet({ id: cancelled });
        // The tag's cancelledMs (60 s) is kept: the option's `undefined` field does not hide it.
        expect(row!.expiresAt! - row!.updatedAt).toBe(60_000);
      } finally {
        await server.shutdown({ deadlineMs: 0 });
      }
    }));
});
