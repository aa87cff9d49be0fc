/**
 * A job whose process dies every time it runs it (SIGKILL inside the
 * handler): each lost attempt counts, through the same retry decision as a
 * handler that threw, so the job ends `failed` once its retries are spent;
 * as a regular job (the stuck-job sweep records each lost attempt) and as a
 * partition head (the next claim of its partition records it), where the
 * failure frees the partition for the jobs behind it; and inside a run of a
 * partition (P3), where the innocent jobs of the dead run lose no attempt.
 * One child process at a time: each runs the job and dies, the next one
 * rescues it and runs it again.
 */
import { describe, expect, it } from "vitest";
import { RetryPolicy } from "@later/runtime";
import { prepareBackend, type Backend, type JobInsert } from "@later/runtime/internal";
import { jobRows, openBackend, PROCESS_BACKENDS, useProcesses, type BackendSpec, type ChildConfig, type Processes } from "./helpers.js";

const NAMESPACE = "mp";
const RETRIES = 2;
/** Short leases, sweeps and member expiry, so each lost attempt is noticed within about a second. */
const SHORT = { leaseMs: 600, stuckGraceMs: 100, rescueIntervalMs: 100, pollIntervalMs: 100, partitionMemberExpiryMs: 600 };
const TOPICS = [{ name: "orders", partitions: 2 }];

/**
 * Starts one child after another until `settled` holds: each child that dies is
 * replaced. Resolves to the number of children that died.
 */
async function runUntil(processes: Processes, config: ChildConfig, settled: () => Promise<boolean>, maxDeaths: number): Promise<number> {
  let deaths = 0;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const child = processes.spawnChild(`worker-${deaths + 1}`, config);
    await child.ready().catch(() => undefined); // a child may claim the job and die before it says ready
    for (;;) {
      if (!child.alive) break;
      if (await settled()) {
        await child.stop();
        expect(child.errorLines()).toEqual([]);
        return deaths;
      }
      if (Date.now() > deadline) throw new Error(`timed out after ${deaths} deaths`);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await child.exited).signal).toBe("SIGKILL");
    expect(child.lines.filter((l) => l.startsWith("dying "))).toHaveLength(1);
    if (++deaths > maxDeaths) throw new Error(`${deaths} children died: the poison job was not stopped`);
  }
}

async function open(processes: Processes, spec: BackendSpec): Promise<Backend> {
  const parent = processes.track(openBackend(spec, NAMESPACE));
  await prepareBackend(parent, true);
  return parent;
}

