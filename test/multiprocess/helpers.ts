/**
 * Shared set-up of the multi-process tests: a temp folder per test, child
 * processes running `worker-child.mjs` (their stdout read line by line),
 * condition waits with a deadline, and cleanup that SIGKILLs whatever is
 * still alive after each test.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach } from "vitest";
import { newJobId, RetryPolicy } from "@later/runtime";
import type { Backend, JobInsert, JobRecord } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { createPostgresSchema, postgresUrl } from "../support/postgres.js";

export const CHILD_SCRIPT = fileURLToPath(new URL("./worker-child.mjs", import.meta.url));

/** Polls `condition` every `intervalMs` (default 10) until it is truthy or `timeoutMs` passes (then throws naming `what`). */
export async function waitFor<T>(condition: () => T | Promise<T>, what: string, timeoutMs = 10_000, intervalMs = 10): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Which database a child (and the test) opens. */
export type BackendSpec = { kind: "sqlite"; file: string } | { kind: "postgres"; connectionString: string; schema: string };

/** What `worker-child.mjs` is told in its argv (JSON). */
export interface ChildConfig {
  backend: BackendSpec;
  namespace: string;
  workerCount: number;
  /** Appends each finished job id to this file (one line, before the handler returns). */
  logFile?: string;
  /** Prints `done <id> <attempt> <epochMs>` from each handler. */
  printDone?: boolean;
  /** Jobs whose payload is `{ hang: true }` print `started <id> <attempt>` and never finish. */
  hangOnPayload?: boolean;
  /** Jobs whose payload is `{ die: true }` print `dying <id> <attempt>` and SIGKILL their own process. */
  dieOnPayload?: boolean;
  /** Topics the child's server registers (its "work" handler runs their jobs too). */
  topics?: { name: string; partitions: number }[];
  /**
   * Each handler waits this long (ms) before it returns: the job's work. A
   * payload's `ms` overrides it, and a payload's `fail` makes attempts
   * 1..fail throw (see worker-child.mjs). Default 0.
   */
  handlerDelayMs?: number;
  /** Extra server options (leaseMs, pollIntervalMs, ...). */
  server?: Record<string, number>;
  /** Writes the attempt log (attempt-log-writer.mjs) here: every attempt's start and end, and every applied outcome write. */
  attemptLogFile?: string;
  /** More job types the child's "work" handler runs besides "work" (a type only this child handles: a probe of its wake-ups). */
  extraJobTypes?: string[];
}

/** Opens the backend a spec names, in the test process. */
export function openBackend(spec: BackendSpec, namespace: string): Backend {
  if (spec.kind === "sqlite") return sqlite({ file: spec.file, namespace });
  // The test's own connections carry another application_name than the children's, so killing theirs spares these.
  const url = new URL(spec.connectionString);
  url.searchParams.set("application_name", "later-test-parent");
  return postgres({ connectionString: url.toString(), schema: spec.schema, namespace, maxConnections: 4 });
}

/** A backend kind the multi-process tests run on: makes a fresh database per test. */
export interface ProcessBackendEntry {
  name: "sqlite" | "postgres";
  /** A fresh database; cleaned up after the test by `useProcesses`. */
  create(processes: Processes): Promise<BackendSpec>;
}

/** `application_name` of the children's PostgreSQL connections, so a test can find (and kill) exactly those. */
export function childApplicationName(spec: BackendSpec): string {
  return spec.kind === "postgres" ? `mp-${spec.schema}`.slice(0, 63) : "";
}

const SQLITE_ENTRY: ProcessBackendEntry = {
  name: "sqlite",
  create: async (processes) => ({ kind: "sqlite", file: join(processes.tempDir(), "jobs.db") }),
};

const POSTGRES_ENTRY: ProcessBackendEntry = {
  name: "postgres",
  async create(processes) {
    const db = await createPostgresSchema();
    processes.onCleanup(db.dispose);
    const url = new URL(db.url);
    url.searchParams.set("application_name", `mp-${db.schema}`.slice(0, 63));
    return { kind: "postgres", connectionString: url.toString(), schema: db.schema };
  },
};

/** The backends of the multi-process tests; PostgreSQL only when the run has a server (see test/support/postgres-global-setup.ts). */
export const PROCESS_BACKENDS: ProcessBackendEntry[] = postgresUrl() === null ? [SQLITE_ENTRY] : [SQLITE_ENTRY, POSTGRES_ENTRY];
/** The PostgreSQL entry, or null when the run has no PostgreSQL. */
export const POSTGRES_PROCESS_BACKEND: ProcessBackendEntry | null = postgresUrl() === null ? null : POSTGRES_ENTRY;

export class Child {
  readonly lines: string[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly listeners = new Set<() => void>();
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;

  constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    createInterface({ input: proc.stdout! }).on("line", (line) => {
      this.lines.push(line);
      for (const l of this.listeners) l();
    });
    createInterface({ input: proc.stderr! }).on("line", (line) => this.stderr.push(line));
    this.exited = new Promise((resolve) => {
      proc.once("exit", (code, signal) => {
        this.exitInfo = { code, signal };
        for (const l of this.listeners) l();
        resolve(this.exitInfo);
      });
    });
  }

  get alive(): boolean {
    return this.exitInfo === null;
  }

