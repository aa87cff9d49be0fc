/**
 * Partition order under real faults (DESIGN §3 P3, P5, P6): three child
 * processes (partition-child.mjs) run a topic of 8 partitions whose jobs fail
 * and sleep at random; one run without faults, one where the owner of a busy
 * partition is SIGKILLed, one where an owner is SIGSTOPped past its lease and
 * then continued.
 *
 * Every child logs the start and end of each attempt and each outcome write
 * the runner reports applied; {@link verify} checks those logs against the
 * job rows:
 * - nothing lost: every job succeeded, with an attempt whose handler ended
 *   `ok` and whose write was applied, and no attempt of it began after that one;
 * - order: in each partition no attempt of a job starts before the previous
 *   job's successful attempt ended; per key, the applied successes are strictly
 *   increasing in enqueue order (and so are sequences; stored success times
 *   never go back). Applied lines are logged after the commit, by a process
 *   that may be busy, so they are compared with each other only within one
 *   process; across processes a success must be applied after the previous
 *   job's handler ended (its end line precedes its write);
 * - fencing: no two attempts of one partition overlap in time unless one of
 *   them has no applied write (its claim lost the lease, or its process died).
 * Log times are `performance.timeOrigin + performance.now()`: sub-ms wall
 * time, comparable across processes on one machine.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { newJobId, partitionForKey, RetryPolicy } from "@later/runtime";
import { prepareBackend, type Backend, type JobInsert, type JobRecord } from "@later/runtime/internal";
import {
  allJobs,
  openBackend,
  PROCESS_BACKENDS,
  useProcesses,
  waitFor,
  type BackendSpec,
  type Child,
  type Processes,
  type ProcessBackendEntry,
} from "./helpers.js";

const NAMESPACE = "mp";
const PARTITIONS = 8;
const SCRIPT = fileURLToPath(new URL("./partition-child.mjs", import.meta.url));
const RETRY = JSON.stringify(RetryPolicy.fixed(20, 0));
/** Short leases and member expiry, so a dead or frozen owner's partitions move within seconds. */
const FAULT_SERVER = { leaseMs: 2_000, partitionMemberExpiryMs: 1_500, pollIntervalMs: 50 };
const now = () => performance.timeOrigin + performance.now();

/** What partition-child.mjs is told in its argv (JSON). */
interface PartitionChildConfig {
  backend: BackendSpec;
  namespace: string;
  workerCount: number;
  logFile: string;
  seed: number;
  failProbability: number;
  maxDelayMs: number;
  /** Jobs of this key take `delayMs` and never fail. */
  slow?: { key: string; delayMs: number };
  server: Record<string, number>;
}

/** One attempt as the children logged it. */
interface Attempt {
  jobId: string;
  key: string;
  n: number;
  attempt: number;
  pid: number;
  start: number;
  end: number | null;
  result: string | null;
  /** The runner's event for this claim's outcome write: only present when the write was applied. */
  applied: { stage: string; t: number } | null;
}

interface RunChild {
  child: Child;
  id: string;
  pid: number;
  logFile: string;
}

interface Run {
  parent: Backend;
  spec: BackendSpec;
  children: RunChild[];
}

async function startRun(
  entry: ProcessBackendEntry,
  processes: Processes,
  config: Omit<PartitionChildConfig, "backend" | "namespace" | "logFile">,
): Promise<Run> {
  const spec = await entry.create(processes);
  const parent = processes.track(openBackend(spec, NAMESPACE));
  await prepareBackend(parent, true);
  const dir = processes.tempDir();
  const spawned = ["a", "b", "c"].map((name, i) => {
    const logFile = join(dir, `${name}.log`);
    const child = processes.spawnScript(name, SCRIPT, {
      ...config,
      seed: config.seed * 10 + i,
      backend: spec,
      namespace: NAMESPACE,
      logFile,
    } satisfies PartitionChildConfig);
    return { child, logFile, pid: child.proc.pid! };
  });
  const ids = await Promise.all(spawned.map((s) => s.child.ready())); // each child registers the topic at start
  return { parent, spec, children: spawned.map((s, i) => ({ ...s, id: ids[i]! })) };
}

