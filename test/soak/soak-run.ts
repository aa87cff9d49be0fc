/**
 * One soak run on one backend ({@link runSoak}):
 *
 * 1. a database of its own: a temporary SQLite file, or a throwaway
 *    PostgreSQL cluster on its own port (restarts hit nothing else);
 * 2. four worker processes (`WorkerFleet`, each with four workers and the
 *    topic) and, in this process, a `JobProducer` of plain, delayed,
 *    continuation and partitioned jobs, some of whose attempts fail on
 *    purpose (the payload's `fail`), some of which take long (`ms`);
 * 3. the fault phase, `seconds` long: the `FaultInjector` makes random
 *    faults while the producer enqueues;
 * 4. the drain: no more faults nor jobs; every stored job must succeed within
 *    `drainMs`; then the processes shut down gracefully;
 * 5. the checks, from the database and the per-process logs (soak-report.ts).
 *
 * Every random choice (fault kinds, pauses, victims, payloads) comes from
 * `seed`; what the processes do with them depends on timing, as in production.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { join } from "node:path";
import { RetryPolicy } from "@later/runtime";
import { prepareBackend, type Backend, type JobRecord } from "@later/runtime/internal";
import { analyseAttemptLog, attemptLogNow, type AttemptLogFindings } from "../multiprocess/attempt-log.js";
import { allJobs, openBackend, waitFor, type BackendSpec, type Processes } from "../multiprocess/helpers.js";
import { JobProducer, type JobKind } from "../multiprocess/job-producer.js";
import { seededRandom } from "../support/seeded-random.js";
import { startThrowawayCluster, type ThrowawayCluster } from "../support/throwaway-cluster.js";
import { FaultInjector } from "./fault-injector.js";
import { FaultLog, type FaultKind } from "./fault-log.js";
import { WorkerFleet } from "./worker-fleet.js";

export type SoakBackend = "sqlite" | "postgres";

export interface SoakOptions {
  backend: SoakBackend;
  /** Length of the fault phase. */
  seconds: number;
  seed: number;
  processes: Processes;
  /** How long the drain may take. Default 180 s. */
  drainMs?: number;
}

/** Everything a run produced, for the report and the checks. */
export interface SoakResult {
  backend: SoakBackend;
  seed: number;
  seconds: number;
  /** Wall time of the set-up (database, processes), the fault phase, the drain and the whole run (ms). */
  took: { setup: number; faults: number; drain: number; total: number };
  /** Jobs stored, by kind; `plannedFailures`: attempts their payloads ask to fail. */
  jobs: Record<JobKind, number>;
  plannedFailures: number;
  /** Inserts the producer wrote again after a DATABASE_UNAVAILABLE. */
  insertsRetried: number;
  log: FaultLog;
  /** Ids the producer stored that the database does not hold, and the reverse. */
  missing: string[];
  extra: string[];
  findings: AttemptLogFindings;
  /** Every error event of every worker process (killed ones too). */
  errorEvents: { code: string | null; where: string; error: string }[];
  /** Stderr lines of the worker processes that report an error. */
  stderrErrors: string[];
  /** Anything else that went wrong: unexpected exits, a failed drain, enqueue errors, a process that did not shut down gracefully. */
  incidents: string[];
}

const NAMESPACE = "soak";
const TOPIC = { name: "orders", partitions: 8 };
const APP_PREFIX = "soak-w";

/**
 * Leases and intervals per backend. PostgreSQL's are above its restarts
 * (a `-m immediate` restart with crash recovery takes a few seconds on a
 * loaded machine): a lease that cannot be renewed during one must not
 * expire (see `leaseMs`), nor a membership whose heartbeat cannot be
 * written. A SIGSTOP lasts past both, and past the stuck-job sweep.
 */
const SERVER: Record<SoakBackend, Record<string, number>> = {
  sqlite: { leaseMs: 3_000, stuckGraceMs: 1_000, rescueIntervalMs: 500, partitionMemberExpiryMs: 3_000, pollIntervalMs: 200 },
  postgres: { leaseMs: 10_000, stuckGraceMs: 1_000, rescueIntervalMs: 1_000, partitionMemberExpiryMs: 10_000, pollIntervalMs: 500 },
};

/** Relative weight of each fault kind per backend (SQLite has no connections to kill and no server to restart). */
const WEIGHTS: Record<SoakBackend, Partial<Record<FaultKind, number>>> = {
  sqlite: { sigkill: 1, sigstop: 1 },
  postgres: { sigkill: 2, sigstop: 1, "connection-kill": 2, "restart-fast": 1, "restart-immediate": 1 },
};