describe.each(PROCESS_BACKENDS)("a job whose process dies every time it runs, on $name", (entry) => {
  const processes = useProcesses();

  it("a regular job ends failed once its retries are spent", async () => {
    const spec = await entry.create(processes);
    const parent = await open(processes, spec);
    const now = Date.now();
    const [poison] = jobRows([{ die: true }], { now, retry: RetryPolicy.fixed(RETRIES, 0) });
    await parent.jobs.insertMany({ jobs: [poison!], now });
    const failed = async () => (await parent.inspect.jobGet({ id: poison!.id }))?.stage === "failed";
    const deaths = await runUntil(processes, { backend: spec, namespace: NAMESPACE, workerCount: 1, dieOnPayload: true, server: SHORT }, failed, RETRIES + 1);
    expect(deaths).toBe(RETRIES + 1);
    const job = (await parent.inspect.jobGet({ id: poison!.id }))!;
    expect(job.attempt).toBe(RETRIES + 1);
    expect(job.lastError).toMatch(/worker lost: the lease of attempt 3 expired/);
    expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "running", "requeued", "running", "failed"]);
  });

  it("a partition head ends failed once its retries are spent, which frees its partition", async () => {
    const spec = await entry.create(processes);
    const parent = await open(processes, spec);
    const now = Date.now();
    await parent.partitions.topicRegister({ topics: TOPICS, now });
    const rows = jobRows([{ die: true }, { n: 1 }], { now, retry: RetryPolicy.fixed(RETRIES, 0) });
    const [poison, behind] = rows.map((r): JobInsert => ({ ...r, topic: "orders", partition: 0 }));
    await parent.jobs.insertMany({ jobs: [poison!, behind!], now });
    const done = async () => (await parent.inspect.jobGet({ id: behind!.id }))?.stage === "success";
    // Runs of one: the poison head is claimed alone from the start (with runs, the first death inside its
    // run costs it no attempt: see the next test).
    const server = { ...SHORT, partitionRunMax: 1 };
    const config: ChildConfig = { backend: spec, namespace: NAMESPACE, workerCount: 2, dieOnPayload: true, topics: TOPICS, server };
    const deaths = await runUntil(processes, config, done, RETRIES + 1);
    expect(deaths).toBe(RETRIES + 1);
    const job = (await parent.inspect.jobGet({ id: poison!.id }))!;
    expect(job.stage).toBe("failed");
    expect(job.attempt).toBe(RETRIES + 1);
    expect(job.lastError).toMatch(/worker lost: the lease of attempt 3 expired/);
    expect(job.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued", "running", "requeued", "running", "failed"]);
    const next = (await parent.inspect.jobGet({ id: behind!.id }))!;
    expect(next.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "success"]);
    // The take-overs of the dead head moved it running → requeued → running: the stage counters followed.
    expect((await parent.inspect.stageCounts()).counts).toMatchObject({ failed: 1, success: 1, running: 0, requeued: 0, enqueued: 0 });
    expect((await parent.inspect.partitionDepth()).partitions.find((p) => p.topic === "orders" && p.partition === 0)?.unfinished).toBe(0);
  });

  it("P3: dying inside a run costs the run's innocent jobs no attempt; the partition is claimed a job at a time until past the run, so the poison job fails", async () => {
    const spec = await entry.create(processes);
    const parent = await open(processes, spec);
    const now = Date.now();
    await parent.partitions.topicRegister({ topics: TOPICS, now });
    const rows = jobRows([{ n: 1 }, { n: 2 }, { die: true }, { n: 3 }], { now, retry: RetryPolicy.fixed(RETRIES, 0) });
    const [a, b, poison, c] = rows.map((r): JobInsert => ({ ...r, topic: "orders", partition: 0 }));
    await parent.jobs.insertMany({ jobs: [a!, b!, poison!, c!], now });
    const done = async () => (await parent.inspect.jobGet({ id: c!.id }))?.stage === "success";
    const server = { ...SHORT, partitionRunMax: 8 };
    const config: ChildConfig = { backend: spec, namespace: NAMESPACE, workerCount: 2, dieOnPayload: true, topics: TOPICS, server };
    // The first child dies in its run of all four (nothing of it written); then one death per attempt of the poison job.
    const deaths = await runUntil(processes, config, done, RETRIES + 2);
    expect(deaths).toBe(RETRIES + 2);
    const stages = async (id: string) => (await parent.inspect.jobGet({ id }))!.stages.map((s) => s.stage);
    // The dead run's head was put back unstarted (attempt undone), then run alone.
    expect(await parent.inspect.jobGet({ id: a!.id })).toMatchObject({ stage: "success", attempt: 1 });
    expect(await stages(a!.id)).toEqual(["enqueued", "running", "enqueued", "running", "success"]);
    expect(await parent.inspect.jobGet({ id: b!.id })).toMatchObject({ stage: "success", attempt: 1 });
    const job = (await parent.inspect.jobGet({ id: poison!.id }))!;
    expect(job).toMatchObject({ stage: "failed", attempt: RETRIES + 1 });
    expect(job.lastError).toMatch(/worker lost: the lease of attempt 3 expired/);
    expect(await stages(poison!.id)).toEqual(["enqueued", "running", "requeued", "running", "requeued", "running", "failed"]);
    expect(await parent.inspect.jobGet({ id: c!.id })).toMatchObject({ stage: "success", attempt: 1 });
    expect((await parent.inspect.stageCounts()).counts).toMatchObject({ failed: 1, success: 3, running: 0, requeued: 0, enqueued: 0 });
  });
});
