/**
 * Partition order under real faults (docs/semantics.md P3, P5, P6): three child
 * processes (partition-child.mjs) run a topic of 8 partitions whose jobs fail
 * and sleep at random; one run without faults, one where the owner of a busy
 * partition is SIGKILLed, one where an owner is SIGSTOPped past its lease and
 * then continued.
 *
 * Every child writes the attempt log (attempt-log-writer.mjs): the start
 * and end of each attempt and each outcome write the runner reports applied;
 * `checkAttemptLog` (attempt-log.ts) checks it against the job rows: nothing
 * lost, per key in enqueue order, one attempt at a time per partition, no
 * overlapping attempts that both had writes applied.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { newJobId, partitionForKey, RetryPolicy } from "@later/runtime";
import { prepareBackend, type Backend, type JobInsert } from "@later/runtime/internal";
import { attemptLogNow, checkAttemptLog, readAttemptLog, type Attempt } from "./attempt-log.js";
import {
  allJobs,
  openBackend,
  PROCESS_BACKENDS,
  sqliteWriteLockFree,
  useProcesses,
  waitFor,
  type BackendSpec,
  type Child,
  type Processes,
  type ProcessBackendEntry,
} from "./helpers.js";
import { withClient } from "../support/postgres.js";

const NAMESPACE = "mp";
const PARTITIONS = 8;
const SCRIPT = fileURLToPath(new URL("./partition-child.mjs", import.meta.url));
const RETRY = JSON.stringify(RetryPolicy.fixed(20, 0));
/** Short leases and member expiry, so a dead or frozen owner's partitions move within seconds. */
const FAULT_SERVER = { leaseMs: 2_000, partitionMemberExpiryMs: 1_500, pollIntervalMs: 50 };
const now = attemptLogNow;

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
  /** Extra options of postgres() (child-backend.mjs). Each child's sessions are named `later-<its name>` (application_name). */
  postgres?: Record<string, unknown>;
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
      backend: spec.kind === "postgres" ? { ...spec, connectionString: withApplicationName(spec.connectionString, `later-${name}`) } : spec,
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

/** `url` with its `application_name` parameter set to `name` (a URL parameter wins over postgres()'s option). */
function withApplicationName(url: string, name: string): string {
  const u = new URL(url);
  u.searchParams.set("application_name", name);
  return u.toString();
}

/**
 * What a failed wait for a takeover prints: the stopped job's partition row and
 * unfinished jobs, the members, every attempt of the job in the logs and, on
 * PostgreSQL, the sessions inside a transaction (a frozen one holds its locks).
 */
