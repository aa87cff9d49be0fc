// A server's retained-log topics (docs/semantics.md L1 `server.log`, L5 lag as a source) on every backend:
// `logTopics` registers the topics at start (a changed partition count refuses the start, nothing
// started); `server.log` appends, reads and consumes on the server's backend; `server.logLag()`
// reports each group's lag summed over the partitions, which the dashboard's badges and the
// `later_retained_log_consumer_lag` gauge read; a server without `logTopics` reports none.
import { describe, expect, it } from "vitest";
import { logTopic } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
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
});
