/**
 * PostgreSQL restarts and outages (issue 16): four worker processes run
 * partitioned and plain jobs on a cluster of the test's own (throwaway,
 * `fsync=off`, its own port) while the test process enqueues; the cluster
 * is restarted with `pg_ctl restart -m fast`, then `-m immediate`, then
 * stopped for 30 s, and a fifth worker process is started during that
 * outage. Throughout:
 * - no process exits, and every error event they report has the code
 *   `DATABASE_UNAVAILABLE` (no raw driver error, no other failure);
 * - after each restart and after the outage, every process's LISTEN
 *   connection is back (seen in `pg_stat_activity`) and wakes it: with a
 *   30 s poll interval, only a notification can start a job within seconds,
 *   so a probe job of a type only that process handles must start within
 *   {@link WAKE_BOUND_MS};
 * - the fifth process, started while the database is down, reports
 *   `DATABASE_UNAVAILABLE` error events from `start()`, which waits, and it
 *   runs jobs once the database is back;
 * - at the end every stored job ran exactly once (attempt-log.ts), each
 *   partition in sequence order, each key in enqueue order.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BackgroundJobServer, newJobId, RetryPolicy, type ServerEvent, type ServerOptions } from "@later/runtime";
import { prepareBackend, type JobInsert } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { withClient } from "../support/postgres.js";
import { findPostgresBinaries, startThrowawayCluster, type ShutdownMode, type ThrowawayCluster } from "../support/throwaway-cluster.js";
import { attemptLogNow, checkAttemptLog, type Attempt } from "./attempt-log.js";
import { JobProducer } from "./job-producer.js";
import { allJobs, openBackend, useProcesses, waitFor, type BackendSpec, type Child } from "./helpers.js";

const NAMESPACE = "mp";
const TOPIC = { name: "orders", partitions: 8 };
const CHILD_APP = "later-restart-child";
const OUTAGE_MS = 30_000;
/**
 * A probe job enqueued once the children are idle must start within this: generous (a notification
 * takes milliseconds; this leaves room for a loaded machine), and still far below their 30 s poll.
 */
const WAKE_BOUND_MS = 10_000;
/** The first test's own timeout: about a minute of faults (30 s of it the outage) and checks, with room for a loaded machine. */
const RUN_TIMEOUT_MS = 180_000;
const SERVER = {
  /** Only a notification (or the listener's reconnect) wakes an idle child before this. */
  pollIntervalMs: 30_000,
  /**
   * Above the outage: a lease renewed at most a third of it before the
   * database went away still holds when it is back, so no job is taken from
   * a process that is merely cut off (which would run it twice: leases are
   * how a cut-off process and a dead one look alike).
   */
  leaseMs: 60_000,
  stuckGraceMs: 1_000,
  rescueIntervalMs: 1_000,
};

/** A time span around a fault the test caused, in ms on the attempt log's clock (attemptLogNow). */
interface Fault {
  what: string;
  from: number;
  to: number;
}

const now = attemptLogNow;
const bin = findPostgresBinaries();