async function stuckState(run: Run, a: Attempt, logs: string[]): Promise<string> {
  const attempts = readAttemptLog(logs).attempts.filter((x) => x.jobId === a.jobId);
  const lines = [`attempts of ${a.jobId}: ${JSON.stringify(attempts)}`, `children: ${JSON.stringify(run.children.map((c) => [c.child.name, c.pid, c.id]))}`];
  if (run.spec.kind !== "postgres") return lines.join("\n");
  const { schema } = run.spec;
  await withClient(run.spec.connectionString, async (client) => {
    const q = async (label: string, sql: string, values: unknown[] = []) => lines.push(`${label}: ${JSON.stringify((await client.query(sql, values)).rows)}`);
    const [job] = (await client.query(`SELECT topic, partition_no FROM ${schema}.later_jobs WHERE id = $1`, [a.jobId])).rows;
    await q("partition", `SELECT * FROM ${schema}.later_partitions WHERE topic = $1 AND partition_no = $2`, [job?.topic, job?.partition_no]);
    await q(
      "unfinished",
      `SELECT id, stage, attempt, seq, lease_owner, run_at FROM ${schema}.later_jobs WHERE topic = $1 AND partition_no = $2 AND stage NOT IN ('success', 'failed', 'cancelled') ORDER BY seq LIMIT 12`,
      [job?.topic, job?.partition_no],
    );
    await q("members", `SELECT * FROM ${schema}.later_partition_members`);
    await q(
      "in transaction",
      `SELECT pid, state, wait_event_type, now() - xact_start AS age, left(query, 160) AS query FROM pg_stat_activity WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid()`,
    );
  });
  return lines.join("\n");
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
    const figures = checkAttemptLog(
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
    const figures = checkAttemptLog(
      records,
      run.children.map((c) => c.logFile),
      { killed: new Map([[victim.pid, diedAt]]) },
    );
    // The busy partition was finished by the survivors.
    const { attempts } = readAttemptLog(run.children.map((c) => c.logFile));
    const finishers = new Set(
      records
        .filter((r) => r.partition === busy.partition)
        .map((r) => attempts.find((a) => a.jobId === r.id && a.attempt === r.attempt && a.applied?.stage === "success")?.pid ?? victim.pid),
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
      const head = await waitFor(() => readAttemptLog(logs).attempts.find((a) => a.key === slow.key && a.end === null), "a slow head to start", 20_000);
      const c = run.children.find((x) => x.pid === head.pid)!;
      c.child.proc.kill("SIGSTOP");
      const at = now();
      const still = readAttemptLog([c.logFile]).attempts.find((a) => a.jobId === head.jobId && a.attempt === head.attempt)!;
      if (still.end === null && sqliteWriteLockFree(run.spec, 250)) stopped = { c, a: head, at };
      else c.child.proc.kill("SIGCONT");
    }
    const { c, a, at: stoppedAt } = stopped;
    // Another child takes the partition over once the lease expired, and runs that job to success (under the
    // same attempt number when the stopped one was inside a run, P3: it was never written, or put back unstarted).
    const rerun = await waitFor(
      () => readAttemptLog(logs).attempts.find((x) => x.jobId === a.jobId && x.attempt >= a.attempt && x.pid !== c.pid && x.applied?.stage === "success"),
      "another child to run the stopped head to success",
      20_000,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await stuckState(run, a, logs)}`);
    });
    c.child.proc.kill("SIGCONT");
    const continuedAt = now();
    const late = await waitFor(
      () => readAttemptLog([c.logFile]).attempts.find((x) => x.jobId === a.jobId && x.attempt === a.attempt && x.end !== null),
      "the stopped attempt to end",
      10_000,
    );
    await allSucceed(run.parent, total, 30_000);
    await Promise.all(run.children.map((x) => x.child.stop()));
    const records = await allJobs(run.parent);
    const figures = checkAttemptLog(records, logs, {
      lateApplied: (x) => x.pid === c.pid && x.start < stoppedAt && x.applied !== null && x.applied.t > continuedAt,
      // The stopped attempt ended ok after its lease was taken over: its job ran again elsewhere, by design.
      faulted: (x) => x.jobId === a.jobId && x.attempt === a.attempt && x.pid === c.pid,
    });
    const final = readAttemptLog([c.logFile]).attempts.find((x) => x.jobId === a.jobId && x.attempt === a.attempt)!;
    expect(final.applied, "the stopped attempt's late completion was rejected").toBeNull();
    expect(["ok", "aborted"]).toContain(late.result);
    expect(rerun.start).toBeGreaterThan(stoppedAt);
    const job = records.find((r) => r.id === a.jobId)!;
    expect(job).toMatchObject({ stage: "success", attempt: rerun.attempt });
    console.log(
      `${entry.name} SIGSTOP of ${c.child.name} during ${a.jobId}#${a.attempt} (stop ${stops}; ended ${late.result}, rejected), rerun #${rerun.attempt} by pid ${rerun.pid}: ${JSON.stringify(figures)}, ${Math.round(now() - started)} ms`,
    );
  });

  it.skipIf(entry.name !== "postgres")(
    "SIGSTOP inside one of later's transactions: the server ends it after idleInTransactionTimeoutMs, its locks go with it, the others finish every job meanwhile",
    async () => {
      const started = now();
      const idleMs = 1_000;
      const run = await startRun(entry, processes, {
        workerCount: 4,
        seed: 4,
        failProbability: 0.15,
        maxDelayMs: 3,
        server: FAULT_SERVER,
        postgres: { idleInTransactionTimeoutMs: idleMs },
      });
      const url = (run.spec as Extract<BackendSpec, { kind: "postgres" }>).connectionString;
      const total = await enqueue(run.parent, keys(100), 80); // enough work that the stops below find a transaction long before it runs out
      const logs = run.children.map((c) => c.logFile);
      await waitFor(() => readAttemptLog(logs).attempts.length > 100, "the children to be under way");
      // Stop a child at random moments until one of its sessions is caught waiting for it inside a
      // transaction (a partition claim, a run's finish): its locks, stage-counter rows included, stay held.
      let frozen: { c: RunChild; session: number; at: number } | null = null;
      let stops = 0;
      while (frozen === null) {
        if (stops === 100)
          throw new Error(
            `never caught a child inside a transaction in 100 stops: ${JSON.stringify(await withClient(url, async (client) => (await client.query("SELECT application_name, state, count(*) FROM pg_stat_activity GROUP BY 1, 2")).rows))}`,
          );
        const c = run.children[stops++ % run.children.length]!;
        c.child.proc.kill("SIGSTOP");
        const at = now();
        const [session] = await withClient(
          url,
          async (client) =>
            (await client.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'`, [`later-${c.child.name}`]))
              .rows,
        );
        if (session) frozen = { c, session: Number(session.pid), at };
        else c.child.proc.kill("SIGCONT");
      }
      const { c, session, at: stoppedAt } = frozen;
      // The server ends that session though its process stays stopped: the timeout is the transaction's own.
      await waitFor(
        () => withClient(url, async (client) => (await client.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [session])).rowCount === 0),
        `the stopped child's session ${session} to be ended by the server`,
        idleMs + 10_000,
        50,
      );
      const endedAfter = Math.round(now() - stoppedAt);
      // Nothing waits for the stopped child any more: the others take its partitions over and finish every job.
      await allSucceed(run.parent, total, 45_000);
      c.child.proc.kill("SIGCONT");
      const continuedAt = now();
      await Promise.all(run.children.map((x) => x.child.stop()));
      const figures = checkAttemptLog(await allJobs(run.parent), logs, {
        lateApplied: (x) => x.pid === c.pid && x.start < stoppedAt && x.applied !== null && x.applied.t > continuedAt,
        faulted: (x) => x.pid === c.pid && x.start < stoppedAt && (x.end === null || x.end > stoppedAt),
      });
      // Resumed, the stopped child found its connection gone: its transaction failed, nothing else did.
      for (const x of run.children) if (x !== c) expect(x.child.errorLines()).toEqual([]);
      expect(c.child.errorEvents().map((e) => e.code)).toEqual(c.child.errorEvents().map(() => "DATABASE_UNAVAILABLE"));
      console.log(
        `${entry.name} SIGSTOP of ${c.child.name} inside a transaction (stop ${stops}): session ended by the server after ${endedAfter} ms (idleInTransactionTimeoutMs ${idleMs}); its errors after SIGCONT: ${JSON.stringify(c.child.errorLines())}; ${JSON.stringify(figures)}, ${Math.round(now() - started)} ms`,
      );
    },
  );
});
