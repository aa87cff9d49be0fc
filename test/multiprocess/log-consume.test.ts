/**
 * Consumer groups across processes (issue 14 point 2, docs/semantics.md L3): three child processes
 * (log-consume-child.mjs) are members of one group on a topic of 8 partitions while this process
 * appends. One member is SIGKILLed inside a batch: after its lease expires (30 s, wall clock) its
 * partitions move to the others and resume from its last commit, so records after that commit are
 * handled again and none is skipped; each partition is handled in offset order by each member.
 * One member is SIGSTOPped inside a batch past its lease, then SIGCONTed: another took its
 * partitions, so its late commit is refused with STALE_EPOCH and the group's offsets never move back.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { logTopic, RetainedLog } from "@later/runtime";
import { prepareBackend } from "@later/runtime/internal";
import { openBackend, PROCESS_BACKENDS, useProcesses, waitFor } from "./helpers.js";

const SCRIPT = fileURLToPath(new URL("./log-consume-child.mjs", import.meta.url));
const NAMESPACE = "mp";
const PARTITIONS = 8;

/** `batch p first last epoch` lines of a child, parsed. */
function batches(lines: readonly string[]) {
  return lines
    .filter((l) => l.startsWith("batch "))
    .map((l) => {
      const [p, first, last] = l.split(" ").slice(1).map(Number);
      return { partition: p!, first: first!, last: last! };
    });
}

describe.each(PROCESS_BACKENDS)("consumer group of three processes on $name", (entry) => {
  const processes = useProcesses();

  it("a member SIGKILLed mid-batch: its partitions move after its lease and resume from its last commit; nothing is skipped", async () => {
    const spec = await entry.create(processes);
    const setup = openBackend(spec, NAMESPACE);
    await prepareBackend(setup, true);
    await setup.close();
    const log = await RetainedLog.open({ backend: processes.track(openBackend(spec, NAMESPACE)), topics: [logTopic("events", PARTITIONS)], retention: false });
    const append = (n: number) =>
      log.appendMany(
        "events",
        Array.from({ length: n * PARTITIONS }, (_, i) => ({ partition: i % PARTITIONS, value: `v${i}` })),
      );
    await append(10);
    const spawn = (name: string) => processes.spawnScript(name, SCRIPT, { backend: spec, namespace: NAMESPACE, name, batchDelayMs: name === "a" ? 1_000 : 20 });
    const ready = (c: ReturnType<typeof spawn>) => c.waitForLine((l) => l.startsWith("ready ") || l.startsWith("error "), "ready", 20_000);
    // "a" starts alone, so it holds every partition (whatever rendezvous gives it later) and commits a batch.
    const victim = spawn("a");
    await ready(victim);
    await waitFor(() => batches(victim.lines).length >= 2 || null, "a in its second batch", 30_000, 5);
    const survivors = [spawn("b"), spawn("c")];
    await Promise.all(survivors.map(ready));
    const children = [victim, ...survivors];
    for (const c of children) expect(c.lines.filter((l) => l.startsWith("error "))).toEqual([]);
    // Kill "a" inside a batch it starts from now on (a batch lasts 1 s).
    const before = batches(victim.lines).length;
    await waitFor(() => (batches(victim.lines).length > before && victim.lines.at(-1)!.startsWith("batch ")) || null, "a inside a batch", 30_000, 5);
    await victim.kill();
    const killedIn = batches(victim.lines).at(-1)!;
    await append(10);
    const total = 20;
    // Every partition fully committed by the survivors (after a's 30 s lease).
    await waitFor(
      async () => (await log.lag({ topic: "events", group: "g" })).every((l) => l.lag === 0 && l.endOffset === total) || null,
      "every partition committed",
      90_000,
      100,
    );
    const handled = new Map<number, number[]>();
    for (const c of children) {
      const last = new Map<number, number>();
      for (const b of batches(c.lines)) {
        // Each member reads a partition in offset order: a batch starts right after the one before, or back at a commit.
        const prev = last.get(b.partition);
        if (prev !== undefined) expect(b.first, `${c.name} partition ${b.partition}`).toBeLessThanOrEqual(prev + 1);
        last.set(b.partition, b.last);
        for (let o = b.first; o <= b.last; o++) handled.set(b.partition, [...(handled.get(b.partition) ?? []), o]);
      }
    }
    for (let p = 0; p < PARTITIONS; p++) {
      const offsets = handled.get(p) ?? [];
      expect(new Set(offsets), `partition ${p}`).toEqual(new Set(Array.from({ length: total }, (_, i) => i)));
    }
    // The batch a was killed in was not committed: a survivor handled it again from a's last commit.
    const redo = survivors.flatMap((c) => batches(c.lines)).filter((b) => b.partition === killedIn.partition && b.first <= killedIn.first);
    expect(redo.length).toBeGreaterThan(0);
    for (const c of survivors) expect(c.errorEvents().filter((e) => e.code !== "STALE_EPOCH")).toEqual([]);
    await Promise.all(survivors.map((c) => c.stop()));
  }, 180_000);

  it("a member SIGSTOPped past its lease and SIGCONTed: its late commit is STALE_EPOCH; offsets never move back", async () => {
    const spec = await entry.create(processes);
    const setup = openBackend(spec, NAMESPACE);
    await prepareBackend(setup, true);
    await setup.close();
    const log = await RetainedLog.open({ backend: processes.track(openBackend(spec, NAMESPACE)), topics: [logTopic("events", PARTITIONS)], retention: false });
    await log.appendMany(
      "events",
      Array.from({ length: 4 * PARTITIONS }, (_, i) => ({ partition: i % PARTITIONS, value: `v${i}` })),
    );
    const ready = (c: { waitForLine: (t: (l: string) => boolean, what: string, ms: number) => Promise<string> }) =>
      c.waitForLine((l) => l.startsWith("ready ") || l.startsWith("error "), "ready", 20_000);
    const a = processes.spawnScript("a", SCRIPT, { backend: spec, namespace: NAMESPACE, name: "a", batchDelayMs: 2_000 });
    await ready(a);
    await waitFor(() => a.lines.some((l) => l.startsWith("batch ")) || null, "a inside its first batch", 30_000, 5);
    a.proc.kill("SIGSTOP");
    const stalled = batches(a.lines).at(-1)!;
    try {
      const b = processes.spawnScript("b", SCRIPT, { backend: spec, namespace: NAMESPACE, name: "b", batchDelayMs: 20 });
      await ready(b);
      const done = async () => (await log.lag({ topic: "events", group: "g" })).every((l) => l.lag === 0) || null;
      await waitFor(done, "b committed every partition (after a's lease)", 90_000, 100);
      const committed = await log.committed({ topic: "events", group: "g" });
      expect(committed).toEqual(Array.from({ length: PARTITIONS }, (_, p) => ({ partition: p, offset: 4 })));
      a.proc.kill("SIGCONT");
      await a.waitForLine((l) => l.startsWith("event-error STALE_EPOCH log commit"), "a's late commit refused", 30_000);
      expect(a.lines).toContain(`done ${stalled.partition} ${stalled.last}`);
      expect(await log.committed({ topic: "events", group: "g" })).toEqual(committed);
      expect(batches(b.lines).some((x) => x.partition === stalled.partition && x.first === 0)).toBe(true);
      await b.stop();
    } finally {
      if (a.alive) a.proc.kill("SIGCONT");
    }
  }, 180_000);
});
