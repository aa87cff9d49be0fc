/**
 * Stage counters across a crash (D7 in docs/semantics.md; docs/storage.md): a process SIGKILLed while
 * it holds a running job and buffered claims leaves counters that equal a
 * count of the jobs, and so does their rescue by another process.
 */
import { describe, expect, it } from "vitest";
import { JOB_STAGES } from "@later/runtime";
import { prepareBackend, type Backend } from "@later/runtime/internal";
import { allJobs, jobRows, openBackend, PROCESS_BACKENDS, useProcesses, waitFor } from "./helpers.js";

const NAMESPACE = "mpc";
const SHORT_LEASE = { leaseMs: 1_000, stuckGraceMs: 500, rescueIntervalMs: 200, pollIntervalMs: 200 };

/** The backend's stage counters beside a count of its jobs by stage (read through the job list). */
async function countersAndRecount(backend: Backend): Promise<[Record<string, number>, Record<string, number>]> {
  const recount = Object.fromEntries(JOB_STAGES.map((s) => [s, 0]));
  for (const j of await allJobs(backend)) recount[j.stage]!++;
  return [(await backend.inspect.stageCounts()).counts, recount];
}

describe.each(PROCESS_BACKENDS)("stage counters when a worker process is killed on $name", (entry) => {
  const processes = useProcesses();

  it("equal a count of the jobs after the SIGKILL and after the rescue", async () => {
    const backend = await entry.create(processes);
    const parent = processes.track(openBackend(backend, NAMESPACE));
    await prepareBackend(parent, true);
    const now = Date.now();
    const [hang] = jobRows([{ hang: true }], { now, runAt: now - 1_000 });
    await parent.jobs.insertMany({
      jobs: [
        hang!,
        ...jobRows(
          Array.from({ length: 30 }, (_, i) => ({ n: i })),
          { now },
        ),
      ],
      now,
    });

    const victim = processes.spawnChild("victim", { backend, namespace: NAMESPACE, workerCount: 1, hangOnPayload: true, server: SHORT_LEASE });
    await victim.ready();
    await victim.waitForLine((l) => l.startsWith("started "), "the hanging job to start");
    await victim.kill();
    const [atDeath, recountAtDeath] = await countersAndRecount(parent);
    expect(atDeath).toEqual(recountAtDeath);
    expect(atDeath.running).toBeGreaterThanOrEqual(1);

    const rescuer = processes.spawnChild("rescuer", { backend, namespace: NAMESPACE, workerCount: 4, server: SHORT_LEASE });
    await rescuer.ready();
    await waitFor(async () => (await parent.inspect.stageCounts()).counts.success === 31, "all 31 jobs to succeed", 20_000);
    await rescuer.stop();
    const [after, recountAfter] = await countersAndRecount(parent);
    expect(after).toEqual(recountAfter);
    expect(after).toMatchObject({ success: 31, running: 0, requeued: 0, enqueued: 0 });
  });
});
