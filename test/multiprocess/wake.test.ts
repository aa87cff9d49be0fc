/**
 * Cross-process wake-up: an idle server whose poll interval is a minute
 * picks up a job committed by another process within the test's deadline,
 * which only the backend's wake-up can deliver (SQLite: the WAL watcher;
 * PostgreSQL: LISTEN/NOTIFY). Latencies are printed, never asserted.
 */
import { describe, expect, it } from "vitest";
import { jobRows, openBackend, PROCESS_BACKENDS, useProcesses } from "./helpers.js";

const NAMESPACE = "mp";
const ROUNDS = 20;
/** Far beyond the test's length: no poll, rescue or sweep tick fires in the child while it runs. */
const NEVER = 600_000;
/** Per job; the child would not poll before 60 s. */
const DEADLINE_MS = 10_000;

describe.each(PROCESS_BACKENDS)("cross-process wake-up on $name", (entry) => {
  const processes = useProcesses();

  it(`an idle server with a 60 s poll runs jobs committed by another process (${ROUNDS} in sequence)`, async () => {
    const backend = await entry.create(processes);
    const child = processes.spawnChild("idle", {
      backend,
      namespace: NAMESPACE,
      workerCount: 1,
      printDone: true,
      server: { pollIntervalMs: 60_000, rescueIntervalMs: NEVER, sweepIntervalMs: NEVER },
    });
    await child.ready();
    // The parent runs no server: it only writes rows, so it cannot wake the child in-process.
    const parent = processes.track(openBackend(backend, NAMESPACE));
    await parent.open();

    const latencies: { committedToHandler: number; roundTrip: number }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = Date.now();
      const [row] = jobRows([{ round: i }], { now: t0 });
      await parent.jobs.insertMany({ jobs: [row!], now: t0 });
      const committed = Date.now();
      const line = await child.waitForLine((l) => l.startsWith(`done ${row!.id} `), `job ${i} to run in the child`, DEADLINE_MS);
      const received = Date.now();
      const handlerAt = Number(line.split(" ")[3]);
      latencies.push({ committedToHandler: handlerAt - committed, roundTrip: received - t0 });
      expect(line).toMatch(new RegExp(`^done ${row!.id} 1 \\d+$`));
    }
    await child.stop();

    // For information only: the wall clocks of both processes are the same machine's.
    const sorted = (k: "committedToHandler" | "roundTrip") => latencies.map((l) => l[k]).sort((a, b) => a - b);
    const summary = (k: "committedToHandler" | "roundTrip") => {
      const v = sorted(k);
      return `min ${v[0]} / median ${v[Math.floor(v.length / 2)]} / max ${v[v.length - 1]} ms`;
    };
    console.log(
      `${entry.name} wake latency, commit -> handler start: ${summary("committedToHandler")}; all: ${latencies.map((l) => l.committedToHandler).join(", ")}`,
    );
    console.log(`${entry.name} wake latency, insert -> parent saw "done": ${summary("roundTrip")}`);

    const { counts } = await parent.inspect.stageCounts();
    expect(counts).toMatchObject({ success: ROUNDS, enqueued: 0, running: 0 });
    expect(child.errorLines()).toEqual([]);
  });
});
