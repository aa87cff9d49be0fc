/**
 * Hostile and malformed input, property-tested (fast-check) on every
 * backend: payloads, names (namespace, topic, job type, recurring schedule
 * id), cron strings, partition keys, and server and backend options. Each
 * input is either accepted and comes back exactly as given, or refused with
 * a `LaterError` whose message names the field; a refused payload leaves the
 * database byte-for-byte as it was (SQLite: the serialized file; PostgreSQL:
 * `pg_dump` of the schema's data).
 *
 * The seed is fixed, so a run is repeatable (CI must not fail on a value it
 * met by chance); explore others with
 *   LATER_PROPERTY_SEED=7 pnpm vitest run test/conformance/hostile-input.test.ts
 */
import { execFileSync } from "node:child_process";
import Database from "better-sqlite3";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BackgroundJobServer, type LaterError, topic } from "@later/runtime";
import { prepareBackend } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { openJobsPublisher } from "../codegen/schemas/shop.generated.js";
// `opaque` takes any JSON in `body`, so these payloads reach the encoder past the payload type's check.
import { openJobsPublisher as openOpaquePublisher } from "../codegen/schemas/shapes.generated.js";
import { BACKENDS, type TestDatabase } from "./backends.js";

/** Strings an attacker or a careless caller may pass as a name: quotes, SQL, control characters, lone surrogates, emoji, 10,000 characters. */
const hostileString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 30 }),
  fc.string({ unit: "grapheme", maxLength: 60 }),
  fc.constantFrom(
    "'",
    '"',
    "'; DROP TABLE later_jobs; --",
    "\"); DELETE FROM later_jobs WHERE ('1'='1",
    "SELECT * FROM later_jobs",
    "NULL",
    "\\",
    "%_",
    "a\u0000b",
    "\ud800",
    "x\udfffy",
    "名前🚀é",
    "\n\t ",
    "__later_x",
    "a".repeat(200),
    "a".repeat(201),
    "a".repeat(10_000),
  ),
);

/** A value `JSON.stringify` would not give back as it is, and where it sits. */
const badLeaf = fc.oneof(
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Symbol("s"), new Map([[1, 2]]), new Set([1]), new Date("nope"), /re/),
  fc.bigInt(),
  fc.func(fc.integer()),
);
const badPayload = fc.oneof(
  fc.tuple(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })), fc.string(), badLeaf).map(([o, k, b]) => ({ ...o, [`bad${k}`]: b })),
  fc.tuple(fc.array(fc.jsonValue({ maxDepth: 2 })), badLeaf).map(([a, b]) => [...a, { nested: [b] }]),
  fc.array(fc.jsonValue({ maxDepth: 1 })).map((a) => [...a, undefined]),
  fc.constant(null).map(() => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.again = { inner: [cyclic] };
    return cyclic;
  }),
);

/** The database's bytes: SQLite's serialized file, or `pg_dump` of the schema's data. */
function dump(db: TestDatabase, schema: string | null): string {
  if (schema === null) {
    const conn = new Database(db.location, { readonly: true });
    try {
      return conn.serialize().toString("base64");
    } finally {
      conn.close();
    }
  }
  // Without pg_dump's \restrict lines: they carry a random key per run.
  return execFileSync("pg_dump", ["--data-only", "--schema", schema, db.location], { encoding: "utf8" })
    .split("\n")
    .filter((line) => !/^\\(un)?restrict /.test(line))
    .join("\n");
}

const SEED = Number(process.env.LATER_PROPERTY_SEED ?? 20261203);

const codeOf = (e: unknown) => (e as LaterError)?.code;

/** `value` with every -0 made 0: JSON has no -0 (its storing as 0 is checked on its own). */
function positiveZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(positiveZero);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, positiveZero(v)]));
  return value;
}