/** Writes `perKey` jobs for each key (fewer for `counts`), in rounds n = 0, 1, ...: one insert per round, keys shuffled, so partitions mix keys. */
async function enqueue(parent: Backend, keys: readonly string[], perKey: number, counts: Record<string, number> = {}): Promise<number> {
  let seed = 7;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  let total = 0;
  for (let n = 0; n < perKey; n++) {
    const round = keys
      .filter((k) => n < (counts[k] ?? perKey))
      .map((k) => ({ k, r: random() }))
      .sort((a, b) => a.r - b.r)
      .map(({ k }) => k);
    const at = Date.now();
    const jobs: JobInsert[] = round.map((key) => ({
      id: newJobId(at),
      jobType: "ordered",
      payload: JSON.stringify({ key, n }),
      runAt: at,
      retryPolicy: RETRY,
      topic: "orders",
      partition: partitionForKey(key, PARTITIONS),
    }));
    await parent.jobs.insertMany({ jobs, now: at });
    total += jobs.length;
  }
  return total;
}

/** Waits until all `total` jobs succeeded (fails fast on a failed job). */
async function allSucceed(parent: Backend, total: number, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const { counts } = await parent.inspect.stageCounts();
      if (counts.failed > 0) throw new Error(`${counts.failed} jobs failed`);
      return counts.success === total;
    },
    `all ${total} jobs to succeed`,
    timeoutMs,
    50,
  );
}

/** Parses the children's logs; `problems` lists lines that break the protocol (a claim logged twice, an end or applied line without its start). */
function readAttempts(logFiles: readonly string[]): { attempts: Attempt[]; problems: string[] } {
  const attempts = new Map<string, Attempt>();
  const problems: string[] = [];
  for (const file of logFiles) {
    const lines = existsSync(file)
      ? readFileSync(file, "utf8")
          .split("\n")
          .filter((l) => l !== "")
      : [];
    for (const line of lines) {
      const f = line.split(" ");
      if (f[0] === "start") {
        const key = `${f[1]} ${f[4]}`;
        if (attempts.has(key)) problems.push(`claim logged twice: ${line}`);
        attempts.set(key, {
          jobId: f[1]!,
          key: f[2]!,
          n: Number(f[3]),
          attempt: Number(f[4]),
          pid: Number(f[5]),
          start: Number(f[6]),
          end: null,
          result: null,
          applied: null,
        });
      } else if (f[0] === "end" || f[0] === "applied") {
        const a = attempts.get(`${f[1]} ${f[0] === "end" ? f[4] : f[2]}`);
        if (!a || (f[0] === "end" && a.pid !== Number(f[5]))) problems.push(`no start in the same process for: ${line}`);
        else if (f[0] === "end") [a.end, a.result] = [Number(f[6]), f[7]!];
        else if (a.applied) problems.push(`applied twice: ${line}`);
        else a.applied = { stage: f[3]!, t: Number(f[4]) };
      }
    }
  }
  return { attempts: [...attempts.values()], problems };
}

/** One job's attempts, for failure messages: `#attempt pid start..end result applied@t`. */
function trace(tries: readonly Attempt[]): string {
  return tries
    .map(
      (a) =>
        `#${a.attempt} pid ${a.pid} ${a.start.toFixed(3)}..${a.end?.toFixed(3) ?? "-"} ${a.result ?? "-"} ${a.applied ? `${a.applied.stage}@${a.applied.t.toFixed(3)}` : "unapplied"}`,
    )
    .join(", ");
}

interface VerifyOptions {
  /** pid → time of death of a SIGKILLed process: its attempts without an end line end there, and a success it committed as it died has no applied line. */
  killed?: ReadonlyMap<number, number>;
  /** Attempts whose applied line may have been logged late (the process was stopped between the write and the log line): not used for timing. */
  lateApplied?: (a: Attempt) => boolean;
}

