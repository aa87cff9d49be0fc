/**
 * X1 and X2 across processes (priority-unique-child.mjs), on each backend:
 * - three processes enqueue jobs of mixed priorities while claiming: each
 *   claim's jobs come out lowest priority first (then oldest), and no claim
 *   passed over a job of a lower priority number that was committed before
 *   it started and that no claim running at the same time took;
 * - three processes enqueue the same unique key at once (keep): one job is
 *   stored, and every enqueue resolves to its id.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { prepareBackend } from "@later/runtime/internal";
import { allJobs, type Child, openBackend, PROCESS_BACKENDS, useProcesses } from "./helpers.js";

const SCRIPT = fileURLToPath(new URL("./priority-unique-child.mjs", import.meta.url));
const NAMESPACE = "mp";

describe.each(PROCESS_BACKENDS)("priority and unique keys from three processes on $name", (entry) => {
  const processes = useProcesses();

  /** Migrates, starts the three children with `extra` config, lets them go together; resolves once all printed `done`. */
  async function runChildren(extra: Record<string, unknown>): Promise<{ children: Child[]; spec: Awaited<ReturnType<typeof entry.create>> }> {
    const spec = await entry.create(processes);
    const setup = openBackend(spec, NAMESPACE);
    await prepareBackend(setup, true);
    await setup.close();
    const children = ["a", "b", "c"].map((name) => processes.spawnScript(name, SCRIPT, { backend: spec, namespace: NAMESPACE, name, ...extra }));
    await Promise.all(children.map((c) => c.waitForLine((l) => l === "ready" || l.startsWith("error "), "ready", 20_000)));
    for (const c of children) c.proc.stdin!.write("go\n");
    await Promise.all(children.map((c) => c.waitForLine((l) => l === "done" || l.startsWith("error "), "done", 60_000)));
    for (const c of children) expect(c.lines.filter((l) => l.startsWith("error "))).toEqual([]);
    return { children, spec };
  }

  it("X1: claims come out in priority order within what was ready, while three processes enqueue and claim", async () => {
    const { children } = await runChildren({ mode: "mixed", rounds: 25 });
    const enqueued = new Map<string, { priority: number; at: number }>();
    const claims: { start: number; end: number; ids: string[] }[] = [];
    for (const c of children) {
      for (const line of c.lines) {
        const [kind, a, b, d] = line.split(" ");
        if (kind === "enq") enqueued.set(a!, { priority: Number(b), at: Number(d) });
        if (kind === "claim") claims.push({ start: Number(a), end: Number(b), ids: d ? d.split(",") : [] });
      }
    }
    expect(enqueued.size).toBe(3 * 25 * 4);
    const claimedAt = new Map<string, number>();
    for (const claim of claims) for (const id of claim.ids) claimedAt.set(id, claim.start);
    expect(claimedAt.size).toBe(claims.reduce((n, c) => n + c.ids.length, 0)); // no job claimed twice
    let checked = 0;
    for (const claim of claims) {
      const priorities = claim.ids.map((id) => enqueued.get(id)!.priority);
      expect(priorities).toEqual([...priorities].sort((x, y) => x - y));
      if (priorities.length === 0) continue;
      const worst = Math.max(...priorities);
      // Committed before this claim started, taken by no claim that started before this one ended: it was ready and unlocked throughout.
      const passedOver = [...enqueued].filter(
        ([id, e]) => e.at < claim.start && (claimedAt.get(id) ?? Number.POSITIVE_INFINITY) > claim.end && e.priority < worst,
      );
      expect(passedOver, `claim at ${claim.start} took priority ${worst}`).toEqual([]);
      checked++;
    }
    expect(checked).toBeGreaterThan(30);
  });

  it("X2 keep: three processes enqueuing one key at once store one job; every enqueue resolves to its id", async () => {
    const { children, spec } = await runChildren({ mode: "unique", rounds: 10, key: "same" });
    const results = children.flatMap((c) => c.lines.filter((l) => l.startsWith("unique ")).map((l) => l.split(" ")));
    expect(results).toHaveLength(30);
    expect(new Set(results.map((r) => r[1])).size).toBe(1);
    expect(results.filter((r) => r[2] === "inserted")).toHaveLength(1);
    const backend = processes.track(openBackend(spec, NAMESPACE));
    await backend.open();
    const jobs = await allJobs(backend);
    expect(jobs.map((j) => [j.id, j.uniqueKey, j.uniqueSlot])).toEqual([[results[0]![1], "same", "pending"]]);
  });
});
