// later (@later/runtime) as a bench system, on PostgreSQL (target.pgUrl) or
// SQLite (target.file). See bench/systems/README in bench/README.md for the
// interface every system module implements.
import * as later from "@later/runtime";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { storedStageCounts, turnCountersOff } from "../counters-off.js";
import { benchPublisher, JOB_TYPE, NAMESPACE } from "../lib.js";

export const completionIsStored = true; // the "success" event is sent after the outcome batch commits

// Loaded when this module is, before the phase child says "ready", as every
// other system's library is: module loading is not part of a timed phase.
async function runtime() {
  return { ...later, postgres, sqlite };
}

/** `target.variant === "countersOff"`: the same build with the stage counters turned off (bench/counters-off.js). */
const countersOff = (target) => target.variant === "countersOff";

/** One middleware that only calls `next()` (X10), around every enqueue and every attempt: what an empty middleware costs. */
const EMPTY_MIDDLEWARE = { enqueue: (_ctx, next) => next(), attempt: (_ctx, next) => next() };
/** `target.variant === "emptyMiddleware"`: the publisher's and the server's `middleware` option, else nothing. */
const middlewareOf = (target) => (target.variant === "emptyMiddleware" ? { middleware: [EMPTY_MIDDLEWARE] } : {});

/**
 * A backend for `target`, made and never opened: `sqlite()` / `postgres()`
 * load their driver (better-sqlite3, pg) on first use, about 40 ms for `pg`
 * here, which graphile-worker and pg-boss pay when their module is imported.
 * Called by system-phase.js before the child says "ready".
 */
export async function preload(target) {
  const m = await runtime();
  if (target.file) m.sqlite({ file: target.file, namespace: NAMESPACE });
  else m.postgres({ connectionString: target.pgUrl, namespace: NAMESPACE });
}

async function newBackend(target) {
  const m = await runtime();
  if (countersOff(target)) await turnCountersOff(target);
  if (target.file) return m.sqlite({ file: target.file, namespace: NAMESPACE });
  if (typeof m.postgres !== "function") throw new Error("n/a: @later/runtime does not export postgres() yet");
  return m.postgres({ connectionString: target.pgUrl, namespace: NAMESPACE, ...(target.backendOptions ?? {}) });
}

export async function prepare(target) {
  const backend = await newBackend(target);
  await backend.open();
  await backend.migrations.up();
  await backend.close();
}

/** A standalone JobPublisher (the class behind server.publisher) with no server: nothing here claims jobs. */
export async function openEnqueuer(target) {
  const { JobPublisher, RetryPolicy, systemClock } = await runtime();
  const backend = await newBackend(target);
  await backend.open();
  const publisher = benchPublisher({ JobPublisher, RetryPolicy, systemClock }, backend, { ...middlewareOf(target) });
  return {
    bulk: (payloads) => publisher.enqueueMany(JOB_TYPE, payloads),
    single: (payload) => publisher.enqueue(JOB_TYPE, payload),
    close: () => backend.close(),
  };
}

/**
 * Starts a server with `concurrency` workers. `onJob(payload)` runs at handler
 * start; `onDone()` once per job stored as succeeded; `onError(text)` on error events.
 */
export async function startWorkers(target, { concurrency, onJob, onDone, onError }) {
  const { BackgroundJobServer } = await runtime();
  const server = await BackgroundJobServer.start({
    context: {},
    backend: await newBackend(target),
    workerCount: concurrency,
    ...middlewareOf(target),
    // pollIntervalMs left at its default (1000): wake-ups come from LISTEN/NOTIFY (PostgreSQL) or the WAL watcher (SQLite).
    // `target.variant === "discard"`: the type keeps no succeeded job (J11 `successMs: 0`: the success deletes its row).
    handlers: {
      [JOB_TYPE]: { handle: async (_ctx, payload) => onJob(payload), ...(target.variant === "discard" ? { retention: { successMs: 0 } } : {}) },
    },
    onEvent: (e) => {
      if (e.type === "job" && e.stage === "success") onDone();
      else if (e.type === "error") onError(`${e.where}: ${e.error}`);
    },
  });
  return {
    settings: `workerCount ${concurrency}, pollIntervalMs default (1000)${countersOff(target) ? ", stage counters off (bench/counters-off.js)" : ""}${target.variant === "emptyMiddleware" ? ", one empty middleware (enqueue and attempt call next())" : ""}${target.variant === "discard" ? ", retention { successMs: 0 } (a success deletes its row)" : ""}`,
    stored: async () => (countersOff(target) ? storedStageCounts(target, NAMESPACE) : (await server.backend.inspect.stageCounts()).counts),
    stop: () => server.shutdown({ deadlineMs: 5000 }),
  };
}
