// A server's retained-log topics (docs/semantics.md L1 `server.log`, L5 lag as a source) on every backend:
// `logTopics` registers the topics at start (a changed partition count refuses the start, nothing
// started); `server.log` appends, reads and consumes on the server's backend; `server.logLag()`
// reports each group's lag summed over the partitions, which the dashboard's badges and the
// `later_retained_log_consumer_lag` gauge read, for every log topic the database holds (a
// schema's `Logs` opened with openLogs included), with or without `logTopics`.
import { describe, expect, it } from "vitest";
import { logTopic, partitionForKey } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { openLogs } from "../codegen/schemas/events.generated.js";
import { BACKENDS } from "./backends.js";
import { codeOf, useHarness } from "./harness.js";
import { drive, POLL } from "./log-harness.js";

describe.each(BACKENDS)("server log topics on $name", (entry) => {
  const harness = useHarness(entry);

  it("L1/L5: server.log appends and consumes; logLag() is each group's lag over the topic", async () => {
    const h = harness();
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const server = await h.start({ handlers: {}, clock, logTopics: [logTopic("events", 4)] });
    expect(await server.logLag()).toEqual([]);
    await server.log.appendMany(
      "events",
      Array.from({ length: 10 }, (_, i) => ({ partition: i % 4, value: `r${i}` })),
    );
    await server.log.commitOffset({ topic: "events", group: "audit", partition: 0, epoch: 0, offset: 1 });
    expect(await server.logLag()).toEqual([{ topic: "events", group: "audit", lag: 9 }]);
    const seen: string[] = [];
    const consumer = await server.log.consume({
      topic: "events",
      group: "billing",
      pollIntervalMs: POLL,
      handler: (b) => {
        for (const r of b.records) seen.push(new TextDecoder().decode(r.value));
      },
    });
    await drive(clock, async () => (await server.logLag()).some((g) => g.group === "billing" && g.lag === 0));
    expect(seen.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `r${i}`).sort());
    expect(await server.logLag()).toEqual([
      { topic: "events", group: "audit", lag: 9 },
      { topic: "events", group: "billing", lag: 0 },
    ]);
    await consumer.stop();
    // The server's shutdown closes its log (and the backend once).
    await server.shutdown({ deadlineMs: 0 });
    expect(await codeOf(server.log.append("events", { partition: 0, value: "late" }))).toBe("SERVER_STOPPED");
  });

  it("L1: without logTopics, server.log is refused and logLag() is empty; a changed partition count refuses the start", async () => {
    const h = harness();
    const plain = await h.start({ handlers: {} });
    expect(await codeOf(() => plain.log)).toBe("INVALID_CONFIG");
    expect(await plain.logLag()).toEqual([]);
    await h.start({ handlers: {}, logTopics: [logTopic("events", 4)] });
    expect(await codeOf(h.start({ handlers: {}, logTopics: [logTopic("events", 8)] }))).toBe("PARTITION_COUNT_MISMATCH");
    expect(await codeOf(h.start({ handlers: {}, logTopics: "events" as never }))).toBe("INVALID_CONFIG");
  });

  it("L5: the lag and its gauge cover the schema's log topics (openLogs) without logTopics repeating their partition counts", async () => {
    const h = harness();
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const server = await h.start({ handlers: {}, clock });
    const logs = await openLogs({ backend: h.db.backend(), autoMigrate: true, clock, retention: false });
    try {
      const event = { customerId: "c-7", orderId: "o-1", kind: "placed" as const, at: new Date(0), lines: [] };
      for (let i = 0; i < 3; i++) await logs.orderEvents.append(event);
      const partition = partitionForKey("c-7", 8);
      await logs.orderEvents.commitOffset({ group: "mailer", partition, epoch: 0, offset: 1 });
      // Before, a server without logTopics reported [] and the gauge had no sample.
      expect(await server.logLag()).toEqual([{ topic: "orderEvents", group: "mailer", lag: 2 }]);
      // The gauge: read every 5 s of the manual clock.
      const sample = /^later_retained_log_consumer_lag\{[^}]*topic="orderEvents",group="mailer"\} 2$/m;
      await drive(clock, async () => sample.test(await server.metrics()), 1_000);
    } finally {
      await logs.close();
    }
  });
});
