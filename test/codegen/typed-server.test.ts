// The generated module driving a real server, on every backend of the conformance list.
import Database from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import { describe, expect, it } from "vitest";
import { HandlerMissingError, InvalidConfigError, PermanentJobError, partitionForKey, topic, type JobId } from "@later/runtime";
import { BACKENDS, withDatabase } from "../conformance/backends.js";
import { waitFor } from "../conformance/harness.js";
import { JobsBuilder as DatesBuilder } from "./schemas/dates.generated.js";
import type { Meeting } from "./schemas/dates.schema.js";
import { JobsBuilder, openJobsPublisher, type JobsServer } from "./schemas/shop.generated.js";
import type { SendEmail } from "./schemas/shop.schema.js";

const FAST = { pollIntervalMs: 50, autoMigrate: true } as const;
/** shop.schema.ts declares topic "orders" without @partitions: its servers register it in `topics`. */
const ORDERS = { topics: [topic("orders", 4)] };

async function finished(server: { backend: JobsServer<unknown>["backend"] }, id: JobId) {
  return waitFor(async () => {
    const job = await server.backend.inspect.jobGet({ id });
    return job && (job.stage === "success" || job.stage === "failed" || job.stage === "cancelled") ? job : null;
  }, `job ${id} to finish`);
}

