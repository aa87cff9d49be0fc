/**
 * X9 per job type limits across processes (limits-child.mjs), on each
 * backend: three processes of four workers each share one database, with
 * "capped" (`concurrency: 3`), "paced" (`rateLimit: { max: 5, perMs: 500 }`)
 * and "grouped" (`groupConcurrency: 2`, over three groups and the jobs with
 * no group) jobs enqueued at once. Every handler records its start and end (wall
 * clock, process) in one shared file. Checked afterwards:
 * - every job ran once and succeeded;
 * - the "capped" handlers never ran more than 3 at once (from the records:
 *   a handler runs inside its job's `running` span, so this can only be
 *   over when the database's count was);
 * - no group of "grouped" jobs ever ran more than 2 at once (the same way,
 *   per group; the jobs with no group count as one group);
 * - no 500 ms window held more than 5 "paced" starts. A start is the claim
 *   (X9: the `running` entry of the job's history, the claiming process's
 *   wall clock); the handler's own start comes a moment after its claim, by
 *   a delay of its own, so the windows are checked on the claims, and the
 *   handler records give the process of each.
 * No sleep synchronises the test: the parent waits for lines and polls the
 * counters with a deadline.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { newJobId, RetryPolicy } from "@later/runtime";
import { type JobInsert, prepareBackend } from "@later/runtime/internal";
import { allJobs, openBackend, PROCESS_BACKENDS, useProcesses, waitFor } from "./helpers.js";

const SCRIPT = fileURLToPath(new URL("./limits-child.mjs", import.meta.url));
const NAMESPACE = "mp";
const CAPPED = 30;
const PACED = 25;
/** Per group of "grouped" jobs ("-": enqueued with no group). */
const GROUPED = 16;
const GROUPS = ["g1", "g2", "g3", "-"];

interface Attempt {
  jobType: string;
  jobId: string;
  /** The payload's group ("-": none). */
  group: string;
  pid: number;
  start: number;
  end: number;
}

/** The attempts of the shared log, start and end paired by job and attempt. */
function attempts(file: string): Attempt[] {
  const open = new Map<string, Attempt>();
  const done: Attempt[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line === "") continue;
    const [what, jobType, jobId, attempt, pid, at, group] = line.split(" ");
    const key = `${jobId} ${attempt}`;
    if (what === "start") open.set(key, { jobType: jobType!, jobId: jobId!, group: group!, pid: Number(pid), start: Number(at), end: Number.NaN });
    else {
      const a = open.get(key)!;
      a.end = Number(at);
      open.delete(key);
      done.push(a);
    }
  }
  expect([...open.keys()], "attempts without an end").toEqual([]);
  return done;
}

/** The most spans open at once; an end at the same millisecond as a start counts before it (the end was written first: the next claim needs the finish). */
function mostAtOnce(spans: readonly { start: number; end: number }[]): number {
  const edges = spans.flatMap((s) => [
    { t: s.start, d: 1 },
    { t: s.end, d: -1 },
  ]);
  edges.sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, (now += e.d));
  return most;
}

describe.each(PROCESS_BACKENDS)("per job type limits across 3 processes × 4 workers on $name", (entry) => {
  const processes = useProcesses();

  it("X9: concurrency 3 never exceeded, no 500 ms window with more than 5 starts, groupConcurrency 2 never exceeded per group, every job once", async () => {
    const spec = await entry.create(processes);
    const backend = processes.track(openBackend(spec, NAMESPACE));
    await prepareBackend(backend, true);
    const logFile = join(processes.tempDir(), "attempts.log");
    const children = ["a", "b", "c"].map((name) =>
      processes.spawnScript(name, SCRIPT, { backend: spec, namespace: NAMESPACE, workerCount: 4, logFile, handlerMs: 40 }),
    );
    await Promise.all(children.map((c) => c.ready(30_000)));

    const now = Date.now();
    const retryPolicy = JSON.stringify(RetryPolicy.noRetries());
    const row = (jobType: string, i: number): JobInsert => ({ id: newJobId(now), jobType, payload: JSON.stringify({ i }), runAt: now, retryPolicy });
    const grouped = (g: string, i: number): JobInsert => ({
      ...row("grouped", i),
      payload: JSON.stringify({ i, g }),
      group: g === "-" ? null : g,
    });
    const jobs = [
      ...Array.from({ length: CAPPED }, (_, i) => row("capped", i)),
      ...Array.from({ length: PACED }, (_, i) => row("paced", i)),
      ...GROUPS.flatMap((g) => Array.from({ length: GROUPED }, (_, i) => grouped(g, i))),
    ];
    await backend.jobs.insertMany({ jobs, now });
    // 25 paced jobs at 5 per 500 ms take about 2.5 s; the deadline leaves room for a loaded machine.
    await waitFor(async () => (await backend.inspect.stageCounts()).counts.success === jobs.length, "every job succeeded", 60_000, 50);
    for (const c of children) expect(c.errorLines()).toEqual([]);

    const ran = attempts(logFile);
    // Every job once: one attempt each, and no other.
    expect(ran.map((a) => a.jobId).sort()).toEqual(jobs.map((j) => j.id).sort());
    // Spread over the processes (not a check of the limits, of the test: three servers claimed).
    expect(new Set(ran.map((a) => a.pid)).size).toBeGreaterThan(1);

    const capped = ran.filter((a) => a.jobType === "capped");
    const most = mostAtOnce(capped);
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThan(1); // the limit was reached, not merely respected by a quiet run

    // Per group: at most 2 at once, and the limit reached by some group; the type as a whole ran more than 2 at once.
    const byGroup = GROUPS.map((g) => mostAtOnce(ran.filter((a) => a.jobType === "grouped" && a.group === g)));
    expect(
      byGroup.every((m) => m >= 1 && m <= 2),
      `most at once per group ${byGroup.join(", ")}`,
    ).toBe(true);
    expect(Math.max(...byGroup)).toBe(2);
    expect(mostAtOnce(ran.filter((a) => a.jobType === "grouped"))).toBeGreaterThan(2);

    const stored = new Map((await allJobs(backend)).map((j) => [j.id, j]));
    const paced = ran
      .filter((a) => a.jobType === "paced")
      .map((a) => ({ at: stored.get(a.jobId)!.stages.find((s) => s.stage === "running")!.at, pid: a.pid, stages: stored.get(a.jobId)!.stages }))
      .sort((x, y) => x.at - y.at);
    const claims = paced.map((p) => p.at);
    expect(claims).toHaveLength(PACED);
    // Any 6 consecutive starts span at least 500 ms: no window (t − 500, t] holds 6.
    const crowded = claims
      .slice(5)
      .map((t, i) => [claims[i]!, t])
      .filter(([first, sixth]) => sixth! - first! < 500);
    // On failure, every start with its process and history, to tell a crowded window from a clock's step.
    expect(crowded, JSON.stringify(paced.map((p) => [p.at - claims[0]!, p.pid, p.stages]))).toEqual([]);
    // And the windows were full: 25 starts at 5 per window need at least 4 windows after the first.
    expect(claims.at(-1)! - claims[0]!).toBeGreaterThanOrEqual(2_000);

    await Promise.all(children.map((c) => c.stop()));
  });
});
