/**
 * Several processes, four workers each, on one database: SQLite, 3 processes
 * and 5,000 jobs on one file; PostgreSQL, 4 processes and 20,000 jobs. Every
 * job is run exactly once and stored `success`.
 */
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { prepareBackend } from "@later/runtime/internal";
import { allJobs, jobRows, openBackend, PROCESS_BACKENDS, useProcesses, waitFor } from "./helpers.js";

const SIZES = { sqlite: { children: 3, jobs: 5_000 }, postgres: { children: 4, jobs: 20_000 } } as const;
const NAMESPACE = "mp";

describe.each(PROCESS_BACKENDS)("several processes on one $name database", (entry) => {
  const processes = useProcesses();
  const { children: CHILDREN, jobs: JOBS } = SIZES[entry.name];

  it(`${CHILDREN} processes x 4 workers run ${JOBS} jobs exactly once`, async () => {
    const dir = processes.tempDir();
    const backend = await entry.create(processes);
    const parent = processes.track(openBackend(backend, NAMESPACE));
    await prepareBackend(parent, true);

    const logs = Array.from({ length: CHILDREN }, (_, i) => join(dir, `child-${i}.log`));
    const children = logs.map((logFile, i) => processes.spawnChild(`child-${i}`, { backend, namespace: NAMESPACE, workerCount: 4, logFile }));
    await Promise.all(children.map((c) => c.ready()));

    // One bulk insert, while all three are idle and waiting for work.
    const now = Date.now();
    const rows = jobRows(
      Array.from({ length: JOBS }, (_, i) => ({ n: i })),
      { now },
    );
    const { stages } = await parent.jobs.insertMany({ jobs: rows, now });
    expect(stages.every((s) => s === "enqueued")).toBe(true);

    const started = Date.now();
    await waitFor(
      async () => {
        for (const c of children) if (!c.alive) throw new Error(`${c.name} died: ${c.stderr.join("\n")}`);
        return (await parent.inspect.stageCounts()).counts.success === JOBS;
      },
      `all ${JOBS} jobs to succeed`,
      45_000,
      100,
    ); // a count over the whole table: not too often, it competes with the workers
    console.log(`${entry.name}: ${JOBS} jobs on ${CHILDREN} processes in ${Date.now() - started} ms (insert to last success seen)`);
    await Promise.all(children.map((c) => c.stop()));

    const perChild = logs.map((f) =>
      existsSync(f)
        ? readFileSync(f, "utf8")
            .split("\n")
            .filter((l) => l !== "")
        : [],
    );
    console.log(`jobs run per child: ${perChild.map((l) => l.length).join(", ")}`);
    const ran = perChild.flat();
    const expected = rows.map((r) => r.id).sort();
    // Exactly once: no id twice (within or across children), none missing, nothing foreign.
    expect(ran.length).toBe(JOBS);
    expect(new Set(ran).size).toBe(JOBS);
    expect([...ran].sort()).toEqual(expected);

    const { counts } = await parent.inspect.stageCounts();
    expect(counts).toMatchObject({ success: JOBS, enqueued: 0, running: 0, requeued: 0, failed: 0, delayed: 0 });
    const records = await allJobs(parent);
    expect(records.map((r) => r.id)).toEqual(expected);
    for (const r of records) {
      expect(r.stage).toBe("success");
      expect(r.attempt).toBe(1);
      expect(r.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "success"]);
      expect(r.leaseOwner).toBeNull();
    }
    for (const c of children) expect(c.errorLines()).toEqual([]);
  });
});
