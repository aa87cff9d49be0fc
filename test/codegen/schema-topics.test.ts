// Topics declared once, in the schema (ledger.schema.ts: `@topic ledger @partitions 4`), the options
// form of the typed handles, camelCase names, and `context` left out, driving real servers on every
// backend of the conformance list.
import { describe, expect, it } from "vitest";
import { InvalidConfigError, PartitionCountMismatchError, partitionForKey, topic } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS, withDatabase } from "../conformance/backends.js";
import { waitFor } from "../conformance/harness.js";
import { JobsBuilder as LedgerBuilder, openJobsPublisher as openLedgerPublisher, type JobsServer as LedgerServer } from "./schemas/ledger.generated.js";
import { JobsBuilder as ShopBuilder } from "./schemas/shop.generated.js";

const FAST = { pollIntervalMs: 50, autoMigrate: true } as const;

async function stageOf(server: { backend: LedgerServer<unknown>["backend"] }, id: string): Promise<string | undefined> {
  return (await server.backend.inspect.jobGet({ id }))?.stage;
}

describe.each(BACKENDS)("topics declared in the schema, on $name", (entry) => {
  it("a server and a publisher built from the module register the topic with its count: no topics option, no context", () =>
    withDatabase(entry, async (db) => {
      const seen: string[] = [];
      const server = await new LedgerBuilder({ backend: db.backend(), ...FAST })
        .withPostEntryHandler((ctx, entry) => {
          expect(ctx.app).toBeUndefined();
          expect(ctx.partition).toEqual({ topic: "ledger", partition: partitionForKey(entry.accountId, 4) });
          seen.push(`post ${entry.memo}`);
        })
        .withReverseEntryHandler((_ctx, entry) => void seen.push(`reverse ${entry.memo}`))
        .withSendStatementHandler(() => {})
        .build();
      const publisher = await openLedgerPublisher({ backend: db.backend() });
      try {
        expect(Object.keys(server.jobs).sort()).toEqual(["postEntry", "reverseEntry", "sendStatement"]);
        const a = await server.jobs.postEntry.enqueueToPartition({ accountId: "acct-1", cents: 100, memo: "a" });
        const b = await publisher.jobs.reverseEntry.enqueueToPartition({ accountId: "acct-1", cents: -100, memo: "b" });
        const c = await publisher.jobs.postEntry.enqueueToPartition({ accountId: "acct-1", cents: 5, memo: "c" });
        await waitFor(async () => (await stageOf(server, c)) === "success", "the partition to drain");
        expect(seen).toEqual(["post a", "reverse b", "post c"]);
        // The stored job type is the member name as written.
        expect((await server.backend.inspect.jobGet({ id: b }))?.jobType).toBe("reverse-entry");
        expect((await server.backend.inspect.jobGet({ id: a }))?.partition).toBe(partitionForKey("acct-1", 4));
        // No method enqueues a topic job unordered.
        expect((server.jobs.postEntry as unknown as { enqueue?: unknown }).enqueue).toBeUndefined();
      } finally {
        await publisher.close();
        await server.shutdown({ deadlineMs: 1_000 });
      }
    }));

  it("a topics option that agrees is taken; one that disagrees is PARTITION_COUNT_MISMATCH before anything starts", () =>
    withDatabase(entry, async (db) => {
      const build = (partitions: number) =>
        new LedgerBuilder({ backend: db.backend(), ...FAST, topics: [topic("ledger", partitions)] })
          .withPostEntryHandler(() => {})
          .withReverseEntryHandler(() => {})
          .withSendStatementHandler(() => {})
          .build();
      const error: unknown = await build(8).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PartitionCountMismatchError);
      expect((error as PartitionCountMismatchError).code).toBe("PARTITION_COUNT_MISMATCH");
      expect((error as Error).message).toBe(
        'topic "ledger" has 4 partitions in the schema (@partitions) but 8 in the `topics` option; drop it from `topics` (the schema registers it) or make the two agree',
      );
      await expect(openLedgerPublisher({ backend: db.backend(), topics: [topic("ledger", 2)] })).rejects.toMatchObject({ code: "PARTITION_COUNT_MISMATCH" });
      const server = await build(4);
      await server.shutdown({ deadlineMs: 1_000 });
    }));

  it("a server with a handler for a topic job whose topic it does not register is refused at start, naming both", () =>
    withDatabase(entry, async (db) => {
      const error: unknown = await new ShopBuilder({ context: {}, backend: db.backend(), ...FAST })
        .withSendEmailHandler(() => {})
        .withCreateAccountHandler(() => {})
        .withProcessOrderHandler(() => {})
        .build()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidConfigError);
      expect((error as Error).message).toMatch(/^job "processOrder" is on topic "orders", which this server does not register: /);
      expect((error as Error).message).toContain('add topic("orders", N) to `topics`');
    }));

  it("the options form: a delayed continuation through enqueueContinue, a delayed partition job, and an unknown option refused", () =>
    withDatabase(entry, async (db) => {
      const clock = new ManualClock();
      const ran: string[] = [];
      const server = await new LedgerBuilder({ backend: db.backend(), ...FAST, clock })
        .withPostEntryHandler((_ctx, entry) => void ran.push(entry.memo))
        .withReverseEntryHandler(() => {})
        .withSendStatementHandler((_ctx, s) => void ran.push(s.month))
        .build();
      try {
        const parent = await server.jobs.postEntry.enqueueToPartition({ accountId: "acct-2", cents: 1, memo: "parent" });
        await waitFor(async () => (await stageOf(server, parent)) === "success", "the parent to succeed");
        const statement = await server.jobs.sendStatement.enqueueContinue(parent, { accountId: "acct-2", month: "2026-12" }, { delayMs: 10_000 });
        const later = await server.jobs.postEntry.enqueueToPartition({ accountId: "acct-2", cents: 2, memo: "later" }, { delayMs: 10_000 });
        expect(await stageOf(server, statement)).toBe("delayed");
        expect(await stageOf(server, later)).toBe("delayed");
        await expect(server.jobs.sendStatement.enqueue({ accountId: "acct-2", month: "x" }, { delay: 5 } as never)).rejects.toMatchObject({
          code: "INVALID_ARGUMENT",
          message: expect.stringContaining('unknown option "delay"'),
        });
        await expect(server.jobs.sendStatement.enqueueDelayed({ accountId: "acct-2", month: "x" }, 5, { runAt: new Date() } as never)).rejects.toMatchObject({
          code: "INVALID_ARGUMENT",
        });
        clock.advance(10_000);
        await waitFor(async () => (await stageOf(server, statement)) === "success" && (await stageOf(server, later)) === "success", "both after the delay");
        expect(ran.sort()).toEqual(["2026-12", "later", "parent"]);
        expect((await server.backend.inspect.jobList({ limit: 10 })).length).toBe(3);
      } finally {
        await server.shutdown({ deadlineMs: 1_000 });
      }
    }));
});
