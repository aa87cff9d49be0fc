// Payloads are checked against their declared type at run time, from the shapes later-gen writes
// into the generated module: every enqueue form of the typed handles (ctx.jobs included) refuses a
// payload that does not match with INVALID_ARGUMENT naming the job and the path, and writes
// nothing; a stored payload that no longer matches fails its job with PAYLOAD_DECODE naming the
// path, while other jobs run. Also: enqueueManyToPartition, and a publisher that registers the
// schema's topics (or takes a topic's stored partition count).
import { describe, expect, it } from "vitest";
import { type LaterError, partitionForKey, topic, type JobId } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { JobsBuilder, openJobsPublisher, type JobsServer } from "../codegen/schemas/shop.generated.js";
import { openJobsPublisher as openLedgerPublisher } from "../codegen/schemas/ledger.generated.js";
import { BACKENDS, type TestDatabase } from "./backends.js";
import { refusal, waitFor } from "./harness.js";

/** Every job and every recurring schedule stored in the namespace. */
async function stored(backend: Backend): Promise<{ jobs: number; schedules: number }> {
  return { jobs: (await backend.inspect.jobList({ limit: 100 })).length, schedules: (await backend.recurring.list()).length };
}

const BAD_EMAIL = { address: "a@example.com", body: 42 } as never;
const EMAIL_WHY = "sendEmail payload: body: expected string, got a number";
const BAD_ORDER = { customerId: 7, description: ["not", "a", "string"] } as never;
const ORDER_WHY = "processOrder payload: description: expected string, got an array";