  /** Resolves with the first stdout line (already seen or future) matching `test`; rejects after `timeoutMs` or when the child exits first. */
  waitForLine(test: (line: string) => boolean, what: string, timeoutMs = 10_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.lines.find(test);
        if (hit !== undefined) return finish(() => resolve(hit));
        if (this.exitInfo) {
          return finish(() => reject(new Error(`${this.name} exited (${JSON.stringify(this.exitInfo)}) before ${what}; stderr:\n${this.stderr.join("\n")}`)));
        }
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`${this.name}: timed out after ${timeoutMs} ms waiting for ${what}; stderr:\n${this.stderr.join("\n")}`))),
        timeoutMs,
      );
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        settle();
      };
      this.listeners.add(check);
      check();
    });
  }

  /** Waits for the child's `ready <instanceId>` line; returns the instance id. */
  async ready(timeoutMs = 15_000): Promise<string> {
    const line = await this.waitForLine((l) => l.startsWith("ready "), "ready", timeoutMs);
    return line.slice("ready ".length);
  }

  /** Graceful stop: asks the child to shut its server down, then waits for it to exit (SIGKILL after `timeoutMs`). */
  async stop(timeoutMs = 10_000): Promise<void> {
    if (!this.alive) return;
    this.proc.stdin!.end("stop\n");
    const timer = setTimeout(() => this.kill(), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** SIGKILL (no cleanup of any kind in the child), then waits for the exit. */
  async kill(): Promise<void> {
    if (this.alive) this.proc.kill("SIGKILL");
    await this.exited;
  }

  /** Lines the child printed for runtime error events. */
  errorLines(): string[] {
    return this.lines.filter((l) => l.startsWith("event-error "));
  }

  /** The runtime error events the child printed, parsed (`code` null when the event had none). */
  errorEvents(): { code: string | null; where: string; error: string }[] {
    return this.errorLines().map((line) => {
      const m = /^event-error (\S+) (.*?): (.*)$/.exec(line);
      if (!m) throw new Error(`${this.name}: malformed error line: ${line}`);
      return { code: m[1] === "-" ? null : m[1]!, where: m[2]!, error: m[3]! };
    });
  }
}

/**
 * One per test file: `tempDir()` makes a fresh folder, `spawnChild()` starts a
 * child; after each test every child still alive is SIGKILLed, every backend
 * registered with `track` is closed, the folders are removed and the
 * `onCleanup` callbacks run (dropping PostgreSQL schemas).
 */
export interface Processes {
  tempDir(): string;
  spawnChild(name: string, config: ChildConfig): Child;
  /** Like `spawnChild`, for another child script (an absolute path) that takes its own JSON config in argv[2]. */
  spawnScript(name: string, script: string, config: unknown): Child;
  track(backend: Backend): Backend;
  /** Runs `cleanup` after the test, once children and backends are gone. */
  onCleanup(cleanup: () => Promise<void>): void;
}

export function useProcesses(): Processes {
  const children: Child[] = [];
  const dirs: string[] = [];
  const backends: Backend[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(children.splice(0).map((c) => c.kill()));
    await Promise.all(backends.splice(0).map((b) => b.close()));
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  const spawnScript = (name: string, script: string, config: unknown): Child => {
    const proc = spawn(process.execPath, [script, JSON.stringify(config)], { stdio: ["pipe", "pipe", "pipe"] });
    const child = new Child(name, proc);
    children.push(child);
    return child;
  };
  return {
    onCleanup(cleanup) {
      cleanups.push(cleanup);
    },
    tempDir() {
      const dir = mkdtempSync(join(tmpdir(), "later-mp-"));
      dirs.push(dir);
      return dir;
    },
    spawnChild(name, config) {
      return spawnScript(name, CHILD_SCRIPT, config);
    },
    spawnScript,
    track(backend) {
      backends.push(backend);
      return backend;
    },
  };
}

/** Rows for `jobs.insertMany`: job type "work", runnable now (or at `runAt`), with the given payloads. */
export function jobRows(payloads: readonly unknown[], options: { now: number; runAt?: number; retry?: RetryPolicy }): JobInsert[] {
  const retryPolicy = JSON.stringify(options.retry ?? RetryPolicy.fixed(3, 0));
  return payloads.map((payload) => ({
    id: newJobId(options.now),
    jobType: "work",
    payload: JSON.stringify(payload),
    runAt: options.runAt ?? options.now,
    retryPolicy,
  }));
}

/** Every job record of the backend's namespace, paging through `jobList`. */
export async function allJobs(backend: Backend): Promise<JobRecord[]> {
  const out: JobRecord[] = [];
  let afterId: string | undefined;
  for (;;) {
    const page = await backend.inspect.jobList({ limit: 1000, ...(afterId === undefined ? {} : { afterId }) });
    out.push(...page);
    if (page.length < 1000) return out;
    afterId = page[page.length - 1]!.id;
  }
}

/**
 * SQLite only (true otherwise): whether the write lock can be taken within
 * `waitMs`. A process SIGSTOPped inside a write transaction holds the lock and
 * stalls every writer; a running writer holds it for milliseconds, so a lock
 * still held after 250 ms or so is the stopped process's.
 */
export function sqliteWriteLockFree(spec: BackendSpec, waitMs: number): boolean {
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
