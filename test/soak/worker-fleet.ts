/**
 * The soak's worker processes: a fixed number of `worker-child.mjs` children
 * (through `useProcesses`), each with its own attempt log and, on PostgreSQL,
 * its own `application_name` (`<appPrefix><index>`), so a fault can find the
 * connections of one process or of all of them.
 *
 * {@link fillUp} replaces a child the soak killed with a new one; a child
 * that exits on its own is a finding ({@link unexpectedExits} lists it), and
 * is replaced too, so the run can still finish.
 *
 * ```text
 *   start() ──► running (size children) ──stopAll()──► stopped (each shut down gracefully)
 * ```
 */
import { join } from "node:path";
import type { BackendSpec, Child, ChildConfig, Processes } from "../multiprocess/helpers.js";

export interface WorkerFleetOptions {
  processes: Processes;
  spec: BackendSpec;
  namespace: string;
  /** Worker processes kept running. */
  size: number;
  /** Workers per process. */
  workerCount: number;
  topic: { name: string; partitions: number };
  /** Server options of every child (leases, intervals). */
  server: Record<string, number>;
  /** Folder of the attempt logs. */
  dir: string;
  /** PostgreSQL: each child's `application_name` is this plus its index. */
  appPrefix: string;
}

export class WorkerFleet {
  /** Every child started, in start order (killed ones too: their output is part of the run). */
  readonly all: Child[] = [];
  /** The attempt log of every child started. */
  readonly logs: string[] = [];
  /** Children that exited without the soak killing or stopping them, with how. */
  readonly unexpectedExits: string[] = [];
  private readonly ended = new Set<Child>();
  private readonly appNames = new Map<Child, string>();

  constructor(private readonly options: WorkerFleetOptions) {}

  /** Starts `size` children; resolves once each is ready. */
  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.size }, () => this.spawn()));
  }

  /** Children alive and not ended by the soak, in start order. */
  live(): Child[] {
    return this.all.filter((c) => c.alive && !this.ended.has(c));
  }

  /** The `application_name` of a child's connections (PostgreSQL). */
  appName(child: Child): string {
    return this.appNames.get(child)!;
  }

  /** SIGKILLs `child`; resolves once it is dead. The caller replaces it. */
  async kill(child: Child): Promise<void> {
    this.ended.add(child);
    await child.kill();
  }

  /** Starts children until `size` are live: in place of those the soak killed, and of unexpected exits. */
  async fillUp(): Promise<void> {
    while (this.live().length < this.options.size) await this.spawn();
  }

  /** Graceful shutdown of every live child; returns the names of those that did not print `stopped`. */
  async stopAll(): Promise<string[]> {
    const live = this.live();
    for (const c of live) this.ended.add(c);
    await Promise.all(live.map((c) => c.stop(15_000)));
    return live.filter((c) => !c.lines.includes("stopped")).map((c) => c.name);
  }

  private async spawn(): Promise<Child> {
    const { processes, spec, namespace, workerCount, topic, server, dir, appPrefix } = this.options;
    const index = this.all.length;
    const attemptLogFile = join(dir, `worker-${index}.log`);
    const appName = `${appPrefix}${index}`;
    let backend = spec;
    if (spec.kind === "postgres") {
      const url = new URL(spec.connectionString);
      url.searchParams.set("application_name", appName);
      backend = { ...spec, connectionString: url.toString() };
    }
    const config: ChildConfig = { backend, namespace, workerCount, topics: [topic], attemptLogFile, server };
    const child = processes.spawnChild(`worker-${index}`, config);
    this.all.push(child);
    this.logs.push(attemptLogFile);
    this.appNames.set(child, appName);
    void child.exited.then((how) => {
      if (!this.ended.has(child)) this.unexpectedExits.push(`${child.name} exited (${JSON.stringify(how)}); stderr: ${child.stderr.slice(-5).join(" | ")}`);
    });
    // Long enough for a start during a PostgreSQL restart (start() waits for the database).
    await child.ready(60_000);
    return child;
  }
}
