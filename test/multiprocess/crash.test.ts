/**
 * A process is SIGKILLed while it runs a job (and holds more claims in its
 * buffer): once the leases have expired, a server in another process rescues
 * them all and runs them again; nothing else is lost or run twice.
 */
import { describe, expect, it } from "vitest";
import { prepareBackend } from "@later/runtime/internal";
import { allJobs, jobRows, openBackend, PROCESS_BACKENDS, useProcesses, waitFor } from "./helpers.js";

const NAMESPACE = "mp";
const OTHERS = 50;
const SHORT_LEASE = { leaseMs: 1_000, stuckGraceMs: 500, rescueIntervalMs: 200, pollIntervalMs: 200 };

describe.each(PROCESS_BACKENDS)("a worker process killed mid-job on $name", (entry) => {
  const processes = useProcesses();

  it("its jobs are rescued after the lease expires and complete on another process", async () => {
    const backend = await entry.create(processes);
    const parent = processes.track(openBackend(backend, NAMESPACE));
    await prepareBackend(parent, true);

    // The hanging job is due first, so the single worker of the first child takes it; the
    // fetcher claims a batch, so more jobs sit claimed (leased, unstarted) in that child's buffer.
    const now = Date.now();
    const [hang] = jobRows([{ hang: true }], { now, runAt: now - 1_000 });
    const others = jobRows(
      Array.from({ length: OTHERS }, (_, i) => ({ n: i })),
      { now },
    );
    await parent.jobs.insertMany({ jobs: [hang!, ...others], now });

    const victim = processes.spawnChild("victim", {
      backend,
      namespace: NAMESPACE,
      workerCount: 1,
      hangOnPayload: true,
      printDone: true,
      server: SHORT_LEASE,
    });
    const victimId = await victim.ready();
    const started = await victim.waitForLine((l) => l.startsWith("started "), "the hanging job to start");
    expect(started).toBe(`started ${hang!.id} 1`);

    // The job is held and its lease kept alive by the victim.
    const before = await parent.inspect.jobGet({ id: hang!.id });
    expect(before).toMatchObject({ stage: "running", attempt: 1, leaseOwner: victimId });

    await victim.kill();
    expect((await victim.exited).signal).toBe("SIGKILL");

    // Everything the victim held at its death (nothing changes it now: no server is running).
    const orphaned = (await allJobs(parent)).filter((j) => j.stage === "running");
    expect(orphaned.map((j) => j.id)).toContain(hang!.id);
    for (const j of orphaned) expect(j).toMatchObject({ attempt: 1, leaseOwner: victimId });
    const orphanIds = new Set(orphaned.map((j) => j.id));
    console.log(`claims held by the killed process: ${orphaned.length} (the hanging job + ${orphaned.length - 1} buffered)`);
    // Its only worker was stuck on the hanging job: it finished nothing.
    const victimDone = victim.lines.filter((l) => l.startsWith("done ")).map((l) => l.split(" ")[1]!);

    const rescuer = processes.spawnChild("rescuer", {
      backend,
      namespace: NAMESPACE,
      workerCount: 4,
      printDone: true,
      server: SHORT_LEASE,
    });
    const rescuerId = await rescuer.ready();
    await rescuer.waitForLine((l) => l.startsWith(`done ${hang!.id} `), "the rescued job to run again", 20_000);
    const total = OTHERS + 1;
    await waitFor(async () => (await parent.inspect.stageCounts()).counts.success === total, `all ${total} jobs to succeed`, 20_000);
    await rescuer.stop();

    const job = (await parent.inspect.jobGet({ id: hang!.id }))!;
    expect(job.stage).toBe("success");
    expect(job.attempt).toBe(2);
    expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "running", "success"]);
    expect(job.lastError).toMatch(/worker lost/);
    // Rescued only once the lease had been expired for the grace period.
    const requeuedAt = job.stages[2]!.at;
    expect(requeuedAt).toBeGreaterThan(before!.leaseExpiresAt! + SHORT_LEASE.stuckGraceMs);
    expect(rescuer.lines.some((l) => l.startsWith(`done ${hang!.id} 2 `))).toBe(true);

    // No job lost, none run twice to success: the orphans ran a second attempt, the rest exactly one.
    const records = await allJobs(parent);
    expect(records).toHaveLength(total);
    for (const r of records) {
      expect(r.stage).toBe("success");
      if (orphanIds.has(r.id)) {
        expect(r.attempt).toBe(2);
        expect(r.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "running", "success"]);
      } else {
        expect(r.attempt).toBe(1);
        expect(r.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "success"]);
      }
    }
    const rescuerDone = rescuer.lines.filter((l) => l.startsWith("done ")).map((l) => l.split(" ")[1]!);
    const ran = [...victimDone, ...rescuerDone];
    expect(new Set(ran).size).toBe(ran.length);
    expect([...ran].sort()).toEqual(records.map((r) => r.id));
    expect(rescuerId).not.toBe(victimId);
    expect(rescuer.errorLines()).toEqual([]);
  });
});