/** The checks of the module doc; returns the figures of the run. */
function verify(records: readonly JobRecord[], logFiles: readonly string[], options: VerifyOptions = {}) {
  const { attempts, problems } = readAttempts(logFiles);
  expect(problems, "log protocol").toEqual([]);
  const byJob = new Map<string, Attempt[]>();
  for (const a of attempts) byJob.set(a.jobId, [...(byJob.get(a.jobId) ?? []), a]);
  for (const list of byJob.values()) list.sort((x, y) => x.attempt - y.attempt);
  const won = new Map<string, Attempt>();

  const lost: string[] = [];
  for (const r of records) {
    const tries = byJob.get(r.id) ?? [];
    const w = tries.find((a) => a.attempt === r.attempt);
    if (r.stage !== "success") lost.push(`${r.id} is ${r.stage}`);
    else if (w?.result !== "ok") lost.push(`${r.id}: stored success of attempt ${r.attempt}, whose handler did not end ok (${w?.result ?? "never started"})`);
    else if (w.applied?.stage !== "success" && !(w.applied === null && options.killed?.has(w.pid)))
      lost.push(`${r.id}: attempt ${r.attempt} succeeded without an applied success`);
    else won.set(r.id, w);
    const story = `stored ${r.stage} #${r.attempt}, stages ${r.stages.map((x) => `${x.stage}@${x.at}`).join(" ")}; attempts ${trace(tries)}`;
    if (r.stages.filter((x) => x.stage === "success").length !== 1) lost.push(`${r.id}: stored success more than once: ${story}`);
    if (tries.length > 0 && tries[tries.length - 1]!.attempt !== r.attempt)
      lost.push(`${r.id}: attempt ${tries[tries.length - 1]!.attempt} started after the successful attempt ${r.attempt}: ${story}`);
    for (const a of tries) {
      if (a === w || a.applied === null || (a.applied.stage === "requeued" && a.result === "fail")) continue;
      lost.push(
        a.applied.stage === "success"
          ? `${r.id}: ran again after attempt ${a.attempt}'s success was applied: ${story}`
          : `${r.id}: attempt ${a.attempt} ended ${a.result} but applied ${a.applied.stage}: ${story}`,
      );
    }
  }
  expect(lost, "every job succeeded exactly once").toEqual([]);

  const outOfOrder: string[] = [];
  let skippedPairs = 0;
  /** Pairs of one key whose applied lines, from two processes, are logged in the reverse order of their commits. */
  let appliedLogInversions = 0;
  const keyed = new Map<string, JobRecord[]>();
  const partitioned = new Map<number, JobRecord[]>();
  for (const r of records) {
    const { key } = JSON.parse(r.payload) as { key: string };
    keyed.set(key, [...(keyed.get(key) ?? []), r]);
    partitioned.set(r.partition!, [...(partitioned.get(r.partition!) ?? []), r]);
  }
  const successAt = (r: JobRecord) => r.stages.filter((s) => s.stage === "success").at(-1)!.at;
  for (const [key, list] of keyed) {
    list.sort((x, y) => (JSON.parse(x.payload) as { n: number }).n - (JSON.parse(y.payload) as { n: number }).n);
    for (let i = 1; i < list.length; i++) {
      const [p, c] = [list[i - 1]!, list[i]!];
      const [wp, wc] = [won.get(p.id)!, won.get(c.id)!];
      if (!(c.seq! > p.seq!)) outOfOrder.push(`${key}: n=${wc.n} has seq ${c.seq}, not after ${p.seq}`);
      if (successAt(c) < successAt(p)) outOfOrder.push(`${key}: n=${wc.n} stored success at ${successAt(c)}, before n=${wp.n} at ${successAt(p)}`);
      if (!wp.applied || !wc.applied || options.lateApplied?.(wp) || options.lateApplied?.(wc)) skippedPairs++;
      else {
        // An applied line is logged after its commit, by a process that may be busy: only within one
        // process do two applied lines keep the order of their commits. Across processes the earlier
        // job's commit is bounded from below by its handler's end line, logged before the write.
        const prevDone = wp.pid === wc.pid ? wp.applied.t : wp.end!;
        if (wp.pid !== wc.pid && !(wc.applied.t > wp.applied.t)) appliedLogInversions++;
        if (!(wc.applied.t > prevDone))
          outOfOrder.push(
            `${key}: n=${wc.n} (${c.id}, pid ${wc.pid}) applied success at ${wc.applied.t}, not after n=${wp.n} (${p.id}, pid ${wp.pid}) ${wp.pid === wc.pid ? "applied" : "ended"} at ${prevDone}`,
          );
      }
    }
  }
  const endOf = (a: Attempt) => a.end ?? options.killed?.get(a.pid) ?? Infinity;
  const writes = (a: Attempt) => a.applied !== null || won.get(a.jobId) === a;
  const overlaps: string[] = [];
  let overlapCount = 0;
  for (const [partition, list] of partitioned) {
    list.sort((x, y) => x.seq! - y.seq!);
    for (let i = 1; i < list.length; i++) {
      const prevEnd = won.get(list[i - 1]!.id)!.end!;
      for (const a of byJob.get(list[i]!.id) ?? []) {
        if (a.start <= prevEnd)
          outOfOrder.push(
            `partition ${partition}: ${a.jobId} attempt ${a.attempt} started at ${a.start}, before ${list[i - 1]!.id} (the previous seq) ended its successful attempt at ${prevEnd}`,
          );
      }
    }
    const runs = list.flatMap((r) => byJob.get(r.id) ?? []).sort((x, y) => x.start - y.start);
    for (let i = 0; i < runs.length; i++) {
      for (let j = i + 1; j < runs.length && runs[j]!.start < endOf(runs[i]!); j++) {
        overlapCount++;
        const [a, b] = [runs[i]!, runs[j]!];
        if (writes(a) && writes(b)) {
          overlaps.push(
            `partition ${partition}: ${a.jobId}#${a.attempt} (pid ${a.pid}, ${a.start}..${a.end}, applied ${a.applied?.stage}) and ${b.jobId}#${b.attempt} (pid ${b.pid}, ${b.start}..${b.end}, applied ${b.applied?.stage})`,
          );
        }
      }
    }
  }
  expect(outOfOrder, "partition and key order").toEqual([]);
  expect(overlaps, "overlapping attempts that both had writes applied").toEqual([]);

  const takeovers = attempts.filter((a) => {
    const prev = byJob.get(a.jobId)!.find((x) => x.attempt === a.attempt - 1);
    return prev !== undefined && prev.pid !== a.pid && !writes(prev);
  }).length;
  const perProcess: Record<number, number> = {};
  for (const a of attempts) perProcess[a.pid] = (perProcess[a.pid] ?? 0) + 1;
  return {
    jobs: records.length,
    attempts: attempts.length,
    retries: attempts.filter((a) => a.applied?.stage === "requeued").length,
    unapplied: attempts.filter((a) => !writes(a)).length,
    takeovers,
    overlaps: overlapCount,
    overlapsAllowed: overlapCount,
    skippedPairs,
    appliedLogInversions,
    perProcess,
  };
}

