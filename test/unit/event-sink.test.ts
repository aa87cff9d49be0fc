/**
 * The `logger` option (issue 29, point 3): what used to reach only
 * `onEvent` reaches the logger at its level, pino's `(fields, message)`:
 * start and stop at info, errors with their code at error, rescues and
 * lease losses at warn, partition moves at info, job stages at debug; a
 * logger that throws never reaches the caller.
 */
import { describe, expect, it } from "vitest";
import { eventSink } from "../../packages/runtime/src/events/event-sink.js";
import type { ServerEvent } from "../../packages/runtime/src/events/server-event.js";

/** A pino-shaped logger recording `[level, fields, message]`. */
function recorder(): { logger: Record<"debug" | "info" | "warn" | "error", (f: object, m: string) => void>; lines: [string, object, string][] } {
  const lines: [string, object, string][] = [];
  const at = (level: string) => (fields: object, message: string) => void lines.push([level, fields, message]);
  return { logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }, lines };
}

describe("eventSink with a logger", () => {
  it("logs each kind of event at its level, with the event's fields and code", () => {
    const { logger, lines } = recorder();
    const sink = eventSink(undefined, logger);
    const events: ServerEvent[] = [
      { type: "lifecycle", component: "server", action: "started", instanceId: "i1" },
      { type: "maintenance", task: "rescue-stuck", count: 2 },
      { type: "maintenance", task: "rescue-head", count: 1 },
      { type: "job-lease-lost", jobId: "j1", jobType: "a", attempt: 1, reason: "lease lost" },
      { type: "job-skipped", jobId: "j2", jobType: "a", attempt: 1, reason: "lease expired before start" },
      { type: "job-released", jobId: "j4", jobType: "a", attempt: 1, reason: "shutdown deadline" },
      { type: "partitions", owned: 3, gained: 1, lost: 2, members: 2 },
      { type: "error", where: "claim", error: "connection refused", code: "DATABASE_UNAVAILABLE" },
      { type: "job", jobId: "j3", jobType: "a", stage: "success", attempt: 1 },
      { type: "maintenance", task: "retention", count: 5 },
      { type: "lifecycle", component: "server", action: "stopped", instanceId: "i1" },
    ];
    for (const e of events) sink.emit(e);
    expect(lines.map(([level, fields]) => [level, (fields as { event: string }).event])).toEqual([
      ["info", "lifecycle"],
      ["warn", "maintenance"],
      ["warn", "maintenance"],
      ["warn", "job-lease-lost"],
      ["warn", "job-skipped"],
      ["warn", "job-released"],
      ["info", "partitions"],
      ["error", "error"],
      ["debug", "job"],
      ["debug", "maintenance"],
      ["info", "lifecycle"],
    ]);
    expect(lines[3]![1]).toMatchObject({ jobId: "j1", reason: "lease lost" });
    expect(lines[3]![2]).toBe("job j1 (a) attempt 1 lost its lease: lease lost");
    expect(lines[6]![2]).toBe("partition ownership moved: 3 owned (1 gained, 2 lost) among 2 servers");
    expect(lines[7]![1]).toMatchObject({ code: "DATABASE_UNAVAILABLE", where: "claim" });
    expect(sink.eventsEnabled).toBe(true); // no isLevelEnabled: debug counts as on
  });

  it("a logger that throws never reaches the emitter; with debug off per-job events are not built", () => {
    const throwing = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, isLevelEnabled: (l: string) => l !== "debug" };
    throwing.error = () => {
      throw new Error("logger broken");
    };
    const sink = eventSink(undefined, throwing);
    expect(() => sink.emit({ type: "error", where: "claim", error: "x" })).not.toThrow();
    expect(sink.eventsEnabled).toBe(false);
  });
});