/** How each job's attempts go: most take 0–5 ms, 2 % take 0.2–1.5 s (so faults find handlers running); 10 % fail once or twice. */
function work(random: () => number): Record<string, unknown> {
  const r = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const ms = random() < 0.02 ? r(200, 1_500) : r(0, 5);
  return random() < 0.1 ? { ms, fail: random() < 0.2 ? 2 : 1 } : { ms };
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const { backend, seconds, seed, processes, drainMs = 180_000 } = options;
  const started = attemptLogNow();
  const random = seededRandom(seed);
  const server = SERVER[backend];
  const { spec, cluster } = await database(backend, processes);
  const parent = processes.track(openBackend(spec, NAMESPACE));
  await prepareBackend(parent, true);

  const fleet = new WorkerFleet({
    processes,
    spec,
    namespace: NAMESPACE,
    size: 4,
    workerCount: 4,
    topic: TOPIC,
    server,
    dir: processes.tempDir(),
    appPrefix: APP_PREFIX,
  });
  await fleet.start();
  const producer = new JobProducer({
    backend: parent,
    topic: TOPIC,
    keys: 40,
    partitioned: 4,
    plain: 3,
    delayed: { count: 1, maxDelayMs: 3_000 },
    continuations: 2,
    intervalMs: 100,
    work,
    random: random.fork(),
    // Far more than planned failures and faults take: a job that fails for good is a finding.
    retryPolicy: RetryPolicy.fixed(20, 50),
  });
  const log = new FaultLog();
  const injector = new FaultInjector({
    fleet,
    log,
    random: random.fork(),
    weights: WEIGHTS[backend],
    gapMs: [1_000, 5_000],
    stopMs: Math.max(server.leaseMs! + server.stuckGraceMs!, server.partitionMemberExpiryMs!) + server.rescueIntervalMs! + 1_000,
    spec,
    ...(cluster ? { cluster } : {}),
    appPrefix: APP_PREFIX,
  });

  const faultsFrom = attemptLogNow();
  producer.start();
  injector.start();
  await sleep(seconds * 1_000); // the fault phase: its length is the scenario, not a synchronisation
  await injector.stop();
  await producer.stop();
  const drainFrom = attemptLogNow();

  const incidents: string[] = [];
  await fleet.fillUp();
  try {
    await drain(parent, producer.ids.length, drainMs);
  } catch (error) {
    incidents.push(`drain: ${(error as Error).message}`);
  }
  const drained = attemptLogNow();
  for (const name of await fleet.stopAll()) incidents.push(`${name} did not shut down gracefully`);

  const records = await allJobs(parent);
  const stored = new Set(records.map((r) => r.id));
  const produced = new Set(producer.ids);
  const findings = analyseAttemptLog(records, fleet.logs, {
    killed: log.killed(),
    lateApplied: (a) => log.lateApplied(a),
    faulted: (a) => log.excuse(a) !== null,
  });
  incidents.push(...fleet.unexpectedExits, ...injector.errors.map((e) => `fault injection failed: ${e}`));
  incidents.push(...producer.otherErrors.map((e) => `enqueue error: ${e}`));
  return {
    backend,
    seed,
    seconds,
    took: { setup: faultsFrom - started, faults: drainFrom - faultsFrom, drain: drained - drainFrom, total: attemptLogNow() - started },
    jobs: { ...producer.kinds },
    plannedFailures: producer.plannedFailures,
    insertsRetried: producer.unavailable,
    log,
    missing: producer.ids.filter((id) => !stored.has(id)),
    extra: records.filter((r: JobRecord) => !produced.has(r.id)).map((r) => r.id),
    findings,
    errorEvents: fleet.all.flatMap((c) => c.errorEvents()),
    stderrErrors: fleet.all.flatMap((c) => c.stderr.filter((l) => /Unhandled|uncaught|Error/i.test(l)).map((l) => `${c.name}: ${l}`)),
    incidents,
  };
}

/** The run's database: a temporary SQLite file, or a throwaway PostgreSQL cluster (destroyed after the test). */
async function database(backend: SoakBackend, processes: Processes): Promise<{ spec: BackendSpec; cluster?: ThrowawayCluster }> {
  if (backend === "sqlite") return { spec: { kind: "sqlite", file: join(processes.tempDir(), "jobs.db") } };
  const cluster = await startThrowawayCluster();
  processes.onCleanup(() => cluster.destroy());
  return { spec: { kind: "postgres", connectionString: cluster.url, schema: "later" }, cluster };
}

/** Waits until `total` jobs succeeded; throws at once when one failed for good, or after `timeoutMs`. */
async function drain(parent: Backend, total: number, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const { counts } = await parent.inspect.stageCounts();
      if (counts.failed > 0) throw new Error(`${counts.failed} jobs failed for good`);
      return counts.success === total;
    },
    `all ${total} jobs to succeed`,
    timeoutMs,
    250,
  );
}
