/** Shared test set-up: servers on a fresh database, event recording, condition waits. */
import { sql } from "kysely";
import { afterEach, expect } from "vitest";
import { BackgroundJobServer, LaterError, systemClock, type Clock, type ServerEvent, type ServerOptions } from "@later/runtime";
import type { Backend, JobRecord } from "@later/runtime/internal";
import type { BackendEntry, TestDatabase } from "./backends.js";

/** Polls `condition` every 5 ms until it holds or `timeoutMs` passes (then throws with `what`). */
export async function waitFor<T>(condition: () => T | Promise<T>, what = "condition", timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export interface Harness {
  db: TestDatabase;
  events: ServerEvent[];
  /** Starts a server on the harness's database; `wrapBackend` may stand in for the backend it is given (to inject faults). */
  start<C>(
    options: Omit<ServerOptions<C>, "backend" | "context"> & { context?: C; namespace?: string; wrapBackend?: (backend: Backend) => Backend },
  ): Promise<BackgroundJobServer<C>>;
  /** Job events (type "job") for one job id. */
  stagesOf(jobId: string): string[];
}

/** Creates a harness per test; every server it started is shut down after the test. */
export function useHarness(entry: BackendEntry): () => Harness {
  let current: Harness | null = null;
  const servers: BackgroundJobServer<unknown>[] = [];
  const dbs: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.shutdown({ deadlineMs: 0 })));
    await Promise.all(dbs.splice(0).map((d) => d.dispose()));
    current = null;
  });
  return () => {
    if (current) return current;
    const events: ServerEvent[] = [];
    let db: TestDatabase | null = null;
    const h: Harness = {
      get db() {
        if (!db) throw new Error("call start() first");
        return db;
      },
      events,
      async start(options) {
        if (!db) {
          db = await entry.createDatabase();
          dbs.push(db);
        }
        const { namespace, onEvent, context, wrapBackend, ...rest } = options;
        const backend = db.backend(namespace);
        const server = await BackgroundJobServer.start({
          autoMigrate: true,
          pollIntervalMs: 50,
          ...rest,
          context: context as never,
          backend: wrapBackend ? wrapBackend(backend) : backend,
          onEvent: (e) => {
            events.push(e);
            onEvent?.(e);
          },
        });
        servers.push(server as BackgroundJobServer<unknown>);
        return server;
      },
      stagesOf: (jobId) => events.flatMap((e) => (e.type === "job" && e.jobId === jobId ? [e.stage] : [])),
    };
    current = h;
    return h;
  };
}

/** A promise with its resolve function, for handlers the test releases. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** The LaterError `p` rejects with (fails the test for anything else, or for none). */
export async function refusal(p: Promise<unknown>): Promise<LaterError> {
  try {
    await p;
  } catch (error) {
    expect(error).toBeInstanceOf(LaterError);
    return error as LaterError;
  }
  throw new Error("expected a LaterError");
}

/** The `code` of the LaterError that `p` rejects (or throws) with; fails the test for anything else or for no error. */
export async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    expect(e).toBeInstanceOf(LaterError);
    return (e as LaterError).code;
  }
  throw new Error("expected a LaterError");
}

/**
 * A wall clock whose `now()` can jump ahead while its sleeps keep wall
 * time: what a process sees when it resumes after a stall (SIGSTOP, a long
 * GC pause) before any of its timers has fired.
 */
export class StallingClock implements Clock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }
}

/** `backend`, with `store.method` calling the real one and then `after` with its result and arguments (before the caller sees the result). */
export function afterCall<S extends "jobs" | "partitions", K extends keyof Backend[S]>(
  backend: Backend,
  store: S,
  method: K,
  after: (
    result: Awaited<ReturnType<Extract<Backend[S][K], (...args: never[]) => unknown>>>,
    args: Parameters<Extract<Backend[S][K], (...args: never[]) => unknown>>,
  ) => void,
): Backend {
  const real = backend[store] as object;
  const wrapped = new Proxy(real, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      if (prop !== method) return value.bind(target);
      return async (...args: unknown[]) => {
        const result = await (value as (...a: unknown[]) => Promise<never>).apply(target, args);
        after(result, args as Parameters<Extract<Backend[S][K], (...args: never[]) => unknown>>);
        return result;
      };
    },
  });
  return new Proxy(backend, {
    get(target, prop) {
      if (prop === store) return wrapped;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The job once it reached a terminal stage. */
export async function settled(read: () => Promise<JobRecord | null>, what = "job"): Promise<JobRecord> {
  return waitFor(async () => {
    const j = await read();
    return j && (j.stage === "success" || j.stage === "failed" || j.stage === "cancelled") ? j : null;
  }, `${what} to finish`);
}

/** The stored `meta` column (X10) of every job of `db`, by id. */
export async function storedMeta(db: TestDatabase): Promise<Map<string, string | null>> {
  const app = db.appDatabase();
  try {
    const { rows } = await sql<{ id: string; meta: string | null }>`SELECT id, meta FROM later_jobs`.execute(app);
    return new Map(rows.map((r) => [r.id, r.meta]));
  } finally {
    await app.destroy();
  }
}
