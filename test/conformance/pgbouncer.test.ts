/**
 * The PostgreSQL backend behind PgBouncer in transaction mode (Debian's
 * PgBouncer 1.18, which keeps no prepared statements): each transaction may
 * run on another server connection, so named prepared statements and LISTEN
 * do not survive between statements. With the defaults the backend finds
 * that out and runs unnamed and polling, with warnings; with
 * `listen: false, preparedStatements: false` it starts that way. Either way
 * plain, delayed, continuation, partitioned and `enqueueIn` jobs all run,
 * once each, partitions in order, with no error event and no raw driver
 * error.
 *
 * Two servers share one PgBouncer whose pool holds a single server
 * connection: a statement one server prepared is already there when the
 * other prepares it (42P05), as when many clients share few connections.
 */
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BackgroundJobServer, topic, type ServerEvent } from "@later/runtime";
import { postgres, type PostgresBackendOptions, type PostgresBackendWarning } from "@later/runtime/postgres";
import { startPgbouncer, pgbouncerInstalled, type Pgbouncer } from "../support/pgbouncer.js";
import { createPostgresSchema, postgresUrl } from "../support/postgres.js";
import { waitFor } from "./harness.js";

const url = postgresUrl();
// Without PgBouncer the suite is skipped with a notice, except under CI=true, where starting it fails the run.
const runnable = url !== null && (pgbouncerInstalled || process.env.CI === "true");
if (url !== null && !runnable) console.warn("!! PgBouncer suite skipped: pgbouncer is not installed (apt-get install -y pgbouncer)");

interface Payload {
  kind: string;
  i: number;
}

describe.skipIf(!runnable)("PostgreSQL behind PgBouncer (transaction mode)", () => {
  let bouncer: Pgbouncer;
  beforeAll(async () => {
    bouncer = await startPgbouncer(url!, 1);
  });
  afterAll(async () => {
    await bouncer?.stop();
  });

  it.each([
    { mode: "the defaults", options: {} as Partial<PostgresBackendOptions>, expected: ["PREPARED_STATEMENTS_UNAVAILABLE"] },
    { mode: "listen: false, preparedStatements: false", options: { listen: false, preparedStatements: false }, expected: [] },
  ])("with $mode: every kind of job runs once, partitions in order, no error", async ({ options, expected }) => {
    const db = await createPostgresSchema();
    const warnings: PostgresBackendWarning[] = [];
    const errors: ServerEvent[] = [];
    const runs: { key: string; at: number }[] = [];
    const start = () =>
      BackgroundJobServer.start({
        context: {},
        autoMigrate: true,
        // Both servers run in this process: on its clock, the delayed job's start is compared exactly with the
        // test's Date.now(). On the database's clock (the default, tested in clock-skew.test.ts) each server's
        // offset carries up to half a round trip of error, which a loaded machine stretches past the 5 ms allowed.
        timeSource: "local",
        pollIntervalMs: 50,
        topics: [topic("orders", 2)],
        backend: postgres({ connectionString: bouncer.url, schema: db.schema, maxConnections: 4, onWarning: (w) => warnings.push(w), ...options }),
        handlers: { work: { handle: async (_ctx: unknown, p: Payload) => void runs.push({ key: `${p.kind}:${p.i}`, at: Date.now() }) } },
        onEvent: (e) => {
          if (e.type === "error") errors.push(e);
        },
      });
    const a = await start();
    const b = await start();
    const app = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: bouncer.url, max: 2 }) }) });
    try {
      const expectedKeys: string[] = [];
      const enqueue = async (publisher: typeof a.publisher, kind: string, i: number, extra: Parameters<typeof a.publisher.enqueue>[2] = {}) => {
        expectedKeys.push(`${kind}:${i}`);
        return publisher.enqueue("work", { kind, i }, extra);
      };
      for (let i = 0; i < 4; i++) await enqueue(i % 2 ? b.publisher : a.publisher, "plain", i);
      const delayedAt = Date.now() + 300;
      await enqueue(a.publisher, "delayed", 0, { delayMs: 300 });
      const parent = await enqueue(b.publisher, "parent", 0);
      await enqueue(a.publisher, "child", 0, { parentId: parent });
      for (let i = 0; i < 8; i++) {
        expectedKeys.push(`ordered:${i}`);
        await (i % 2 ? b : a).publisher.enqueueToPartition("work", { kind: "ordered", i }, { topic: "orders", partition: 0 });
      }
      expectedKeys.push("in:0");
      await app.transaction().execute((trx) => a.publisher.enqueueIn(trx, "work", { kind: "in", i: 0 }));
      let rolledBack: string | undefined;
      await expect(
        app.transaction().execute(async (trx) => {
          rolledBack = await b.publisher.enqueueIn(trx, "work", { kind: "rolled-back", i: 0 });
          throw new Error("roll back");
        }),
      ).rejects.toThrow("roll back");

      await waitFor(() => runs.length >= expectedKeys.length, `${expectedKeys.length} jobs to run`, 20_000);
      await waitFor(async () => (await a.backend.inspect.stageCounts()).counts.success === expectedKeys.length, "every outcome stored");
      expect(runs.map((r) => r.key).sort()).toEqual([...expectedKeys].sort());
      const keys = runs.map((r) => r.key);
      expect(keys.filter((k) => k.startsWith("ordered:"))).toEqual(Array.from({ length: 8 }, (_, i) => `ordered:${i}`));
      expect(keys.indexOf("child:0")).toBeGreaterThan(keys.indexOf("parent:0"));
      expect(runs.find((r) => r.key === "delayed:0")!.at).toBeGreaterThanOrEqual(delayedAt - 5);
      expect(await a.backend.inspect.jobGet({ id: rolledBack! as never })).toBeNull();
      expect(errors).toEqual([]);
      const codes = [...new Set(warnings.map((w) => w.code))];
      for (const code of expected) expect(codes).toContain(code);
      if (expected.length === 0) expect(warnings).toEqual([]);
      else expect(codes.every((c) => c === "PREPARED_STATEMENTS_UNAVAILABLE" || c === "LISTEN_UNAVAILABLE")).toBe(true);
    } finally {
      await app.destroy();
      await b.shutdown({ deadlineMs: 1_000 });
      await a.shutdown({ deadlineMs: 1_000 });
      await db.dispose();
    }
  });
});
