/**
 * Dense retained-log offsets across processes (docs/semantics.md L1): three child
 * processes (log-append-child.mjs) append to one partition at once, each
 * also appending records in transactions it rolls back. The partition then
 * holds exactly offsets 0..N−1, with no gap, no duplicate, and no rolled-back
 * record; each process's records are in the order it appended them.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { logTopic, RetainedLog, type LogRecord } from "@later/runtime";
import { prepareBackend } from "@later/runtime/internal";
import { openBackend, PROCESS_BACKENDS, useProcesses } from "./helpers.js";

const SCRIPT = fileURLToPath(new URL("./log-append-child.mjs", import.meta.url));
const NAMESPACE = "mp";
const PER_CHILD = 150;
const ROLLBACK_EVERY = 10;

describe.each(PROCESS_BACKENDS)("retained log appends from three processes on $name", (entry) => {
  const processes = useProcesses();

  it("offsets of one partition are 0..N−1 exactly; rolled-back appendIn records use up no offset", async () => {
    const spec = await entry.create(processes);
    // Migrate once here, so the children only open.
    const setup = openBackend(spec, NAMESPACE);
    await prepareBackend(setup, true);
    await setup.close();
    const children = ["a", "b", "c"].map((name) =>
      processes.spawnScript(name, SCRIPT, { backend: spec, namespace: NAMESPACE, name, count: PER_CHILD, rollbackEvery: ROLLBACK_EVERY, children: 3 }),
    );
    await Promise.all(children.map((c) => c.waitForLine((l) => l === "ready" || l.startsWith("error "), "ready", 20_000)));
    for (const c of children) expect(c.lines.filter((l) => l.startsWith("error "))).toEqual([]);
    for (const c of children) c.proc.stdin!.write("go\n");
    const ends = await Promise.all(children.map((c) => c.waitForLine((l) => l.startsWith("done ") || l.startsWith("error "), "done", 60_000)));
    expect(ends).toEqual(children.map(() => `done ${PER_CHILD}`));

    const log = await RetainedLog.open({ backend: processes.track(openBackend(spec, NAMESPACE)), topics: [logTopic("events", 2)] });
    try {
      const total = 3 * PER_CHILD;
      const records: LogRecord[] = [];
      while (records.length < total + 1) {
        const page = await log.read({ topic: "events", partition: 0, fromOffset: records.length, limit: 1_000 });
        if (page.length === 0) break;
        records.push(...page);
      }
      expect(records.map((r) => r.offset)).toEqual(Array.from({ length: total }, (_, i) => i));
      const values = records.map((r) => new TextDecoder().decode(r.value));
      expect(values.filter((v) => v === "rolled-back")).toEqual([]);
      for (const name of ["a", "b", "c"]) {
        expect(values.filter((v) => v.startsWith(`${name}-`))).toEqual(Array.from({ length: PER_CHILD }, (_, i) => `${name}-${i}`));
      }
      // The appends overlapped (each child waited for the others' first record): the three first
      // records are of three children, and each child still had records to append after them.
      expect(new Set(values.slice(0, 3).map((v) => v[0])).size).toBe(3);
      const switches = values.filter((v, i) => i > 0 && v[0] !== values[i - 1]![0]).length;
      expect(switches).toBeGreaterThanOrEqual(4);
      expect((await log.lag({ topic: "events", group: "check" }))[0]).toEqual({ partition: 0, endOffset: total, committedOffset: 0, lag: total });
    } finally {
      await log.close();
    }
  });
});
