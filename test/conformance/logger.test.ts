// The `logger` option of servers, publishers and retained logs: a pino-style object receives
// start and stop at info, errors with their code at error, and per-job stage changes at debug only
// (and none at all when its debug level is off); a logger without the four methods is
// INVALID_CONFIG. And a SQLite file that does not exist, opened without autoMigrate, is
// DATABASE_NOT_FOUND and is not created.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { BackgroundJobServer, type LaterError, RetainedLog, logTopic, type LaterLogger } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { sqlite } from "@later/runtime/sqlite";
import { openJobsPublisher, openLogs } from "../codegen/schemas/events.generated.js";
import { BACKENDS, withDatabase } from "./backends.js";
import { waitFor } from "./harness.js";

interface Entry {
  level: string;
  fields: Record<string, unknown>;
  message: string;
}

/** A pino-like logger that keeps its entries; `debug: false` answers isLevelEnabled("debug") with false. */
function recordingLogger(debug = true): LaterLogger & { entries: Entry[] } {
  const entries: Entry[] = [];
  const at = (level: string) => (fields: object, message: string) => void entries.push({ level, fields: fields as Record<string, unknown>, message });
  return { entries, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), isLevelEnabled: (level) => level !== "debug" || debug };
}

/** A server of one no-op type `a` on `backend`, logging to `logger`. */
function startLogged(backend: Backend, logger: LaterLogger) {
  return BackgroundJobServer.start({ context: {}, backend, autoMigrate: true, pollIntervalMs: 20, logger, handlers: { a: { handle: () => undefined } } });
}