describe.each(BACKENDS)("generated module on $name", (entry) => {
  it("round-trips Date fields as Dates, wherever they sit in the payload", () =>
    withDatabase(entry, async (db) => {
      const seen: Meeting[] = [];
      const server = await new DatesBuilder({ context: null, backend: db.backend(), ...FAST })
        .withScheduleMeetingHandler((_ctx, meeting) => void seen.push(meeting))
        .withPingHandler(() => {})
        .build();
      try {
        const at = (s: string) => new Date(`2026-03-0${s}T10:00:00.123Z`);
        const meeting: Meeting = {
          title: "planning",
          startsAt: at("1"),
          cancelledAt: null,
          attendees: [
            { name: "ada", invitedAt: at("2") },
            { name: "bob", invitedAt: at("3") },
          ],
          reminders: [at("4"), at("5")],
          byRoom: { blue: { bookedAt: at("6") } },
          window: [at("7"), at("8")],
          notes: ["2026-03-01T10:00:00.000Z"],
        };
        const id = await server.jobs.scheduleMeeting.enqueue(meeting);
        expect((await finished(server, id)).stage).toBe("success");
        expect(seen).toHaveLength(1);
        const got = seen[0]!;
        expect(got).toEqual(meeting);
        for (const d of [
          got.startsAt,
          got.attendees[0]!.invitedAt,
          got.attendees[1]!.invitedAt,
          got.reminders[1],
          got.byRoom.blue!.bookedAt,
          got.window[0],
          got.window[1],
        ]) {
          expect(d).toBeInstanceOf(Date);
        }
        expect(got.endsAt).toBeUndefined();
        expect(got.cancelledAt).toBeNull();
        expect(got.notes[0]).toBe("2026-03-01T10:00:00.000Z"); // a string field that looks like a date stays a string
      } finally {
        await server.shutdown({ deadlineMs: 1_000 });
      }
    }));

  it("build() names every missing handler and starts nothing", () =>
    withDatabase(entry, async (db) => {
      const builder = new JobsBuilder({ context: {}, backend: db.backend(), ...FAST }).withSendEmailHandler(() => {});
      const error: unknown = await builder.build().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HandlerMissingError);
      expect((error as HandlerMissingError).code).toBe("HANDLER_MISSING");
      expect((error as Error).message).toContain("withCreateAccountHandler");
      expect((error as Error).message).toContain("withProcessOrderHandler");
      expect((error as HandlerMissingError).jobTypes).toEqual(["createAccount", "processOrder"]);
      expect(() => new JobsBuilder({ context: {}, backend: db.backend(), handlers: {} } as never)).toThrow(InvalidConfigError);
    }));

  it("handlers enqueue through ctx.jobs, continuations chain, and a stored payload that no longer decodes fails the job", () =>
    withDatabase(entry, async (db) => {
      const order: string[] = [];
      const server = await new JobsBuilder({ context: { prefix: ">" }, backend: db.backend(), ...FAST, ...ORDERS })
        .withSendEmailHandler(async (ctx, email) => {
          order.push(`${ctx.app.prefix} email ${email.body}`);
          if (email.body === "first") await ctx.jobs.createAccount.enqueue({ id: "from-handler", createdAt: new Date(0) });
        })
        .withCreateAccountHandler((_ctx, account) => void order.push(`account ${account.id} ${account.createdAt.toISOString()}`))
        .withProcessOrderHandler(() => {})
        .build();
      try {
        const first = await server.jobs.sendEmail.enqueue({ address: "a@b.c", body: "first" });
        const second = await server.jobs.sendEmail.enqueueContinue(first, { address: "a@b.c", body: "second" });
        expect((await finished(server, second)).stage).toBe("success");
        await waitFor(() => order.length === 3, "three handlers ran");
        expect(order[0]).toBe("> email first");
        expect(order).toContain("account from-handler 1970-01-01T00:00:00.000Z");
        expect(order).toContain("> email second");
        expect(order.indexOf("> email second")).toBeGreaterThan(0);

        // a stored createdAt that is not a date: the job fails as undecodable, the worker lives on
        const bad = await server.core.publisher.enqueue("createAccount", { id: "x", createdAt: "not a date" });
        const job = await finished(server, bad);
        expect(job.stage).toBe("failed");
        expect(job.lastError).toMatch(/does not decode: field createdAt of "createAccount" holds "not a date"/);
        const after = await server.jobs.sendEmail.enqueue({ address: "a@b.c", body: "after" });
        expect((await finished(server, after)).stage).toBe("success");
      } finally {
        await server.shutdown({ deadlineMs: 1_000 });
      }
    }));

  it("a topic job goes to the partition of its @partitionKey field and runs in order; an unregistered topic is refused before writing", () =>
    withDatabase(entry, async (db) => {
      const seen: string[] = [];
      const server = await new JobsBuilder({ context: {}, backend: db.backend(), topics: [topic("orders", 4)], ...FAST })
        .withSendEmailHandler(() => {})
        .withCreateAccountHandler(() => {})
        .withProcessOrderHandler((ctx, p) => {
          expect(ctx.partition).toEqual({ topic: "orders", partition: partitionForKey(p.customerId, 4) });
          seen.push(p.description);
        })
        .build();
      // Another namespace, where no server registered "orders" (a publisher takes a topic its own namespace has stored).
      const bare = await openJobsPublisher({ backend: db.backend("elsewhere") });
      try {
        const ids: JobId[] = [];
        for (const description of ["add", "pay", "ship"]) ids.push(await server.jobs.processOrder.enqueueToPartition({ customerId: 42, description }));
        expect((await finished(server, ids[2]!)).stage).toBe("success");
        expect(seen).toEqual(["add", "pay", "ship"]);
        expect((await server.backend.inspect.jobGet({ id: ids[0]! }))!.partition).toBe(partitionForKey(42, 4));
        const before = (await server.backend.inspect.jobList({ limit: 100 })).length;
        await expect(bare.jobs.processOrder.enqueueToPartition({ customerId: 1, description: "x" })).rejects.toMatchObject({ code: "UNKNOWN_TOPIC" });
        await expect(server.jobs.processOrder.enqueueToPartition({ customerId: 1.5, description: "x" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
        expect((await server.backend.inspect.jobList({ limit: 100 })).length).toBe(before);
      } finally {
        await bare.close();
        await server.shutdown({ deadlineMs: 1_000 });
      }
    }));

  it("a publisher-only process enqueues; partition and recurring methods refuse before writing", () =>
    withDatabase(entry, async (db) => {
      const seen: SendEmail[] = [];
      const server = await new JobsBuilder({ context: {}, backend: db.backend(), ...FAST, ...ORDERS })
        .withSendEmailHandler((_ctx, p) => void seen.push(p))
        .withCreateAccountHandler(() => {})
        .withProcessOrderHandler(() => {})
        .build();
      const publisher = await openJobsPublisher({ backend: db.backend() });
      try {
        const id = await publisher.jobs.sendEmail.enqueue({ address: "web@b.c", body: "from the web process" });
        expect((await finished(server, id)).stage).toBe("success");
        expect(seen).toEqual([{ address: "web@b.c", body: "from the web process" }]);
        const before = await server.backend.inspect.jobList({ limit: 100 });
        await expect(server.jobs.sendEmail.enqueueRecurring("news", { address: "a", body: "b" }, "0 0 6 * *")).rejects.toMatchObject({ code: "INVALID_CRON" });
        await expect(publisher.jobs.sendEmail.enqueueRecurringSequential("news", { address: "a", body: "b" }, "0 0 6 * * *")).rejects.toMatchObject({
          code: "INVALID_CONFIG",
        });
        expect((await server.backend.inspect.jobList({ limit: 100 })).length).toBe(before.length);
        // Registered from the web process, the same schedule from a server is an update (null).
        expect(await publisher.jobs.sendEmail.enqueueRecurring("news", { address: "a", body: "b" }, "0 0 6 * * *", { timeZone: "Europe/Paris" })).toMatch(
          /^[0-9a-z]{26}$/,
        );
        expect(await server.jobs.sendEmail.enqueueRecurring("news", { address: "a", body: "c" }, "0 0 6 * * *", { timeZone: "Europe/Paris" })).toBeNull();
      } finally {
        await publisher.close();
        await server.shutdown({ deadlineMs: 1_000 });
      }
    }));

  it("the generated server and the publisher-only process both force-fail a partition head, truncate its history and delete a schedule", () =>
    withDatabase(entry, async (db) => {
      const topics = [topic("orders", 4)];
      const publisher = await openJobsPublisher({ backend: db.backend(), topics, autoMigrate: true });
      const server = await new JobsBuilder({ context: {}, backend: db.backend(), ...FAST, topics })
        .withSendEmailHandler(() => {})
        .withCreateAccountHandler(() => {})
        .withProcessOrderHandler(() => {})
        .build();
      try {
        // A partition with a waiting head (its parent is delayed) and one job behind it.
        const parent = await publisher.jobs.sendEmail.enqueueDelayed({ address: "a", body: "later" }, 3_600_000);
        const head = await publisher.jobs.processOrder.enqueueContinueToPartition(parent, { customerId: 7, description: "blocked" });
        const next = await publisher.jobs.processOrder.enqueueToPartition({ customerId: 7, description: "next" });
        expect(await publisher.forceFailPartitionHead({ topic: "orders", key: 7 }, "skipped by an operator")).toBe(head);
        expect(await server.backend.inspect.jobGet({ id: head })).toMatchObject({ stage: "failed", lastError: "skipped by an operator" });
        expect((await finished(server, next)).stage).toBe("success");
        expect(await server.truncatePartitionHistory({ topic: "orders", key: 7 }, 1)).toBe(1);
        expect(await publisher.truncatePartitionHistory({ topic: "orders", key: 7 }, 0)).toBe(1);
        expect(await server.forceFailPartitionHead({ topic: "orders", key: 7 })).toBeNull();
        await expect(publisher.forceFailPartitionHead({ topic: "nope", key: 7 })).rejects.toMatchObject({ code: "UNKNOWN_TOPIC" });

        await publisher.jobs.sendEmail.enqueueRecurring("news", { address: "a", body: "b" }, "0 0 6 * * *");
        await server.jobs.sendEmail.enqueueRecurring("digest", { address: "a", body: "b" }, "0 0 7 * * *");
        expect(await server.deleteRecurring("news")).toBe(true);
        expect(await publisher.deleteRecurring("digest")).toBe(true);
        expect(await publisher.deleteRecurring("news")).toBe(false);
      } finally {
        await publisher.close();
        await server.shutdown({ deadlineMs: 1_000 });
      }
    }));

  it("the generated server and the publisher-only process retry, delete and cancel jobs, by id and by filter (X7, X3)", () =>
    withDatabase(entry, async (db) => {
      const publisher = await openJobsPublisher({ backend: db.backend(), autoMigrate: true });
      let fail = true;
      const server = await new JobsBuilder({ context: {}, backend: db.backend(), ...FAST, ...ORDERS })
        .withSendEmailHandler(() => {
          if (fail) throw new PermanentJobError("mail server down");
        })
        .withCreateAccountHandler(() => {})
        .withProcessOrderHandler(() => {})
        .build();
      try {
        const a = await publisher.jobs.sendEmail.enqueue({ address: "a", body: "1" });
        const b = await publisher.jobs.sendEmail.enqueue({ address: "b", body: "2" });
        const c = await publisher.jobs.sendEmail.enqueue({ address: "c", body: "3" });
        for (const id of [a, b, c]) expect((await finished(server, id)).stage).toBe("failed");
        fail = false;
        await publisher.retry(a);
        expect((await finished(server, a)).stage).toBe("success");
        await expect(server.retry(a)).rejects.toMatchObject({ code: "JOB_ACTION_REFUSED", stage: "success" });
        expect(await server.retryJobs({ jobType: "sendEmail" })).toBe(2);
        for (const id of [b, c]) expect((await finished(server, id)).stage).toBe("success");
        await server.delete(a);
        await expect(publisher.delete(a)).rejects.toMatchObject({ code: "JOB_NOT_FOUND" });
        expect(await publisher.deleteJobs({ stage: "success", jobType: "sendEmail" })).toBe(2);
        expect((await server.backend.inspect.stageCounts()).counts.success).toBe(0);
        // X3: cancel by id and by filter, on both handles.
        const d = await publisher.jobs.sendEmail.enqueue({ address: "d", body: "4" }, { delayMs: 3_600_000 });
        const e = await publisher.jobs.sendEmail.enqueue({ address: "e", body: "5" }, { delayMs: 3_600_000 });
        expect(await publisher.cancel(d, "not needed")).toBe(true);
        expect(await server.cancel(d)).toBe(false);
        expect(await server.cancelJobs({ stage: "delayed", jobType: "sendEmail" })).toBe(1);
        expect(await publisher.cancelJobs({})).toBe(0);
        expect((await finished(server, e)).stage).toBe("cancelled");
      } finally {
        await publisher.close();
        await server.shutdown({ deadlineMs: 1_000 });
      }
    }));
});

describe("generated module with the application's own transaction (SQLite)", () => {
  it("enqueueIn writes the job only if the application's Kysely transaction commits", async () => {
    const db = await BACKENDS[0]!.createDatabase();
    const sqliteDb = new Database(db.location);
    const kysely = new Kysely<{ orders: { id: string } }>({ dialect: new SqliteDialect({ database: sqliteDb }) });
    const seen: string[] = [];
    const server = await new JobsBuilder({ context: {}, backend: db.backend(), ...FAST, ...ORDERS })
      .withSendEmailHandler((_ctx, p) => void seen.push(p.body))
      .withCreateAccountHandler(() => {})
      .withProcessOrderHandler(() => {})
      .build();
    try {
      await kysely.schema.createTable("orders").addColumn("id", "text").execute();
      const id = await kysely.transaction().execute(async (trx) => {
        await trx.insertInto("orders").values({ id: "o1" }).execute();
        return server.jobs.sendEmail.enqueueIn(trx, { address: "a@b.c", body: "committed" });
      });
      await expect(
        kysely.transaction().execute(async (trx) => {
          await trx.insertInto("orders").values({ id: "o2" }).execute();
          await server.jobs.sendEmail.enqueueIn(trx, { address: "a@b.c", body: "rolled back" });
          throw new Error("rollback");
        }),
      ).rejects.toThrow("rollback");
      expect((await finished(server, id)).stage).toBe("success");
      expect(seen).toEqual(["committed"]);
      expect((await server.backend.inspect.jobList({ limit: 10 })).map((j) => j.id)).toEqual([id]);
    } finally {
      await server.shutdown({ deadlineMs: 1_000 });
      await kysely.destroy();
      await db.dispose();
    }
  });
});