describe.each(BACKENDS)("hostile input on $name", (entry) => {
  let db: TestDatabase;
  /** The PostgreSQL schema of `db` (null on SQLite). */
  let schema: string | null;
  beforeAll(async () => {
    db = await entry.createDatabase();
    const backend = db.backend("hostile");
    await prepareBackend(backend, true);
    await backend.close();
    schema = entry.name === "postgres" ? ((backend as unknown as { schema: string }).schema ?? null) : null;
  });
  afterAll(async () => {
    await db?.dispose();
  });

  it("payloads: every refused payload names its path, with INVALID_ARGUMENT, and leaves the database byte-for-byte unchanged", async () => {
    const publisher = await openOpaquePublisher({ backend: db.backend("hostile") });
    try {
      await publisher.jobs.opaque.enqueue({ address: "a", body: "before" });
      const before = dump(db, schema);
      await fc.assert(
        fc.asyncProperty(badPayload, async (body) => {
          const error = await publisher.jobs.opaque.enqueue({ address: "a", body: body }).then(
            () => null,
            (e: unknown) => e,
          );
          expect(codeOf(error)).toBe("INVALID_ARGUMENT");
          expect((error as Error).message).toMatch(/cannot be stored as JSON: payload\.body/);
        }),
        { numRuns: 150, seed: SEED },
      );
      expect(dump(db, schema)).toBe(before);
    } finally {
      await publisher.close();
    }
  });

  it("payloads: JSON values, lone surrogates, unicode keys and a 10 MB string come back exactly as enqueued", async () => {
    const backend = db.backend("hostile");
    const publisher = await openOpaquePublisher({ backend });
    try {
      const roundTrip = async (body: unknown) => {
        const id = await publisher.jobs.opaque.enqueue({ address: "a", body: body });
        const stored = await backend.inspect.jobGet({ id });
        expect(JSON.parse(stored!.payload).body).toEqual(body);
      };
      await fc.assert(
        fc.asyncProperty(fc.jsonValue({ maxDepth: 3, stringUnit: "binary" }).map(positiveZero), async (body) => roundTrip(body)),
        { numRuns: 150, seed: SEED },
      );
      await roundTrip("x".repeat(10 * 1024 * 1024));
      // -0 is stored as 0, as JSON does (the two are === in JavaScript).
      const zero = await publisher.jobs.opaque.enqueue({ address: "a", body: -0 });
      expect(Object.is(JSON.parse((await backend.inspect.jobGet({ id: zero }))!.payload).body, 0)).toBe(true);
      await roundTrip({ "名前🚀": "\ud800", "'; --": [null, true, 1.5e300, -0.25] });
      // An undefined member is left out, as JSON does: the handler sees it missing.
      const id = await publisher.jobs.opaque.enqueue({ address: "a", body: { kept: 1, gone: undefined } });
      expect(JSON.parse((await backend.inspect.jobGet({ id }))!.payload).body).toStrictEqual({ kept: 1 });
    } finally {
      await publisher.close();
    }
  });

  it("names: a namespace, topic name, job type or recurring schedule id is stored exactly as given, or refused naming it", async () => {
    await fc.assert(
      fc.asyncProperty(hostileString, async (name) => {
        // As a namespace: refused at construction, or holding the job enqueued in it.
        let backend: ReturnType<TestDatabase["backend"]> | null = null;
        try {
          backend = db.backend(name);
        } catch (e) {
          expect(codeOf(e)).toBe("INVALID_CONFIG");
          expect((e as Error).message).toContain("namespace");
        }
        // As a topic name and a job type: refused before the server starts, or used as given.
        let config: ReturnType<typeof topic> | null = null;
        try {
          config = topic(name, 2);
        } catch (e) {
          expect(codeOf(e)).toBe("INVALID_CONFIG");
          expect((e as Error).message).toContain("topic name");
        }
        if (backend === null) return;
        const started = await BackgroundJobServer.start({
          context: {},
          backend,
          workerCount: 1,
          topics: config ? [config] : [],
          handlers: { [name]: { handle: () => new Promise(() => {}) } },
        }).then(
          (server) => server,
          (e: unknown) => e as Error,
        );
        if (started instanceof Error) {
          expect(codeOf(started)).toBe("INVALID_CONFIG");
          expect(started.message).toMatch(/job type|topic name/);
          expect(config === null || name.startsWith("__later")).toBe(false);
          await backend.close();
          return;
        }
        try {
          const id = config
            ? await started.publisher.enqueueToPartition(name, { n: 1 }, { topic: name, partition: 1 })
            : await started.publisher.enqueue(name, { n: 1 }, { delayMs: 3_600_000 });
          const stored = await started.backend.inspect.jobGet({ id });
          expect(stored).toMatchObject({ jobType: name, topic: config ? name : null });
          expect((await started.backend.inspect.namespaceCounts()).map((c) => c.namespace)).toContain(name);
          // As a recurring schedule id.
          const recurring = await started.publisher.enqueueRecurring(name, name, { n: 2 }, "0 0 0 1 1 *").then(
            () => null,
            (e: unknown) => e,
          );
          if (recurring === null) {
            expect((await started.backend.recurring.list()).map((r) => r.id)).toContain(name);
            expect(await started.publisher.deleteRecurring(name)).toBe(true);
          } else {
            expect(codeOf(recurring)).toBe("INVALID_ARGUMENT");
            expect((recurring as Error).message).toContain("recurring schedule id");
          }
        } finally {
          await started.shutdown({ deadlineMs: 0 });
        }
      }),
      { numRuns: entry.name === "postgres" ? 25 : 40, seed: SEED },
    );
  });

  it("cron strings and partition keys: accepted and used, or refused with INVALID_CRON / INVALID_ARGUMENT naming them", async () => {
    const backend = db.backend("hostile");
    await prepareBackend(backend, true);
    await backend.partitions.topicRegister({ topics: [topic("orders", 4)], now: Date.now() });
    const publisher = await openJobsPublisher({ backend, topics: [topic("orders", 4)] });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(hostileString, fc.constantFrom("* * * * *", "0 0 0 1 1 *", "*/5 * * * * *", "61 * * * * *", "* * *", "0 0 0 31 2 *")),
          async (cron) => {
            const result = await publisher.jobs.sendEmail.enqueueRecurring("cron-probe", { address: "a", body: "b" }, cron).then(
              () => null,
              (e: unknown) => e,
            );
            if (result !== null) {
              expect(codeOf(result)).toBe("INVALID_CRON");
              expect((result as Error).message).toMatch(/cron/);
            }
          },
        ),
        { numRuns: 60, seed: SEED },
      );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(fc.double(), fc.integer(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, Number.MAX_SAFE_INTEGER + 2, 2 ** 64)),
          async (customerId) => {
            const result = await publisher.jobs.processOrder.enqueueToPartition({ customerId, description: "d" }).then(
              (id) => id,
              (e: unknown) => e as Error,
            );
            if (result instanceof Error) {
              expect(codeOf(result)).toBe("INVALID_ARGUMENT");
              expect(result.message).toContain("customerId");
            } else {
              const stored = await backend.inspect.jobGet({ id: result });
              expect(stored!.topic).toBe("orders");
              expect(stored!.partition).toBeGreaterThanOrEqual(0);
              expect(stored!.partition).toBeLessThan(4);
            }
          },
        ),
        { numRuns: 60, seed: SEED },
      );
    } finally {
      await publisher.close();
    }
  });

  it("options: any value of any server or backend option is accepted, or refused with INVALID_CONFIG naming the option", async () => {
    const serverKeys = [
      "workerCount",
      "pollIntervalMs",
      "leaseMs",
      "jobTimeoutMs",
      "retentionMs",
      "defaultRetryPolicy",
      "topics",
      "workerAutoscale",
      "onEvent",
      "clock",
    ];
    const backendKeys =
      entry.name === "sqlite"
        ? ["namespace", "busyTimeoutMs", "file", "database"]
        : [
            "namespace",
            "schema",
            "listen",
            "maxConnections",
            "listenCheckTimeoutMs",
            "preparedStatements",
            "onWarning",
            "applicationName",
            "idleInTransactionTimeoutMs",
          ];
    const value = fc.oneof(fc.anything({ maxDepth: 1 }), fc.constantFrom(-1, 0, 0.5, Number.NaN, 2 ** 53, "", "1", null, [], {}));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...backendKeys, "notAnOption"), value, async (key, v) => {
        const make = () =>
          entry.name === "sqlite" ? sqlite({ file: db.location, [key]: v } as never) : postgres({ connectionString: db.location, [key]: v } as never);
        try {
          (await make()).close();
        } catch (e) {
          expect(codeOf(e)).toBe("INVALID_CONFIG");
          expect((e as Error).message).toContain(key === "file" || key === "database" ? "" : key);
        }
      }),
      { numRuns: 80, seed: SEED },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...serverKeys, "notAnOption"), value, async (key, v) => {
        const started = await BackgroundJobServer.start({
          context: {},
          backend: db.backend("hostile"),
          handlers: { a: { handle: () => undefined } },
          [key]: v,
        } as never).then(
          (server) => server,
          (e: unknown) => e as Error,
        );
        if (started instanceof Error) {
          expect(codeOf(started)).toBe("INVALID_CONFIG");
          expect(started.message).toContain(key);
        } else await started.shutdown({ deadlineMs: 0 });
      }),
      { numRuns: 60, seed: SEED },
    );
  });
});