describe.each(BACKENDS)("logger on $name", (entry) => {
  it("a server logs start and stop at info, errors with their code at error, job stages at debug only", async () => {
    await withDatabase(entry, async (db) => {
      const logger = recordingLogger();
      const backend = db.backend();
      const server = await startLogged(backend, logger);
      const id = await server.publisher.enqueue("a", {});
      await waitFor(() => logger.entries.some((e) => e.fields.jobId === id && e.fields.stage === "success"), "the job's success logged");
      expect(logger.entries.find((e) => e.fields.event === "lifecycle")).toMatchObject({
        level: "info",
        fields: { component: "server", action: "started", instanceId: server.instanceId },
      });
      expect(logger.entries.filter((e) => e.fields.event === "job").every((e) => e.level === "debug")).toBe(true);
      // The database closed under the server: its loops fail, each failure an error entry with its code.
      await backend.close();
      await waitFor(() => logger.entries.find((e) => e.level === "error"), "an error entry");
      const error = logger.entries.find((e) => e.level === "error")!;
      expect(error.fields).toMatchObject({ event: "error", code: "DATABASE_UNAVAILABLE" });
      expect(typeof error.fields.where).toBe("string");
      expect(error.message).toMatch(/not open/);
      await server.shutdown({ deadlineMs: 0 });
      expect(logger.entries.at(-1)).toMatchObject({ level: "info", fields: { event: "lifecycle", component: "server", action: "stopped" } });
    });
  });

  it("pino itself as the logger: its JSON lines carry the event's fields and message at the event's level; job stages only at debug", async () => {
    await withDatabase(entry, async (db) => {
      const lines: Record<string, unknown>[] = [];
      const sink = new Writable({
        write(chunk, _encoding, done) {
          for (const line of String(chunk).split("\n")) if (line !== "") lines.push(JSON.parse(line));
          done();
        },
      });
      const backend = db.backend();
      const server = await startLogged(backend, pino({ level: "info" }, sink));
      const id = await server.publisher.enqueue("a", {});
      await waitFor(async () => (await backend.inspect.jobGet({ id }))?.stage === "success", "the job done");
      await backend.close();
      await waitFor(() => lines.some((l) => l.level === 50), "an error line");
      await server.shutdown({ deadlineMs: 0 });
      // pino's levels: 30 info, 50 error. The server's start and stop at info, with the event's fields.
      expect(lines.find((l) => l.event === "lifecycle")).toMatchObject({ level: 30, component: "server", action: "started", instanceId: server.instanceId });
      expect(lines.at(-1)).toMatchObject({ level: 30, event: "lifecycle", action: "stopped" });
      const error = lines.find((l) => l.level === 50)!;
      expect(error).toMatchObject({ event: "error", code: "DATABASE_UNAVAILABLE" });
      expect(String(error.msg)).toMatch(/not open/);
      // At level info nothing per job: the job's stage changes are debug entries.
      expect(lines.filter((l) => l.event === "job")).toEqual([]);
    });
  });

  it("with the logger's debug level off, no job entry is built; a publisher and a log log their open and close", async () => {
    await withDatabase(entry, async (db) => {
      const logger = recordingLogger(false);
      const backend = db.backend();
      const server = await startLogged(backend, logger);
      const id = await server.publisher.enqueue("a", {});
      await waitFor(async () => (await backend.inspect.jobGet({ id }))?.stage === "success", "the job done");
      await server.shutdown();
      expect(logger.entries.filter((e) => e.fields.event === "job")).toEqual([]);

      const quiet = recordingLogger();
      const publisher = await openJobsPublisher({ backend: db.backend(), logger: quiet });
      const logs = await openLogs({ backend: db.backend(), logger: quiet });
      await publisher.close();
      await logs.close();
      expect(quiet.entries.map((e) => `${e.level} ${e.message}`)).toEqual([
        "info publisher started",
        "info retained-log started",
        "info publisher stopped",
        "info retained-log stopped",
      ]);
    });
  });

  it("a logger without debug/info/warn/error is INVALID_CONFIG on servers, publishers and logs", async () => {
    await withDatabase(entry, async (db) => {
      const bad = { info: () => undefined, warn: () => undefined } as unknown as LaterLogger;
      const code = async (p: Promise<unknown>) =>
        (
          (await p.then(
            () => null,
            (e: unknown) => e,
          )) as LaterError | null
        )?.code;
      const backend = db.backend();
      expect(await code(BackgroundJobServer.start({ context: {}, backend, handlers: {}, logger: bad }))).toBe("INVALID_CONFIG");
      expect(await code(BackgroundJobServer.start({ context: {}, backend, handlers: {}, logger: "console" as never }))).toBe("INVALID_CONFIG");
      expect(await code(openJobsPublisher({ backend, logger: bad }))).toBe("INVALID_CONFIG");
      expect(await code(openLogs({ backend, logger: bad }))).toBe("INVALID_CONFIG");
      expect(await code(RetainedLog.open({ backend, topics: [logTopic("t", 1)], logger: bad }))).toBe("INVALID_CONFIG");
      const error = await BackgroundJobServer.start({ context: {}, backend, handlers: {}, logger: bad }).catch((e: Error) => e);
      expect((error as Error).message).toMatch(/`logger` must be an object with debug, info, warn and error methods .*without debug, error/);
    });
  });
});

describe("a SQLite file that does not exist", () => {
  it("is DATABASE_NOT_FOUND for a server, a publisher and a log without autoMigrate, and is not created; autoMigrate creates it", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "later-missing-")), "missing.db");
    const refusal = async (p: Promise<unknown>) =>
      (await p.then(
        () => null,
        (e: unknown) => e,
      )) as LaterError;
    for (const p of [
      BackgroundJobServer.start({ context: {}, backend: sqlite({ file }), handlers: {} }),
      openJobsPublisher({ backend: sqlite({ file }) }),
      openLogs({ backend: sqlite({ file }) }),
    ]) {
      const error = await refusal(p);
      expect(error.code).toBe("DATABASE_NOT_FOUND");
      expect(error.message).toBe(
        `SQLite database ${file} does not exist (nothing was created): create it with \`later migrate up --database sqlite:${file}\`, or pass autoMigrate: true; check the path (relative paths start at the working directory)`,
      );
      expect(existsSync(file)).toBe(false);
    }
    const publisher = await openJobsPublisher({ backend: sqlite({ file }), autoMigrate: true });
    await publisher.close();
    expect(existsSync(file)).toBe(true);
  });
});
