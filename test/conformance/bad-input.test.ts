import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { BackgroundJobServer, type LaterError, RetryPolicy } from "@later/runtime";
import { sqlite } from "@later/runtime/sqlite";
import { BACKENDS } from "./backends.js";
import { codeOf, useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("bad input on $name", (entry) => {
  const harness = useHarness(entry);

  it("invalid options are refused at start with INVALID_CONFIG", async () => {
    const db = await entry.createDatabase();
    const base = { context: {}, backend: db.backend(), handlers: { a: { handle: () => undefined } } };
    expect(await codeOf(BackgroundJobServer.start({ ...base, workerCount: 0 }))).toBe("INVALID_CONFIG");
    expect(await codeOf(BackgroundJobServer.start({ ...base, workerCount: 1.5 }))).toBe("INVALID_CONFIG");
    expect(await codeOf(BackgroundJobServer.start({ ...base, workerCuont: 3 } as never))).toBe("INVALID_CONFIG");
    expect(await codeOf(BackgroundJobServer.start({ ...base, workerAutoscale: { min: 3, max: 1 } }))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => RetryPolicy.fixed(-1, 0))).toBe("INVALID_CONFIG");
    expect(await codeOf(() => sqlite({ file: "x.db", nope: true } as never))).toBe("INVALID_CONFIG");
    await db.dispose();
  });

  it("bad enqueue input gets INVALID_ARGUMENT and writes nothing", async () => {
    const h = harness();
    const server = await h.start({ handlers: { a: { handle: () => undefined } } });
    const before = await server.backend.inspect.stageCounts();
    expect(await codeOf(server.publisher.enqueue("a", {}, { delayMs: -1 }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.publisher.enqueue("a", {}, { delayMs: Number.NaN }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.publisher.enqueue("a", {}, { runAt: new Date("nope") }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.publisher.enqueue("undeclared", {}))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.publisher.enqueue("a", { n: 1n }))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.publisher.enqueue("a", undefined))).toBe("INVALID_ARGUMENT");
    expect(await server.backend.inspect.stageCounts()).toEqual(before);
  });

  it("enqueue and scaling after shutdown get SERVER_STOPPED", async () => {
    const h = harness();
    const server = await h.start({ handlers: { a: { handle: () => undefined } } });
    await server.shutdown();
    expect(await codeOf(server.publisher.enqueue("a", {}))).toBe("SERVER_STOPPED");
    expect(await codeOf(() => server.addWorker())).toBe("SERVER_STOPPED");
  });

  it("a handler that throws a non-Error is retried with a readable reason; the worker goes on", async () => {
    const h = harness();
    const thrown: unknown[] = ["plain string", { code: 7 }, undefined, null, 42];
    const server = await h.start({
      workerCount: 1,
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: {
        odd: {
          handle: (_c, p) => {
            throw thrown[(p as { i: number }).i];
          },
        },
        fine: { handle: () => undefined },
      },
    });
    const ids = await server.publisher.enqueueMany(
      "odd",
      thrown.map((_, i) => ({ i })),
    );
    const fine = await server.publisher.enqueue("fine", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: fine }))?.stage === "success", "worker still runs");
    const reasons = await Promise.all(
      ids.map(async (id) => {
        const j = await waitFor(async () => {
          const r = await server.backend.inspect.jobGet({ id });
          return r?.stage === "failed" ? r : null;
        }, "failed");
        return j.lastError;
      }),
    );
    expect(reasons).toEqual(["plain string", 'handler threw {"code":7}', "handler threw undefined", "handler threw null", "handler threw 42"]);
  });
});

describe.each(BACKENDS)("misbehaving options on $name", (entry) => {
  const harness = useHarness(entry);

  it("a retry option that returns no RetryPolicy falls back to the server default and says so", async () => {
    const h = harness();
    const server = await h.start({
      defaultRetryPolicy: RetryPolicy.noRetries(),
      handlers: {
        bad: {
          handle: () => {
            throw new Error("nope");
          },
          retry: (() => undefined) as never,
        },
        fine: { handle: () => undefined },
      },
    });
    const id = await server.publisher.enqueue("bad", {});
    const job = await waitFor(async () => {
      const j = await server.backend.inspect.jobGet({ id });
      return j?.stage === "failed" ? j : null;
    }, "failed");
    expect(job.lastError).toMatch(/nope \(retry policy unavailable: .*not a RetryPolicy\)/);
    const fine = await server.publisher.enqueue("fine", {});
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: fine }))?.stage === "success", "worker still runs");
  });
});

describe("schema and database checks (SQLite)", () => {
  const fresh = () => join(mkdtempSync(join(tmpdir(), "later-schema-")), "jobs.db");
  const handlers = { a: { handle: () => undefined } };

  it("an unwritable database path is DATABASE_UNAVAILABLE", async () => {
    expect(await codeOf(BackgroundJobServer.start({ context: {}, handlers, backend: sqlite({ file: "/nonexistent/dir/jobs.db" }), autoMigrate: true }))).toBe(
      "DATABASE_UNAVAILABLE",
    );
  });

  it("a schema that is behind refuses to start and says what to run, unless autoMigrate", async () => {
    const file = fresh();
    // A file that does not exist is not created without autoMigrate (DATABASE_NOT_FOUND); an empty one is a schema behind.
    expect(await codeOf(BackgroundJobServer.start({ context: {}, handlers, backend: sqlite({ file }) }))).toBe("DATABASE_NOT_FOUND");
    new Database(file).close();
    const err = await BackgroundJobServer.start({ context: {}, handlers, backend: sqlite({ file }) }).catch((e: unknown) => e as LaterError);
    expect((err as LaterError).code).toBe("SCHEMA_VERSION_MISMATCH");
    expect((err as Error).message).toContain(`later migrate up --database sqlite:${file}`);
    const server = await BackgroundJobServer.start({ context: {}, handlers, backend: sqlite({ file }), autoMigrate: true });
    await server.shutdown();
    const again = await BackgroundJobServer.start({ context: {}, handlers, backend: sqlite({ file }) });
    await again.shutdown();
  });

  it("a schema that is ahead refuses to start, even with autoMigrate", async () => {
    const file = fresh();
    const b = sqlite({ file });
    await b.open();
    const up = await b.migrations.up();
    expect(up.applied.length).toBeGreaterThan(0);
    expect((await b.migrations.up()).applied).toEqual([]);
    await b.close();
    const db = new Database(file);
    db.prepare("INSERT INTO later_migrations (version, name, applied_at) VALUES (999, 'future', 0)").run();
    db.close();
    const err = await BackgroundJobServer.start({ context: {}, handlers, backend: sqlite({ file }), autoMigrate: true }).catch((e: unknown) => e as LaterError);
    expect((err as LaterError).code).toBe("SCHEMA_VERSION_MISMATCH");
    expect((err as Error).message).toMatch(/ahead/);
  });

  it("migration status lists applied and pending migrations", async () => {
    const b = sqlite({ file: fresh() });
    await b.open();
    const before = await b.migrations.status();
    expect(before.current).toBe(0);
    // Every migration, 1 to the latest, ascending (a version number may be skipped on a branch).
    expect(before.pending[0]?.version).toBe(1);
    expect(before.pending.at(-1)?.version).toBe(before.latest);
    await b.migrations.up();
    const after = await b.migrations.status();
    expect(after.current).toBe(after.latest);
    expect(after.pending).toEqual([]);
    await b.close();
  });
});
