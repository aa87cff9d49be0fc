/**
 * Injects the soak's faults, one at a time, at random: after a pause drawn
 * from `gapMs`, a kind drawn by `weights`, then the fault itself, recorded in
 * the {@link FaultLog}:
 * - `sigkill`: a random worker process is SIGKILLed and replaced;
 * - `sigstop`: a random worker process is SIGSTOPped for `stopMs` (past its
 *   leases and its partition membership), then continued. Not while it is
 *   inside a transaction (SQLite: holding the write lock; PostgreSQL: a
 *   session of its not `idle`): frozen there it would stall the other
 *   processes' writes, lease renewals included, and their claims would be
 *   taken over for a reason no fault of theirs explains. Such a try is
 *   undone at once (SIGCONT after 250 ms), counted as skipped, and another
 *   process (or the same, later) is tried, up to 10 times;
 * - `connection-kill` (PostgreSQL): `pg_terminate_backend` of every worker
 *   connection, pool and LISTEN;
 * - `restart-fast`, `restart-immediate` (PostgreSQL): `pg_ctl restart` of
 *   the soak's own throwaway cluster.
 *
 * Each fault draws from a generator forked off the seeded one, so how many
 * tries a SIGSTOP needed does not shift the choices after it: a seed gives the
 * same kinds, pauses and victims (by start order) every run.
 *
 * ```text
 *   start() ──► injecting (pause, fault, pause, ...) ──stop()──► stopped
 *   stop() waits for the fault under way (a SIGSTOP runs its full length)
 * ```
 */
import { setTimeout as sleep } from "node:timers/promises";
import { attemptLogNow } from "../multiprocess/attempt-log.js";
import { sqliteWriteLockFree, type BackendSpec, type Child } from "../multiprocess/helpers.js";
import { withClient } from "../support/postgres.js";
import type { SeededRandom } from "../support/seeded-random.js";
import type { ThrowawayCluster } from "../support/throwaway-cluster.js";
import type { FaultKind, FaultLog } from "./fault-log.js";
import type { WorkerFleet } from "./worker-fleet.js";

export interface FaultInjectorOptions {
  fleet: WorkerFleet;
  log: FaultLog;
  random: SeededRandom;
  /** Relative weight of each kind; a kind missing (or 0) never happens. */
  weights: Partial<Record<FaultKind, number>>;
  /** The pause before each fault, drawn from [min, max] ms. */
  gapMs: readonly [number, number];
  /** How long a SIGSTOP lasts: past the stopped process's leases and its partition membership. */
  stopMs: number;
  spec: BackendSpec;
  /** PostgreSQL: the soak's own cluster (restarts; pg_stat_activity and pg_terminate_backend through its URL). */
  cluster?: ThrowawayCluster;
  /** PostgreSQL: the prefix of the worker processes' `application_name` (see WorkerFleet). */
  appPrefix: string;
}

const STOP_TRIES = 10;

export class FaultInjector {
  /** Failures of the injector itself (a restart that did not come back): findings. */
  readonly errors: string[] = [];
  private loop: Promise<void> | null = null;
  private readonly stopping = new AbortController();

  constructor(private readonly options: FaultInjectorOptions) {
    const needsCluster: FaultKind[] = ["connection-kill", "restart-fast", "restart-immediate"];
    if (!options.cluster && needsCluster.some((k) => (options.weights[k] ?? 0) > 0)) throw new Error("PostgreSQL faults need the cluster");
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** No fault after this; resolves once the fault under way (if any) is over. Idempotent. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { random, weights, gapMs } = this.options;
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      const pause = random.int(gapMs[0], gapMs[1]);
      const kind = random.weighted(weights as Record<FaultKind, number>);
      const own = random.fork();
      try {
        await sleep(pause, undefined, { signal });
      } catch {
        return; // stopped during the pause
      }
      try {
        await this.inject(kind, own);
      } catch (error) {
        this.errors.push(`${kind}: ${(error as Error).message}`);
      }
    }
  }

  private async inject(kind: FaultKind, random: SeededRandom): Promise<void> {
    const { fleet, log, cluster } = this.options;
    switch (kind) {
      case "sigkill": {
        const victim = random.pick(fleet.live());
        const fault = log.begin("sigkill", victim.proc.pid!);
        await fleet.kill(victim);
        log.end(fault);
        await fleet.fillUp();
        return;
      }
      case "sigstop":
        return this.freeze(random);
      case "connection-kill": {
        const fault = log.begin(kind);
        await withClient(cluster!.url, async (c) => {
          // In the select list, so only the rows the WHERE kept are terminated.
          const sql = "SELECT pid, pg_terminate_backend(pid) AS signalled FROM pg_stat_activity WHERE application_name LIKE $1";
          const pids = (await c.query(sql, [`${this.options.appPrefix}%`])).rows.map((r) => Number(r.pid));
          fault.connections = pids.length;
          // pg_terminate_backend only signals: the fault lasts until those sessions are gone.
          const left = async () => Number((await c.query("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ANY($1)", [pids])).rows[0].n);
          for (let waited = 0; (await left()) > 0 && waited < 5_000; waited += 20) await sleep(20);
        });
        log.end(fault);
        return;
      }
      case "restart-fast":
      case "restart-immediate": {
        const fault = log.begin(kind);
        try {
          await cluster!.restart(kind === "restart-fast" ? "fast" : "immediate");
        } finally {
          log.end(fault);
        }
        return;
      }
    }
  }

  /** SIGSTOP of a random process outside any transaction, for `stopMs`; then SIGCONT. */
  private async freeze(random: SeededRandom): Promise<void> {
    const { fleet, log, stopMs } = this.options;
    for (let tries = 0; tries < STOP_TRIES; tries++) {
      const victim = random.pick(fleet.live());
      victim.proc.kill("SIGSTOP");
      const stoppedAt = attemptLogNow();
      const inside = await this.insideTransaction(victim).catch((error: unknown) => {
        victim.proc.kill("SIGCONT"); // never leave a process stopped
        throw error;
      });
      if (inside) {
        victim.proc.kill("SIGCONT");
        log.skip("sigstop inside a transaction (undone)");
        await sleep(random.int(50, 500));
        continue;
      }
      const fault = log.begin("sigstop", victim.proc.pid!, stoppedAt);
      try {
        await sleep(Math.max(0, stoppedAt + stopMs - attemptLogNow()));
      } finally {
        victim.proc.kill("SIGCONT");
        log.end(fault);
      }
      return;
    }
    log.skip("sigstop: no process outside a transaction");
  }

  /** True when the stopped `child` holds SQLite's write lock, or a PostgreSQL session of its is not idle (seen after 250 ms). */
  private async insideTransaction(child: Child): Promise<boolean> {
    const { spec, cluster, fleet } = this.options;
    if (spec.kind === "sqlite") return !sqliteWriteLockFree(spec, 250);
    await sleep(250);
    // Not idle: inside a transaction, or a statement still running (which may be inside one, or open one).
    const sql = "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND state IS DISTINCT FROM 'idle'";
    return withClient(cluster!.url, async (c) => Number((await c.query(sql, [fleet.appName(child)])).rows[0].n) > 0);
  }
}
