/**
 * What only the PostgreSQL backend has: the application's own pool and
 * transactions (`pg` client, Kysely on the shared pool), migrations under
 * an advisory lock, LISTEN/NOTIFY with its fallback, reconnects. Everything
 * else runs for both backends in the conformance suite.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { BackgroundJobServer, type LaterError, logTopic, newJobId, RetainedLog, type ServerEvent } from "@later/runtime";
import { postgres, type PostgresBackendWarning } from "@later/runtime/postgres";
import { createPostgresSchema, oneSessionBackend, postgresUrl, withClient, type PostgresSchema } from "../support/postgres.js";
import { codeOf, deferred, waitFor } from "./harness.js";

const url = postgresUrl();

describe.skipIf(url === null)("PostgreSQL backend", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  async function fresh(): Promise<PostgresSchema> {
    const db = await createPostgresSchema();
    cleanups.push(db.dispose);
    return db;
  }
  async function serve(options: Parameters<typeof postgres>[0], handlers: Record<string, (jobId: string) => unknown>) {
    const server = await BackgroundJobServer.start({
      context: {},
      autoMigrate: true,
      pollIntervalMs: 50,
      backend: postgres(options),
      handlers: Object.fromEntries(Object.entries(handlers).map(([type, h]) => [type, { handle: (ctx: { jobId: string }) => h(ctx.jobId) }])),
    });
    cleanups.push(() => server.shutdown({ deadlineMs: 0 }));
    return server;
  }
  /** Terminates every connection with this application_name (never the caller's own). */
  const terminate = (applicationName: string) =>
    withClient(url!, async (c) =>
      Number(
        (
          await c.query("SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()", [
            applicationName,
          ])
        ).rows[0].n,
      ),
    );

  it("J10 on an app-owned pool: enqueueIn on a pg client inside BEGIN/COMMIT runs; ROLLBACK leaves nothing; the pool stays open after shutdown", async () => {
    const db = await fresh();
    const pool = new pg.Pool({ connectionString: db.searchPathUrl, max: 4 });
    cleanups.push(() => pool.end());
    const ran: string[] = [];
    const server = await serve({ pool, schema: db.schema }, { audit: (id) => void ran.push(id) });
    await pool.query("CREATE TABLE orders (id integer)");

    const client = await pool.connect();
    let rolledBack: string;
    let committed: string;
    try {
      await client.query("BEGIN");
      await client.query("INSERT INTO orders VALUES (1)");
      rolledBack = await server.publisher.enqueueIn(client, "audit", { order: 1 });
      await client.query("ROLLBACK");
      await client.query("BEGIN");
      await client.query("INSERT INTO orders VALUES (2)");
      committed = await server.publisher.enqueueIn(client, "audit", { order: 2 });
      // Not visible (nor run) before the commit.
      expect(await server.backend.inspect.jobGet({ id: committed })).toBeNull();
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    await waitFor(() => ran.includes(committed), "committed job runs");
    expect(await server.backend.inspect.jobGet({ id: rolledBack })).toBeNull();
    expect(ran).toEqual([committed]);
    expect((await pool.query("SELECT id FROM orders")).rows).toEqual([{ id: 2 }]);

    await server.shutdown();
    expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    expect((pool as unknown as { ended: boolean }).ended).toBe(false);
  });

  it("J10 with Kysely on the same app-owned pool: rollback leaves nothing, commit runs", async () => {
    const db = await fresh();
    const pool = new pg.Pool({ connectionString: db.searchPathUrl, max: 4 });
    cleanups.push(() => pool.end());
    const app = new Kysely<{ orders: { id: number } }>({ dialect: new PostgresDialect({ pool }) });
    const ran: string[] = [];
    const server = await serve({ pool, schema: db.schema }, { audit: (id) => void ran.push(id) });
    await app.schema.createTable("orders").addColumn("id", "integer").execute();
    let rolledBack = "";
    await app
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto("orders").values({ id: 1 }).execute();
        rolledBack = await server.publisher.enqueueIn(trx, "audit", {});
        throw new Error("rollback");
      })
      .catch(() => undefined);
    const committed = await app.transaction().execute(async (trx) => {
      await trx.insertInto("orders").values({ id: 2 }).execute();
      return server.publisher.enqueueIn(trx, "audit", {});
    });
    await waitFor(() => ran.includes(committed), "committed job runs");
    expect(await server.backend.inspect.jobGet({ id: rolledBack })).toBeNull();
    await server.shutdown();
    // Our Kysely and pool still work: later ended neither.
    expect(await app.selectFrom("orders").select("id").execute()).toEqual([{ id: 2 }]);
  });

  it("enqueueIn refuses a pool (not a transaction) with INVALID_ARGUMENT", async () => {
    const db = await fresh();
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    cleanups.push(() => pool.end());
    const server = await serve({ connectionString: db.url, schema: db.schema }, { a: () => undefined });
    // As a JavaScript caller (or a cast) would: the compiler refuses both already.
    // @ts-expect-error a pool is not a transaction
    expect(await codeOf(server.publisher.enqueueIn(pool, "a", {}))).toBe("INVALID_ARGUMENT");
    // @ts-expect-error nor is an empty object
    expect(await codeOf(server.publisher.enqueueIn({}, "a", {}))).toBe("INVALID_ARGUMENT");
  });

  it("two servers migrating the same schema at once: one applies, the other waits on the lock and applies nothing", async () => {
    const db = await fresh();
    const a = postgres({ connectionString: db.url, schema: db.schema, listen: false });
    const b = postgres({ connectionString: db.url, schema: db.schema, listen: false });
    cleanups.push(
      () => a.close(),
      () => b.close(),
    );
    await Promise.all([a.open(), b.open()]);
    const before = await a.migrations.status();
    expect(before.current).toBe(0);
    const [ra, rb] = await Promise.all([a.migrations.up(), b.migrations.up()]);
    // Compared with the migrations recorded, not the latest version: the numbers may have gaps (a version merged later).
    expect([ra.applied.length, rb.applied.length].sort()).toEqual([0, (await a.migrations.status()).applied.length]);
    const status = await b.migrations.status();
    expect(status.current).toBe(status.latest);
    expect(status.pending).toEqual([]);
    // And two servers starting at once with autoMigrate both come up.
    const other = await fresh();
    const servers = await Promise.all([1, 2].map(() => serve({ connectionString: other.url, schema: other.schema }, { a: () => undefined })));
    expect(servers).toHaveLength(2);
  });

  it("a schema behind refuses to start with the command to run; one ahead refuses even with autoMigrate", async () => {
    const db = await fresh();
    const handlers = { a: { handle: () => undefined } };
    const err = await BackgroundJobServer.start({ context: {}, handlers, backend: postgres({ connectionString: db.url, schema: db.schema }) }).catch(
      (e: unknown) => e as LaterError,
    );
    expect((err as LaterError).code).toBe("SCHEMA_VERSION_MISMATCH");
    expect((err as Error).message).toContain(`later migrate up --database ${db.url}`);
    expect((err as Error).message).toContain(`--schema ${db.schema}`);
    const server = await BackgroundJobServer.start({
      context: {},
      handlers,
      autoMigrate: true,
      backend: postgres({ connectionString: db.url, schema: db.schema }),
    });
    await server.shutdown();
    await withClient(db.url, (c) => c.query(`INSERT INTO ${db.schema}.later_migrations VALUES (999, 'future', 0)`));
    const ahead = await BackgroundJobServer.start({
      context: {},
      handlers,
      autoMigrate: true,
      backend: postgres({ connectionString: db.url, schema: db.schema }),
    }).catch((e: unknown) => e as LaterError);
    expect((ahead as LaterError).code).toBe("SCHEMA_VERSION_MISMATCH");
    expect((ahead as Error).message).toMatch(/ahead/);
  });

  it("an unreachable server is DATABASE_UNAVAILABLE at start (at once with databaseWaitMs 0, else after waiting that long); bad options are INVALID_CONFIG", async () => {
    const handlers = { a: { handle: () => undefined } };
    // The LISTEN connection opens alongside the reachability check: an unreachable server is one error, not also a wake-up warning.
    const warnings: PostgresBackendWarning[] = [];
    const closed = postgres({ connectionString: "postgres://postgres:secret@127.0.0.1:1/none", onWarning: (w) => void warnings.push(w) });
    const err = await BackgroundJobServer.start({ context: {}, handlers, backend: closed, databaseWaitMs: 0 }).catch((e: unknown) => e as LaterError);
    expect(err).toMatchObject({ code: "DATABASE_UNAVAILABLE", transient: true });
    expect((err as Error).message).not.toContain("secret");
    expect(warnings).toEqual([]);
    // With a wait: each failed try is an error event of start(), then the last failure says how long it waited.
    const events: ServerEvent[] = [];
    const backend = postgres({ connectionString: "postgres://postgres@127.0.0.1:1/none" });
    const waited = await BackgroundJobServer.start({ context: {}, handlers, backend, databaseWaitMs: 600, onEvent: (e) => void events.push(e) }).catch(
      (e: unknown) => e as LaterError,
    );
    expect(waited).toMatchObject({ code: "DATABASE_UNAVAILABLE", transient: true });
    expect((waited as Error).message).toContain("still unreachable after databaseWaitMs, 600 ms");
    expect(events.filter((e) => e.type === "error" && e.where === "start" && e.code === "DATABASE_UNAVAILABLE").length).toBeGreaterThanOrEqual(2);
    expect(await codeOf(() => BackgroundJobServer.start({ context: {}, handlers, backend, databaseWaitMs: -1 }))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => postgres({} as never))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => postgres({ connectionString: url!, pool: new pg.Pool() }))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => postgres({ connectionString: url!, schema: "no-dashes" }))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => postgres({ connectionString: url!, namespace: "" }))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => postgres({ connectionString: url!, maxConnections: 0 }))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => postgres({ connectionString: url!, listen: "yes" } as never))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => postgres({ connectionString: url!, nope: 1 } as never))).toBe("INVALID_CONFIG");
  });

  it("when no NOTIFY comes back at open, the backend polls only and warns through onWarning; listen: false is silent", async () => {
    const db = await fresh();
    // LISTEN lands in another database than the pool's statements (as behind a
    // transaction-mode pooler, notifications never reach the listener).
    const elsewhere = await otherDatabase(url!);
    const real = new pg.Pool({ connectionString: db.url, max: 2 });
    cleanups.push(() => real.end());
    const listenerOptions = { ...real.options, connectionString: elsewhere };
    const pool = new Proxy(real, {
      get: (target, key) =>
        key === "options" ? listenerOptions : typeof Reflect.get(target, key) === "function" ? Reflect.get(target, key).bind(target) : Reflect.get(target, key),
    });
    const warnings: PostgresBackendWarning[] = [];
    const backend = postgres({ pool, schema: db.schema, listenCheckTimeoutMs: 300, onWarning: (w) => void warnings.push(w) });
    cleanups.push(() => backend.close());
    expect(backend.capabilities.crossProcessWake).toBe(true);
    await backend.open();
    expect(warnings.map((w) => w.code)).toEqual(["LISTEN_UNAVAILABLE"]);
    expect(warnings[0]!.message).toMatch(/polling/);
    expect(backend.capabilities.crossProcessWake).toBe(false);

    const quiet: PostgresBackendWarning[] = [];
    const off = postgres({ connectionString: db.url, schema: db.schema, listen: false, onWarning: (w) => void quiet.push(w) });
    cleanups.push(() => off.close());
    await off.open();
    expect(quiet).toEqual([]);
    expect(off.capabilities.crossProcessWake).toBe(false);
  });

  it("the listener reconnects after its connection is killed and wakes once; NOTIFYs arrive again", async () => {
    const db = await fresh();
    const applicationName = `later-listen-${db.schema}`.slice(0, 63);
    const listening = postgres({ connectionString: db.url, schema: db.schema, applicationName });
    const writer = postgres({ connectionString: db.url, schema: db.schema });
    cleanups.push(
      () => listening.close(),
      () => writer.close(),
    );
    await writer.open();
    await writer.migrations.up();
    await listening.open();
    let wakes = 0;
    const unsubscribe = listening.wakeSubscribe(() => void wakes++);
    cleanups.push(async () => unsubscribe());
    expect(await terminate(applicationName)).toBeGreaterThan(0);
    await waitFor(() => wakes === 1, "the wake after reconnecting");
    const now = Date.now();
    await writer.jobs.insertMany({ now, jobs: [{ id: "01jz0000000000000000000000", jobType: "t", payload: "{}", runAt: now, retryPolicy: "{}" }] });
    await waitFor(() => wakes === 2, "a NOTIFY after the reconnect");
  });

  it("a server whose connections are all killed mid-run reconnects and finishes every job once", async () => {
    const db = await fresh();
    const applicationName = `later-kill-${db.schema}`.slice(0, 63);
    const ran = new Map<string, number>();
    const gate = deferred();
    const server = await serve(
      { connectionString: db.url, schema: db.schema, applicationName },
      {
        slow: async (id) => {
          ran.set(id, (ran.get(id) ?? 0) + 1);
          await gate.promise;
        },
        quick: (id) => void ran.set(id, (ran.get(id) ?? 0) + 1),
      },
    );
    const slow = await server.publisher.enqueueMany("slow", [{}, {}]);
    await waitFor(() => slow.every((id) => ran.has(id)), "slow jobs running");
    expect(await terminate(applicationName)).toBeGreaterThan(0);
    gate.resolve();
    const quick = await server.publisher.enqueueMany(
      "quick",
      Array.from({ length: 50 }, (_, i) => ({ i })),
    );
    await waitFor(async () => (await server.backend.inspect.stageCounts()).counts.success === 52, "all 52 jobs stored as success");
    for (const id of [...slow, ...quick]) expect(ran.get(id)).toBe(1);
  });

  it("claims, finishes and renewals find their jobs through the primary key on a table filled since it was last analyzed: no sequential scan", async () => {
    // Each statement's first five runs on a connection are planned with its parameters' values; on a
    // table never analyzed, 500 ids given as an array parameter were estimated as most of the table.
    // One connection (its statistics are flushed below), never analyzed for the whole test: autovacuum is off on the table.
    const { pool, backend, table } = await oneSessionBackend(cleanups);
    const now = Date.now();
    for (let i = 0; i < 4; i++)
      await backend.jobs.insertMany({
        jobs: Array.from({ length: 1000 }, () => ({ id: newJobId(now), jobType: "noop", payload: "{}", runAt: now, retryPolicy: null })),
        now,
      });
    const seqScans = async () => {
      await pool.query("SELECT pg_stat_force_next_flush()"); // flushed when the connection next goes idle
      await pool.query("SELECT 1");
      return withClient(url!, async (c) =>
        Number((await c.query("SELECT seq_scan FROM pg_stat_user_tables WHERE relid = $1::regclass", [table])).rows[0].seq_scan),
      );
    };
    const analyzed = await withClient(url!, async (c) => (await c.query("SELECT reltuples FROM pg_class WHERE oid = $1::regclass", [table])).rows[0].reltuples);
    expect(Number(analyzed)).toBeLessThan(0); // never analyzed, as a queue just filled

    const before = await seqScans();
    for (let round = 0; round < 7; round++) {
      // 512: a batch size of the claim's ladder (postgres-claim-queries.ts), so the claim takes exactly that many.
      const { jobs } = await backend.jobs.claimReady({ owner: "w", limit: 512, now, leaseExpiresAt: now + 60_000, jobTypes: ["noop"] });
      expect(jobs).toHaveLength(512);
      const renewed = await backend.jobs.leaseRenew({ owner: "w", leaseExpiresAt: now + 120_000, claims: jobs.map((j) => ({ id: j.id, attempt: j.attempt })) });
      expect(renewed.renewed).toHaveLength(512);
      const finished = await backend.jobs.finishMany({
        now,
        retentionMs: 60_000,
        finishes: jobs.map((j) => ({ id: j.id, attempt: j.attempt, outcome: { kind: "success" } })),
      });
      expect(finished.applied).toHaveLength(512);
    }
    expect(await seqScans()).toBe(before);
    // The count is live: a sequential scan of the table shows in it.
    await pool.query(`SELECT count(*) FROM ${table}`);
    expect(await seqScans()).toBe(before + 1);
  });

  it("retained-log records up to about 8 KB stay in their row (PostgreSQL migration 10): nothing goes to the TOAST table", async () => {
    const db = await fresh();
    const log = await RetainedLog.open({
      backend: postgres({ connectionString: db.url, schema: db.schema }),
      topics: [logTopic("events", 2)],
      autoMigrate: true,
      retention: false,
    });
    try {
      // Random bytes (nothing to compress), 3,000 and 7,000 bytes: past the 2 KB where a row is toasted by default.
      const values = [3000, 7000].map((n) => Uint8Array.from({ length: n }, () => Math.floor(Math.random() * 256)));
      await log.appendMany(
        "events",
        values.map((value) => ({ partition: 1, value })),
      );
      const read = await log.read({ topic: "events", partition: 1, fromOffset: 0 });
      expect(read.map((r) => Buffer.from(r.value).equals(Buffer.from(values[r.offset]!)))).toEqual([true, true]);
      const sizes = await withClient(url!, async (c) => {
        const table = `${pg.escapeIdentifier(db.schema)}.later_log_records`;
        const r = await c.query(`SELECT pg_relation_size(reltoastrelid) AS toast, reloptions FROM pg_class WHERE oid = $1::regclass`, [table]);
        return r.rows[0] as { toast: string; reloptions: string[] };
      });
      expect(sizes.reloptions).toContain("toast_tuple_target=8160");
      expect(Number(sizes.toast)).toBe(0);
    } finally {
      await log.close();
    }
  });
});

/** A second database on the same server (created once), for the LISTEN fallback test. */
async function otherDatabase(base: string): Promise<string> {
  const name = "later_test_elsewhere";
  await withClient(base, async (c) => {
    const found = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (found.rowCount === 0)
      await c.query(`CREATE DATABASE ${name}`).catch((e: { code?: string }) => {
        if (e.code !== "42P04" && e.code !== "23505") throw e;
      });
  });
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}