describe.skipIf(bin === null && process.env.CI !== "true")("PostgreSQL restarts and outages", () => {
  const processes = useProcesses();

  it("4 worker processes ride out restart -m fast, restart -m immediate and a 30 s outage (a 5th starting during it): no exit, only DATABASE_UNAVAILABLE, wake-ups resume, every job once and in order", {
    timeout: RUN_TIMEOUT_MS,
  }, async () => {
    const started = now();
    const cluster = await startThrowawayCluster();
    processes.onCleanup(() => cluster.destroy());
    const childUrl = new URL(cluster.url);
    childUrl.searchParams.set("application_name", CHILD_APP);
    const spec: BackendSpec = { kind: "postgres", connectionString: childUrl.toString(), schema: "later" };
    const parent = processes.track(openBackend(spec, NAMESPACE));
    await prepareBackend(parent, true);

    const dir = processes.tempDir();
    const logs: string[] = [];
    const spawn = (i: number): Child => {
      const attemptLogFile = join(dir, `child-${i}.log`);
      logs.push(attemptLogFile);
      return processes.spawnChild(`child-${i}`, {
        backend: spec,
        namespace: NAMESPACE,
        workerCount: 4,
        topics: [TOPIC],
        printDone: true,
        attemptLogFile,
        extraJobTypes: [`probe-${i}`],
        handlerDelayMs: 2,
        server: SERVER,
      });
    };
    const children = [0, 1, 2, 3].map(spawn);
    await Promise.all(children.map((c) => c.ready()));

    const producer = new JobProducer({ backend: parent, topic: TOPIC, keys: 40, partitioned: 10, plain: 10, intervalMs: 30 });
    producer.start();
    const faults: Fault[] = [];
    const wakeLatencies: Record<string, number[]> = {};
    const alive = () => {
      for (const c of children) if (!c.alive) throw new Error(`${c.name} exited: ${c.stderr.join("\n")}`);
      return true;
    };
    /** Stored successes, or null while the database is unreachable. */
    const succeeded = async () => {
      alive();
      return (await parent.inspect.stageCounts().catch(() => null))?.counts.success ?? null;
    };
    /** Waits for `jobs` more successes than there are now. */
    const progress = async (jobs: number, what: string) => {
      const known = async () => {
        const n = await succeeded();
        return n === null ? null : { n }; // 0 is a count, not a miss
      };
      const from = (await waitFor(known, `the success count ${what}`, 30_000, 50)).n;
      await waitFor(async () => ((await succeeded()) ?? 0) >= from + jobs, `${jobs} more jobs to succeed ${what}`, 60_000, 50);
    };

    /**
     * Every child's LISTEN connection is back and wakes it: the producer
     * pauses and every job stored so far finishes (the children go idle, each
     * fetcher asleep for up to the 30 s poll); then one probe per child, of a
     * job type only that child handles, must start within WAKE_BOUND_MS.
     */
    const checkWakeups = async (label: string) => {
      await producer.pause();
      await waitFor(async () => (await succeeded()) === producer.ids.length, `every job stored so far to succeed ${label}`, 90_000, 50);
      await waitFor(
        () => listeners(cluster).then((n) => n === children.length),
        `${children.length} LISTEN connections ${label} (seen: pg_stat_activity)`,
        15_000,
        100,
      );
      const at = Date.now();
      const probes: JobInsert[] = children.map((_, i) => ({
        id: newJobId(at),
        jobType: `probe-${i}`,
        payload: "{}",
        runAt: at,
        retryPolicy: JSON.stringify(RetryPolicy.fixed(3, 0)),
      }));
      await producer.insert(probes);
      const committed = Date.now();
      const lines = await Promise.all(
        children.map((c, i) => c.waitForLine((l) => l.startsWith(`done ${probes[i]!.id} `), `its probe to run ${label}`, WAKE_BOUND_MS + 5_000)),
      );
      wakeLatencies[label] = lines.map((l) => Number(l.split(" ")[3]) - committed);
      producer.resume();
    };

    // 1. pg_ctl restart -m fast.
    await progress(500, "before the fast restart");
    const fast = await restart(cluster, "fast", faults);
    await progress(300, "after the fast restart");
    await checkWakeups(`after restart -m fast (${fast} ms)`);

    // 2. pg_ctl restart -m immediate: every server process killed at once, crash recovery at start.
    await progress(500, "before the immediate restart");
    const immediate = await restart(cluster, "immediate", faults);
    await progress(300, "after the immediate restart");
    await checkWakeups(`after restart -m immediate (${immediate} ms)`);

    // 3. The cluster stopped for 30 s, a fifth worker process started meanwhile.
    await progress(500, "before the outage");
    const outage: Fault = { what: "outage", from: now(), to: 0 };
    faults.push(outage);
    await cluster.stop("fast");
    const late = spawn(4);
    children.push(late);
    // Every process sees the outage as DATABASE_UNAVAILABLE error events (the late one from start(), the
    // others from their loops: at the latest the partition heartbeat, every 5 s) and none exits.
    await waitFor(
      () => alive() && children.every((c) => c.errorEvents().some((e) => e.code === "DATABASE_UNAVAILABLE")),
      "every process to report DATABASE_UNAVAILABLE during the outage",
      OUTAGE_MS - 5_000,
      100,
    );
    expect(late.errorEvents().filter((e) => e.where === "start").length, "the late process's start() reported the outage").toBeGreaterThan(0);
    expect(
      late.lines.some((l) => l.startsWith("ready ")),
      "the late process is not running before the database is back",
    ).toBe(false);
    // The outage itself: 30 s of wall time is the scenario, not a synchronisation.
    await new Promise((r) => setTimeout(r, Math.max(0, outage.from + OUTAGE_MS - now())));
    alive();
    await cluster.start();
    outage.to = now();
    await late.ready(30_000);
    await progress(300, "after the outage");
    await checkWakeups("after the 30 s outage");

    // The end: everything stored has run; the processes shut down gracefully.
    await producer.stop();
    await waitFor(async () => (await succeeded()) === producer.ids.length, "every stored job to succeed", 90_000, 100);
    alive();
    await Promise.all(children.map((c) => c.stop()));
    for (const c of children) expect(c.lines, `${c.name} shut down gracefully`).toContain("stopped");

    const records = await allJobs(parent);
    expect(records.map((r) => r.id).sort(), "the jobs stored are the jobs the producer stored").toEqual([...producer.ids].sort());
    // Killed with -m immediate, a server process quits at once, wherever it is: it may have committed
    // an outcome write (or a claim) whose reply it never sent. Nothing committed is lost (fsync=off
    // only matters when the operating system goes down), but the worker cannot know the write went in:
    // such an attempt has no applied line, and were its job run again, the crash would excuse that
    // duplicate. So attempts that ended shortly before or during that restart (an outcome is written
    // milliseconds after its end line; 5 s is room for a loaded machine) are `faulted`. A fast restart
    // or stop ends each session between statements, rolling back the one it interrupts, so every
    // committed write is answered: no excuse there, and none for the outage.
    const killWindow = faults.find((f) => f.what === "restart -m immediate")!;
    const faulted = (a: Attempt) => a.end !== null && a.end >= killWindow.from - 5_000 && a.end <= killWindow.to;
    const figures = checkAttemptLog(records, logs, { faulted });
    const events = children.flatMap((c) => c.errorEvents().map((e) => ({ ...e, child: c.name })));
    const byWhere: Record<string, number> = {};
    for (const e of events) byWhere[`${e.where} ${e.code ?? "(no code)"}`] = (byWhere[`${e.where} ${e.code ?? "(no code)"}`] ?? 0) + 1;
    console.log(
      `restarts: fast ${fast} ms, immediate ${immediate} ms; outage ${Math.round(outage.to - outage.from)} ms; jobs ${records.length} (${producer.unavailable} inserts retried); ` +
        `figures ${JSON.stringify({ ...figures, duplicates: figures.duplicates.length })}; wake latencies (ms) ${JSON.stringify(wakeLatencies)}; ` +
        `error events ${JSON.stringify(byWhere)}; ${Math.round(now() - started)} ms`,
    );
    expect(
      events.filter((e) => e.code !== "DATABASE_UNAVAILABLE"),
      "error events other than DATABASE_UNAVAILABLE",
    ).toEqual([]);
    expect(producer.otherErrors, "enqueue errors other than DATABASE_UNAVAILABLE").toEqual([]);
    expect(
      figures.duplicates.filter((d) => !d.excused),
      "jobs run twice outside the -m immediate window",
    ).toEqual([]);
    for (const bounds of Object.values(wakeLatencies)) for (const ms of bounds) expect(ms).toBeLessThan(WAKE_BOUND_MS);
    for (const c of children)
      expect(
        c.stderr.filter((l) => /Unhandled|uncaught|Error/i.test(l)),
        `${c.name} stderr`,
      ).toEqual([]);
  });

  it("start() and shutdown() with the database down: databaseWaitMs 0 and a missing database reject at once, shutdown keeps its deadline and the outcome it could not write is recovered by lease", async () => {
    const cluster = await startThrowawayCluster();
    processes.onCleanup(() => cluster.destroy());
    const events: ServerEvent[] = [];
    let release = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const ran: string[] = [];
    const options = (databaseUrl: string, extra: Partial<ServerOptions<object>> = {}): ServerOptions<object> => ({
      context: {},
      backend: postgres({ connectionString: databaseUrl, namespace: NAMESPACE }),
      autoMigrate: true,
      workerCount: 1,
      leaseMs: 1_000,
      stuckGraceMs: 200,
      rescueIntervalMs: 200,
      handlers: {
        work: {
          handle: async (ctx) => {
            ran.push(`${ctx.jobId}#${ctx.attempt}`);
            if (ctx.attempt === 1) await gate;
          },
        },
      },
      onEvent: (e) => events.push(e),
      ...extra,
    });
    const missing = new URL(cluster.url);
    missing.pathname = "/no_such_database";
    await expect(BackgroundJobServer.start(options(missing.toString())), "a missing database: no waiting").rejects.toMatchObject({
      code: "DATABASE_UNAVAILABLE",
      transient: false,
    });

    const server = await BackgroundJobServer.start(options(cluster.url));
    const id = await server.publisher.enqueue("work", {});
    await waitFor(() => ran.length === 1, "the job's first attempt to start");
    await cluster.stop("fast");
    const refused = Date.now();
    await expect(BackgroundJobServer.start(options(cluster.url, { databaseWaitMs: 0 })), "databaseWaitMs 0: no waiting").rejects.toMatchObject({
      code: "DATABASE_UNAVAILABLE",
      transient: true,
    });
    expect(Date.now() - refused).toBeLessThan(2_000);

    // The handler finishes while the database is down: its outcome cannot be written, and shutdown must not wait for it.
    release();
    await waitFor(() => events.some((e) => e.type === "error" && e.where === "complete"), "the outcome write to fail");
    const stopping = Date.now();
    const shutdown = await Promise.race([
      server.shutdown({ deadlineMs: 1_000 }).then(() => "ended"),
      new Promise((r) => setTimeout(r, 5_000, "still waiting after 5 s")),
    ]);
    expect(shutdown, "shutdown during the outage keeps its deadline").toBe("ended");
    expect(Date.now() - stopping).toBeLessThan(3_000);
    const errors = events.filter((e): e is Extract<ServerEvent, { type: "error" }> => e.type === "error");
    expect(errors.filter((e) => e.code !== "DATABASE_UNAVAILABLE")).toEqual([]);

    // Back up: another server's stuck-job sweep finds the lease expired and runs the job again (attempt 2).
    await cluster.start();
    const rescuer = await BackgroundJobServer.start(options(cluster.url));
    try {
      await waitFor(async () => (await rescuer.backend.inspect.jobGet({ id }))?.stage === "success", "the job to succeed on the other server", 15_000, 50);
      expect(ran).toEqual([`${id}#1`, `${id}#2`]);
    } finally {
      await rescuer.shutdown({ deadlineMs: 1_000 });
    }
  });
});

/** `pg_ctl restart -m <mode>`; records the fault's span; resolves to how long the restart took. */
async function restart(cluster: ThrowawayCluster, mode: ShutdownMode, faults: Fault[]): Promise<number> {
  const fault: Fault = { what: `restart -m ${mode}`, from: now(), to: 0 };
  faults.push(fault);
  await cluster.restart(mode);
  fault.to = now();
  return Math.round(fault.to - fault.from);
}

/** The children's LISTEN connections open now: connections of theirs whose last statement was the LISTEN. */
async function listeners(cluster: ThrowawayCluster): Promise<number> {
  return withClient(cluster.url, async (c) =>
    Number((await c.query("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %'", [CHILD_APP])).rows[0].n),
  ).catch(() => -1);
}
