// X3: a job running in a CHILD process, whose handler ignores its signal for a while, is cancelled from
// this process: the child's ctx.signal aborts with JOB_CANCELLED (PostgreSQL: at once, by the cancel
// notification, the lease being a minute; SQLite: at the child's next lease renewal), and the job ends
// `cancelled`: the handler's later throw is neither retried nor failed.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { systemClock } from "@later/runtime";
import { JobController } from "@later/runtime/internal";
import { jobRows, openBackend, PROCESS_BACKENDS, useProcesses, waitFor } from "./helpers.js";

const CANCEL_CHILD = fileURLToPath(new URL("./cancel-child.mjs", import.meta.url));

describe.each(PROCESS_BACKENDS)("cancel across processes on $name", (entry) => {
  const processes = useProcesses();

  it("X3: cancel from another process aborts the running attempt's signal; the job ends cancelled, its handler's throw not written", async () => {
    const spec = await entry.create(processes);
    const namespace = "cancels";
    // PostgreSQL: a renewal only every 20 s, so the abort within the wait below is the notification's.
    const leaseMs = spec.kind === "postgres" ? 60_000 : 1_500;
    const child = processes.spawnScript("cancel-child", CANCEL_CHILD, { backend: spec, namespace, leaseMs });
    await child.ready();
    const backend = processes.track(openBackend(spec, namespace));
    await backend.open();
    const now = Date.now();
    const [row] = jobRows([{}], { now });
    await backend.jobs.insertMany({ jobs: [row!], now });
    await child.waitForLine((l) => l === `started ${row!.id} 1`, "the handler to start");

    const controller = new JobController(backend, systemClock, () => {});
    const cancelledAt = Date.now();
    expect(await controller.cancel(row!.id, "from the parent")).toBe(true);
    expect((await backend.inspect.jobGet({ id: row!.id }))?.stage).toBe("cancelled");
    await child.waitForLine((l) => l.startsWith(`aborted ${row!.id} `), "the child's signal to abort", 8_000);
    expect(child.lines).toContain(`aborted ${row!.id} JOB_CANCELLED from the parent`);
    if (spec.kind === "postgres") expect(Date.now() - cancelledAt).toBeLessThan(leaseMs / 3);
    await child.waitForLine((l) => l === `event-cancelled ${row!.id} 1`, "the job-cancelled event");
    await child.waitForLine((l) => l === `settled ${row!.id}`, "the handler to throw");
    await child.stop(); // the shutdown flushes any outcome it would have written
    expect(await child.exited).toEqual({ code: 0, signal: null });
    const job = await waitFor(() => backend.inspect.jobGet({ id: row!.id }), "the job row");
    expect(job).toMatchObject({ stage: "cancelled", attempt: 1, lastError: null, leaseOwner: null });
    expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "cancelled"]);
    expect(job.stages.at(-1)?.note).toBe("from the parent");
    expect((await backend.inspect.stageCounts()).counts).toMatchObject({ cancelled: 1, running: 0, requeued: 0, failed: 0 });
  });
});
