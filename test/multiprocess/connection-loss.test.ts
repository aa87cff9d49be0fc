/**
 * PostgreSQL connection loss: while three worker processes run jobs, every
 * database connection they hold (pool connections and LISTEN connections)
 * is terminated with `pg_terminate_backend`, four times. The servers
 * reconnect by themselves and keep running; no job is lost and none runs
 * twice. The test's own connections are spared (they carry another
 * `application_name`).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { prepareBackend } from "@later/runtime/internal";
import { withClient } from "../support/postgres.js";
import { allJobs, childApplicationName, jobRows, openBackend, POSTGRES_PROCESS_BACKEND, useProcesses, waitFor } from "./helpers.js";

const JOBS = 6_000;
const CHILDREN = 3;
const NAMESPACE = "mp";
const SERVER = { leaseMs: 3_000, stuckGraceMs: 1_000, rescueIntervalMs: 500, pollIntervalMs: 200 };

describe.skipIf(POSTGRES_PROCESS_BACKEND === null)("PostgreSQL connections killed under load", () => {
  const processes = useProcesses();

  it(`${CHILDREN} processes reconnect after pg_terminate_backend of all their connections and run ${JOBS} jobs exactly once`, async () => {
    const backend = await POSTGRES_PROCESS_BACKEND!.create(processes);
    if (backend.kind !== "postgres") throw new Error("unreachable");
    const parent = processes.track(openBackend(backend, NAMESPACE));
    await prepareBackend(parent, true);
    const dir = processes.tempDir();
    const logs = Array.from({ length: CHILDREN }, (_, i) => join(dir, `child-${i}.log`));
    const children = logs.map((logFile, i) =>
      processes.spawnChild(`child-${i}`, {
        backend,
        namespace: NAMESPACE,
        workerCount: 4,
        logFile,
        handlerDelayMs: 1,
        server: SERVER,
      }),
    );
    await Promise.all(children.map((c) => c.ready()));

    const now = Date.now();
    const rows = jobRows(
      Array.from({ length: JOBS }, (_, i) => ({ n: i })),
      { now },
    );
    await parent.jobs.insertMany({ jobs: rows, now });

    const applicationName = childApplicationName(backend);
    const succeeded = async () => (await parent.inspect.stageCounts()).counts.success;
    const killed: { atSuccess: number; connections: number }[] = [];
    for (const fraction of [0.2, 0.4, 0.6, 0.8]) {
      const at = await waitFor(
        async () => {
          const n = await succeeded();
          return n >= JOBS * fraction ? n : 0;
        },
        `${fraction * 100}% of the jobs`,
        30_000,
        20,
      );
      const connections = await withClient(backend.connectionString, async (c) =>
        Number(
          (
            await c.query("SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()", [
              applicationName,
            ])
          ).rows[0].n,
        ),
      );
      killed.push({ atSuccess: at, connections });
    }
    await waitFor(
      async () => {
        for (const c of children) if (!c.alive) throw new Error(`${c.name} died: ${c.stderr.join("\n")}`);
        return (await succeeded()) === JOBS;
      },
      `all ${JOBS} jobs to succeed after the kills`,
      45_000,
      100,
    );
    for (const c of children) expect(c.alive).toBe(true);
    await Promise.all(children.map((c) => c.stop()));
    console.log(`connections terminated: ${killed.map((k) => `${k.connections} at ${k.atSuccess} done`).join(", ")}`);
    const errors = children.flatMap((c) => c.errorLines());
    const where = [...new Set(children.flatMap((c) => c.errorEvents()).map((e) => `${e.where} (${e.code ?? "no code"})`))].join(", ");
    console.log(
      `error events the children reported (and recovered from): ${children.map((c) => c.errorLines().length).join(", ")} (in: ${where}); first: ${errors[0] ?? "none"}`,
    );

    expect(killed.every((k) => k.connections > 0)).toBe(true);
    const ran = logs.flatMap((f) =>
      existsSync(f)
        ? readFileSync(f, "utf8")
            .split("\n")
            .filter((l) => l !== "")
        : [],
    );
    // Nothing lost, nothing run twice.
    expect(ran.length).toBe(JOBS);
    expect(new Set(ran).size).toBe(JOBS);
    expect([...ran].sort()).toEqual(rows.map((r) => r.id).sort());
    const records = await allJobs(parent);
    expect(records).toHaveLength(JOBS);
    for (const r of records) expect(r.stage).toBe("success");
    // A claim whose reply was cut off is taken back by the lease rules (attempt 2); its handler still ran once.
    console.log(`jobs that needed a second claim: ${records.filter((r) => r.attempt > 1).length}`);
    for (const c of children) expect(c.stderr.filter((l) => /Unhandled|uncaught/i.test(l))).toEqual([]);
  });
});
