// J9: `shutdownOnSignals()` in a real process. SIGTERM starts the graceful shutdown; a second SIGTERM
// right after is ignored (graphile-worker's rule: repeats within 5 s); at the deadline the handler still
// running is aborted and its job put back, and the process exits 0.
import { describe, expect, it } from "vitest";
import { openBackend, PROCESS_BACKENDS, jobRows, useProcesses, waitFor } from "./helpers.js";
import { fileURLToPath } from "node:url";

const SIGNAL_CHILD = fileURLToPath(new URL("./signal-child.mjs", import.meta.url));

describe.each(PROCESS_BACKENDS)("shutdownOnSignals on $name", (entry) => {
  const processes = useProcesses();

  it("J9: SIGTERM shuts the server down and exits 0 after putting its running job back, not counted and unleased", async () => {
    const spec = await entry.create(processes);
    const namespace = "signals";
    const child = processes.spawnScript("signal-child", SIGNAL_CHILD, { backend: spec, namespace, deadlineMs: 300, leaseMs: 60_000 });
    await child.ready();
    const backend = processes.track(openBackend(spec, namespace));
    await backend.open();
    const now = Date.now();
    const [row] = jobRows([{}], { now });
    await backend.jobs.insertMany({ jobs: [row!], now });
    await child.waitForLine((l) => l === `started ${row!.id} 1`, "the handler to start");

    child.proc.kill("SIGTERM");
    child.proc.kill("SIGTERM"); // a repeat within 5 s: ignored, not a forced exit
    expect(await child.exited).toEqual({ code: 0, signal: null });
    expect(child.lines).toContain(`released ${row!.id} 1`);
    const job = await waitFor(() => backend.inspect.jobGet({ id: row!.id }), "the job row");
    expect(job).toMatchObject({ stage: "enqueued", attempt: 0, leaseOwner: null, leaseExpiresAt: null });
  });
});
