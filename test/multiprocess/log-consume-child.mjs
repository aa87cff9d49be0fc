// One member of consumer group "g" on topic "events" (8 partitions), in its own process, for log-consume.test.ts.
//
// argv[2] is a JSON config: { backend, namespace, name, batchDelayMs }. Prints `ready <memberId>` once
// its member is registered; for every batch, `batch <partition> <firstOffset> <lastOffset> <epoch>`
// when the handler starts, then after `batchDelayMs` (a batch that takes time, so a SIGKILL can land
// inside one) `done <partition> <lastOffset>`; the commit follows. `event-error <code> <where>: <error>`
// for runtime error events. On `stop` (stdin) it stops the member, closes and exits.
import { createInterface } from "node:readline";
import { setTimeout as wait } from "node:timers/promises";
import { logTopic, RetainedLog } from "@later/runtime";
import { childBackend } from "./child-backend.mjs";

const config = JSON.parse(process.argv[2]);
const say = (line) => process.stdout.write(`${line}\n`);
const backend = childBackend(config);

try {
  const log = await RetainedLog.open({
    backend,
    topics: [logTopic("events", 8)],
    retention: false,
    onEvent: (e) => {
      if (e.type === "error") say(`event-error ${e.code ?? "-"} ${e.where}: ${e.error}`);
    },
  });
  const consumer = await log.consume({
    topic: "events",
    group: "g",
    maxBatch: 5,
    pollIntervalMs: 50,
    handler: async ({ partition, records, epoch }) => {
      say(`batch ${partition} ${records[0].offset} ${records.at(-1).offset} ${epoch}`);
      await wait(config.batchDelayMs);
      say(`done ${partition} ${records.at(-1).offset}`);
    },
  });
  say(`ready ${consumer.memberId}`);
  createInterface({ input: process.stdin }).on("line", async (line) => {
    if (line !== "stop") return;
    await log.close();
    process.exit(0);
  });
} catch (error) {
  say(`error ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