/** SQLite only: true when the write lock can be taken within `waitMs` (a process stopped inside a write transaction holds it, and stalls every writer). */
function sqliteWriteLockFree(spec: BackendSpec, waitMs: number): boolean {
  if (spec.kind !== "sqlite") return true;
  const db = new Database(spec.file, { timeout: waitMs });
  try {
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
    return true;
  } catch {
    return false;
  } finally {
    db.close();
  }
}

describe.each(PROCESS_BACKENDS)("partition order under faults, 3 processes on $name", (entry) => {
  const processes = useProcesses();
  const keys = (count: number) => Array.from({ length: count }, (_, i) => `k${i}`);

  it("random failures and delays: every job succeeds, per key in enqueue order, one attempt at a time per partition", async () => {
    const started = now();
    const run = await startRun(entry, processes, {
      workerCount: 4,
      seed: 1,
      failProbability: 0.15,
      maxDelayMs: 3,
      server: { pollIntervalMs: 50, partitionMemberExpiryMs: 3_000 },
    });
    const total = await enqueue(run.parent, keys(200), 20);
    await allSucceed(run.parent, total, 60_000);
    await Promise.all(run.children.map((c) => c.child.stop()));
    const figures = verify(
      await allJobs(run.parent),
      run.children.map((c) => c.logFile),
    );
    console.log(`${entry.name} baseline: ${JSON.stringify(figures)}, ${Math.round(now() - started)} ms`);
    expect(figures.jobs).toBe(4_000);
    // Without faults every claim keeps its lease: every attempt's write is applied, and none overlap.
    expect(figures.unapplied).toBe(0);
    expect(figures.overlaps).toBe(0);
    expect(figures.retries).toBeGreaterThan(0);
    for (const c of run.children) expect(c.child.errorLines()).toEqual([]);
  });

  it("SIGKILL of the owner of a busy partition: the others take over, order still holds, nothing is lost", async () => {
    const started = now();
    const run = await startRun(entry, processes, { workerCount: 4, seed: 2, failProbability: 0.15, maxDelayMs: 3, server: FAULT_SERVER });
    const total = await enqueue(run.parent, keys(100), 10);
    const byId = new Map(run.children.map((c) => [c.id, c]));
    const busy = await waitFor(
      async () =>
        (await run.parent.inspect.partitionDepth()).partitions
          .filter((p) => p.leaseOwner !== null && byId.has(p.leaseOwner) && p.unfinished >= 20)
          .sort((a, b) => b.unfinished - a.unfinished)[0],
      "a busy partition held by a child",
      20_000,
    );
    const victim = byId.get(busy.leaseOwner!)!;
    await victim.child.kill();
    const diedAt = now();
    expect((await victim.child.exited).signal).toBe("SIGKILL");
    await allSucceed(run.parent, total, 30_000);
    await Promise.all(run.children.map((c) => c.child.stop()));
    const records = await allJobs(run.parent);
    const figures = verify(
      records,
      run.children.map((c) => c.logFile),
      { killed: new Map([[victim.pid, diedAt]]) },
    );
    // The busy partition was finished by the survivors.
    const { attempts } = readAttempts(run.children.map((c) => c.logFile));
    const finishers = new Set(
      records.filter((r) => r.partition === busy.partition).map((r) => attempts.find((a) => a.jobId === r.id && a.attempt === r.attempt)!.pid),
    );
    expect([...finishers].some((pid) => pid !== victim.pid)).toBe(true);
    const cut = attempts.filter((a) => a.pid === victim.pid && a.end === null).length;
    console.log(
      `${entry.name} SIGKILL of partition ${busy.partition}'s owner (${busy.unfinished} unfinished): attempts cut by the kill ${cut}, ${JSON.stringify(figures)}, ${Math.round(now() - started)} ms`,
    );
  });

  it("SIGSTOP of an owner past its lease, then SIGCONT: its late completion is rejected, nothing runs out of order, nothing is lost", async () => {
    const started = now();
    const slow = { key: "slow", delayMs: 1_500 };
    const run = await startRun(entry, processes, { workerCount: 4, seed: 3, failProbability: 0.15, maxDelayMs: 3, slow, server: FAULT_SERVER });
    const total = await enqueue(run.parent, [slow.key, ...keys(100)], 10, { [slow.key]: 6 });
    const logs = run.children.map((c) => c.logFile);
    // Stop a child while it runs a slow head; on SQLite, not while it holds the database's write lock
    // (a running writer holds it for milliseconds, so 250 ms without it means the stopped child has it;
    // a busy child is often inside a write, hence up to 20 tries over six slow heads).
    let stopped: { c: RunChild; a: Attempt; at: number } | null = null;
    let stops = 0;
    while (stopped === null) {
      if (stops++ === 20) throw new Error("could not stop a child running a slow head outside a write transaction");
      const head = await waitFor(() => readAttempts(logs).attempts.find((a) => a.key === slow.key && a.end === null), "a slow head to start", 20_000);
      const c = run.children.find((x) => x.pid === head.pid)!;
      c.child.proc.kill("SIGSTOP");
      const at = now();
      const still = readAttempts([c.logFile]).attempts.find((a) => a.jobId === head.jobId && a.attempt === head.attempt)!;
      if (still.end === null && sqliteWriteLockFree(run.spec, 250)) stopped = { c, a: head, at };
      else c.child.proc.kill("SIGCONT");
    }
    const { c, a, at: stoppedAt } = stopped;
    // Another child takes the partition over once the lease expired, and runs that job to success.
    const rerun = await waitFor(
      () => readAttempts(logs).attempts.find((x) => x.jobId === a.jobId && x.attempt > a.attempt && x.pid !== c.pid && x.applied?.stage === "success"),
      "another child to run the stopped head to success",
      20_000,
    );
    c.child.proc.kill("SIGCONT");
    const continuedAt = now();
    const late = await waitFor(
      () => readAttempts([c.logFile]).attempts.find((x) => x.jobId === a.jobId && x.attempt === a.attempt && x.end !== null),
      "the stopped attempt to end",
      10_000,
    );
    await allSucceed(run.parent, total, 30_000);
    await Promise.all(run.children.map((x) => x.child.stop()));
    const records = await allJobs(run.parent);
    const figures = verify(records, logs, { lateApplied: (x) => x.pid === c.pid && x.start < stoppedAt && x.applied !== null && x.applied.t > continuedAt });
    const final = readAttempts([c.logFile]).attempts.find((x) => x.jobId === a.jobId && x.attempt === a.attempt)!;
    expect(final.applied, "the stopped attempt's late completion was rejected").toBeNull();
    expect(["ok", "aborted"]).toContain(late.result);
    expect(rerun.start).toBeGreaterThan(stoppedAt);
    const job = records.find((r) => r.id === a.jobId)!;
    expect(job).toMatchObject({ stage: "success", attempt: rerun.attempt });
    console.log(
      `${entry.name} SIGSTOP of ${c.child.name} during ${a.jobId}#${a.attempt} (stop ${stops}; ended ${late.result}, rejected), rerun #${rerun.attempt} by pid ${rerun.pid}: ${JSON.stringify(figures)}, ${Math.round(now() - started)} ms`,
    );
  });
});