describe.each(BACKENDS)("payload validation on $name", (entry) => {
  async function withServer(run: (server: JobsServer<unknown>, db: TestDatabase, seen: unknown[]) => Promise<void>): Promise<void> {
    const db = await entry.createDatabase();
    const seen: unknown[] = [];
    const server = await new JobsBuilder({
      backend: db.backend(),
      autoMigrate: true,
      pollIntervalMs: 50,
      topics: [topic("orders", 4)],
      recurringSequentialPartitions: 2,
    })
      .withSendEmailHandler((_ctx, payload) => {
        seen.push(payload);
      })
      .withCreateAccountHandler(() => undefined)
      .withProcessOrderHandler(() => undefined)
      .build();
    try {
      await run(server, db, seen);
    } finally {
      await server.shutdown({ deadlineMs: 0 });
      await db.dispose();
    }
  }

  it("every enqueue form refuses a payload of the wrong type with INVALID_ARGUMENT naming the path; nothing is written", async () => {
    await withServer(async (server, db) => {
      const email = server.jobs.sendEmail;
      const order = server.jobs.processOrder;
      const parent = "0000000000000-parent" as JobId;
      const app = db.appDatabase<Record<string, never>>();
      try {
        const forms: [string, () => Promise<unknown>, string][] = [
          ["enqueue", () => email.enqueue(BAD_EMAIL), EMAIL_WHY],
          ["enqueueMany", () => email.enqueueMany([{ address: "ok@example.com", body: "fine" }, BAD_EMAIL]), EMAIL_WHY],
          ["enqueueDelayed", () => email.enqueueDelayed(BAD_EMAIL, 60_000), EMAIL_WHY],
          ["enqueueDelayedAt", () => email.enqueueDelayedAt(BAD_EMAIL, new Date(Date.now() + 60_000)), EMAIL_WHY],
          ["enqueueContinue", () => email.enqueueContinue(parent, BAD_EMAIL), EMAIL_WHY],
          ["enqueueIn", () => app.transaction().execute((trx) => email.enqueueIn(trx as never, BAD_EMAIL)), EMAIL_WHY],
          ["enqueueRecurring", () => email.enqueueRecurring("r1", BAD_EMAIL, "0 0 6 * * *"), EMAIL_WHY],
          ["enqueueRecurringSequential", () => email.enqueueRecurringSequential("r2", BAD_EMAIL, "0 0 6 * * *"), EMAIL_WHY],
          ["enqueueRecurringContinue", () => email.enqueueRecurringContinue(parent, BAD_EMAIL), EMAIL_WHY],
          ["enqueueToPartition", () => order.enqueueToPartition(BAD_ORDER), ORDER_WHY],
          ["enqueueToPartitionDelayed", () => order.enqueueToPartitionDelayed(BAD_ORDER, 60_000), ORDER_WHY],
          ["enqueueContinueToPartition", () => order.enqueueContinueToPartition(parent, BAD_ORDER), ORDER_WHY],
          ["enqueueToPartitionIn", () => app.transaction().execute((trx) => order.enqueueToPartitionIn(trx as never, BAD_ORDER)), ORDER_WHY],
          ["enqueueManyToPartition", () => order.enqueueManyToPartition([{ customerId: 1, description: "fine" }, BAD_ORDER]), ORDER_WHY],
          [
            "enqueue (nested path)",
            () => server.jobs.createAccount.enqueue({ id: "acct-1", createdAt: "2026-01-01T00:00:00.000Z" } as never),
            "createAccount payload: createdAt: expected Date, got a string",
          ],
          ["enqueue (missing field)", () => email.enqueue({ address: "a@example.com" } as never), "sendEmail payload: body: missing, expected string"],
          ["enqueue (not an object)", () => email.enqueue("hello" as never), "sendEmail payload: expected an object, got a string"],
        ];
        for (const [form, call, why] of forms) {
          const error = await refusal(call());
          expect(error.code, form).toBe("INVALID_ARGUMENT");
          expect(error.message, form).toBe(why);
        }
        expect(await stored(server.backend)).toEqual({ jobs: 0, schedules: 0 });
      } finally {
        await app.destroy();
      }
    });
  });

  it("ctx.jobs inside a handler refuses a payload of the wrong type the same way", async () => {
    const db = await entry.createDatabase();
    let refused: LaterError | undefined;
    const server = await new JobsBuilder({ backend: db.backend(), autoMigrate: true, pollIntervalMs: 50, topics: [topic("orders", 4)] })
      .withSendEmailHandler(async (ctx) => {
        refused = await refusal(ctx.jobs.createAccount.enqueue({ id: 5, createdAt: new Date() } as never));
      })
      .withCreateAccountHandler(() => undefined)
      .withProcessOrderHandler(() => undefined)
      .build();
    try {
      const id = await server.jobs.sendEmail.enqueue({ address: "a@example.com", body: "hi" });
      await waitFor(async () => (await server.backend.inspect.jobGet({ id }))?.stage === "success", "the handler to finish");
      expect(refused?.code).toBe("INVALID_ARGUMENT");
      expect(refused?.message).toBe("createAccount payload: id: expected string, got a number");
      expect((await server.backend.inspect.jobList({ limit: 10 })).map((j) => j.id)).toEqual([id]);
    } finally {
      await server.shutdown({ deadlineMs: 0 });
      await db.dispose();
    }
  });

  it("a stored payload that no longer matches its type fails with PAYLOAD_DECODE naming the path; other jobs run", async () => {
    await withServer(async (server, _db, seen) => {
      // Written through the untyped publisher: valid JSON, the wrong shape (as after a schema change).
      const bad = await server.core.publisher.enqueue("sendEmail", { address: "a@example.com", body: { html: "<p>hi</p>" } });
      const good = await server.jobs.sendEmail.enqueue({ address: "b@example.com", body: "hi" });
      const failed = await waitFor(async () => {
        const job = await server.backend.inspect.jobGet({ id: bad });
        return job?.stage === "failed" ? job : null;
      }, "the mismatching job to fail");
      expect(failed.lastError).toContain('payload of job type "sendEmail" does not decode: body: expected string, got an object');
      await waitFor(async () => (await server.backend.inspect.jobGet({ id: good }))?.stage === "success", "the good job to run");
      expect(seen).toEqual([{ address: "b@example.com", body: "hi" }]);
    });
  });

  it("enqueueManyToPartition puts each payload on the partition of its own key, in one call", async () => {
    await withServer(async (server) => {
      const keys = [3, 11, 3, 42, 7];
      const ids = await server.jobs.processOrder.enqueueManyToPartition(keys.map((customerId, i) => ({ customerId, description: `order ${i}` })));
      expect(ids).toHaveLength(keys.length);
      for (const [i, id] of ids.entries()) {
        const job = await server.backend.inspect.jobGet({ id });
        expect(job).toMatchObject({ topic: "orders", partition: partitionForKey(keys[i]!, 4) });
      }
      expect(await server.jobs.processOrder.enqueueManyToPartition([])).toEqual([]);
    });
  });

  it("a publisher registers the topics its schema declares with @partitions, on a fresh database", async () => {
    const db = await entry.createDatabase();
    try {
      const publisher = await openLedgerPublisher({ backend: db.backend(), autoMigrate: true });
      try {
        const id = await publisher.jobs.postEntry.enqueueToPartition({ accountId: "acct-1", cents: 100, memo: "first" });
        const inspect = db.backend();
        await inspect.open();
        try {
          expect((await inspect.inspect.topicDepth()).topics).toEqual([{ topic: "ledger", partitions: 4, unfinished: 1 }]);
          expect(await inspect.inspect.jobGet({ id })).toMatchObject({ topic: "ledger", partition: partitionForKey("acct-1", 4) });
        } finally {
          await inspect.close();
        }
      } finally {
        await publisher.close();
      }
    } finally {
      await db.dispose();
    }
  });

  it("a publisher takes a topic the database already has with its stored partition count", async () => {
    const db = await entry.createDatabase();
    try {
      // The first registers "orders" with 3 partitions (the schema declares no count).
      const first = await openJobsPublisher({ backend: db.backend(), autoMigrate: true, topics: [topic("orders", 3)] });
      await first.close();
      const publisher = await openJobsPublisher({ backend: db.backend() });
      try {
        const ids = await publisher.jobs.processOrder.enqueueManyToPartition([1, 2, 3, 4, 5].map((customerId) => ({ customerId, description: "x" })));
        const inspect = db.backend();
        await inspect.open();
        try {
          for (const [i, id] of ids.entries()) {
            expect(await inspect.inspect.jobGet({ id })).toMatchObject({ topic: "orders", partition: partitionForKey(i + 1, 3) });
          }
        } finally {
          await inspect.close();
        }
      } finally {
        await publisher.close();
      }
    } finally {
      await db.dispose();
    }
  });
});
