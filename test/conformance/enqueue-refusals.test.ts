// Enqueue input that cannot be stored as given is refused with INVALID_ARGUMENT saying why, and
// writes nothing: an invalid Date (JSON would store it as null) anywhere in a payload, through the
// untyped publisher and the generated module; and enqueueIn given something that is not a
// transaction, with a message that says what it got.
import { describe, expect, it } from "vitest";
import { topic } from "@later/runtime";
import { JobsBuilder } from "../codegen/schemas/shop.generated.js";
import { BACKENDS } from "./backends.js";
import { refusal, useHarness } from "./harness.js";

describe.each(BACKENDS)("enqueue refusals on $name", (entry) => {
  const harness = useHarness(entry);

  it("an invalid Date anywhere in a payload is INVALID_ARGUMENT naming its field; nothing is stored", async () => {
    const h = harness();
    const server = await h.start({ handlers: { a: { handle: () => undefined } } });
    const invalid = new Date("not a date");
    const cases: [unknown, string][] = [
      [{ at: invalid }, "payload.at: an invalid Date (its time is NaN)"],
      [{ order: { placedAt: invalid } }, "payload.order.placedAt: an invalid Date (its time is NaN)"],
      [{ times: [new Date(0), invalid] }, "payload.times[1]: an invalid Date (its time is NaN)"],
    ];
    for (const [payload, why] of cases) {
      const error = await refusal(server.publisher.enqueue("a", payload));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toBe(`payload of "a" cannot be stored as JSON: ${why}`);
    }
    expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
    expect(Object.values((await server.backend.inspect.stageCounts()).counts).every((n) => n === 0)).toBe(true);
  });

  it("the generated module refuses an invalid Date field the same way", async () => {
    const h = harness();
    await h.start({ handlers: {} }); // creates the database
    const server = await new JobsBuilder({ context: {}, backend: h.db.backend(), autoMigrate: true, topics: [topic("orders", 2)] })
      .withSendEmailHandler(() => undefined)
      .withCreateAccountHandler(() => undefined)
      .withProcessOrderHandler(() => undefined)
      .build();
    try {
      const error = await refusal(server.jobs.createAccount.enqueue({ id: "acct-1", createdAt: new Date(Number.NaN) }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      // The payload's type is checked first (a Date must be a valid one), naming the field.
      expect(error.message).toBe("createAccount payload: createdAt: expected Date, got an invalid Date");
      expect(await server.backend.inspect.jobList({ limit: 10 })).toEqual([]);
    } finally {
      await server.shutdown({ deadlineMs: 0 });
    }
  });

  it("enqueueIn given something that is not a transaction says what it got; nothing is stored", async () => {
    const h = harness();
    const server = await h.start({ handlers: { a: { handle: () => undefined } }, topics: [topic("orders", 2)] });
    const app = h.db.appDatabase<Record<string, never>>();
    try {
      const got = async (value: unknown) => {
        const error = await refusal(server.publisher.enqueueIn(value as never, "a", {}));
        expect(error.code).toBe("INVALID_ARGUMENT");
        expect(error.message).toMatch(/^enqueueIn needs a transaction: /);
        return error.message.slice(error.message.indexOf("; got ") + "; got ".length);
      };
      expect(await got(app)).toMatch(/^a Kysely instance, not a transaction .*db\.transaction\(\)\.execute\(trx => \.\.\.\)/);
      expect(await got(undefined)).toBe("undefined");
      expect(await got(null)).toBe("null");
      expect(await got({ id: 1, name: "x" })).toBe("an object { id, name }");
      expect(await got("BEGIN")).toBe('a string ("BEGIN")');
      expect(await got(() => undefined)).toMatch(/^a function /);
      const partitioned = await refusal(server.publisher.enqueueToPartitionIn(app as never, "a", {}, { topic: "orders", partition: 0 }));
      expect(partitioned.message).toMatch(/; got a Kysely instance/);
      // The transaction itself is taken.
      const id = await app.transaction().execute((trx) => server.publisher.enqueueIn(trx as never, "a", {}));
      expect((await server.backend.inspect.jobList({ limit: 10 })).map((j) => j.id)).toEqual([id]);
    } finally {
      await app.destroy();
    }
  });
});
