/**
 * Set-up of the retained-log conformance tests: a fresh database per test,
 * `RetainedLog`s opened on it (closed after the test), the records kept and
 * the other log tables' row counts (to show a refusal wrote nothing), and
 * refusal capture.
 */
import { setTimeout as wait } from "node:timers/promises";
import { sql } from "kysely";
import { afterEach, expect } from "vitest";
import { LaterError, RetainedLog, logTopic, type LogTopicConfig, type RetainedLogOptions } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import type { BackendEntry, TestDatabase } from "./backends.js";

/** The log tables besides the records' (whose storage differs by backend: see {@link RECORD_COUNT}). */
export const LOG_TABLES = ["later_log_topics", "later_log_partitions", "later_log_group_partitions", "later_log_group_members"];

/**
 * How many records the database keeps, by backend: PostgreSQL has a row per
 * record, SQLite a row per record batch (one append's records of one
 * partition, SQLite migration 10).
 */
const RECORD_COUNT: Record<string, string> = {
  sqlite: "SELECT coalesce(sum(record_count), 0) AS n FROM later_log_batches",
  postgres: "SELECT count(*) AS n FROM later_log_records",
};

export interface LogHarness {
  db: TestDatabase;
  clock: ManualClock;
  /** A RetainedLog on the test's database (topic "events" with 4 partitions unless `topics` is given). */
  open(options?: Partial<Omit<RetainedLogOptions, "backend">>): Promise<RetainedLog>;
  /** `records`: the records kept (whatever the backend stores them in); then the row count of every other log table, by table. */
  counts(): Promise<Record<string, number>>;
  /** Runs raw SQL on the test's database (for what only the next sessions write, e.g. a member's lease). */
  exec(text: string): Promise<void>;
}

export function useLog(entry: BackendEntry): () => Promise<LogHarness> {
  const logs: RetainedLog[] = [];
  const dbs: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(logs.splice(0).map((l) => l.close()));
    await Promise.all(dbs.splice(0).map((d) => d.dispose()));
  });
  return async () => {
    const db = await entry.createDatabase();
    dbs.push(db);
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const withApp = async <R>(body: (app: ReturnType<TestDatabase["appDatabase"]>) => Promise<R>): Promise<R> => {
      const app = db.appDatabase();
      try {
        return await body(app);
      } finally {
        await app.destroy();
      }
    };
    return {
      db,
      clock,
      async open(options = {}) {
        const topics: LogTopicConfig[] = options.topics ? [...options.topics] : [logTopic("events", 4)];
        const log = await RetainedLog.open({ autoMigrate: true, clock, ...options, topics, backend: db.backend() });
        logs.push(log);
        return log;
      },
      counts: () =>
        withApp(async (app) => {
          const kept = await sql.raw<{ n: number | string }>(RECORD_COUNT[entry.name]!).execute(app);
          const out: Record<string, number> = { records: Number(kept.rows[0]!.n) };
          for (const t of LOG_TABLES) {
            const r = await sql<{ n: number | string }>`SELECT count(*) AS n FROM ${sql.table(t)}`.execute(app);
            out[t] = Number(r.rows[0]!.n);
          }
          return out;
        }),
      exec: (text) => withApp(async (app) => void (await sql.raw(text).execute(app))),
    };
  };
}

/** The LaterError `p` rejects with (fails the test for anything else, or for none). */
export async function refusal(p: Promise<unknown> | (() => Promise<unknown>)): Promise<LaterError> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (error) {
    expect(error).toBeInstanceOf(LaterError);
    return error as LaterError;
  }
  throw new Error("expected a LaterError");
}

/** The poll interval of the consume tests' members, ms. */
export const POLL = 100;

/**
 * Advances `clock` one poll interval per 40 ms of wall time (2.5x: a 15 s
 * member expiry is 6 s of wall time, and a lease renewal has 8 s, far
 * beyond a step's work even on a loaded machine) until `done()` holds (40 s
 * of wall time at most). The members' timers run on `clock`; each step
 * leaves their database work the wall time to finish.
 */
export async function drive(clock: ManualClock, done: () => boolean | Promise<boolean>, stepMs = POLL): Promise<void> {
  const deadline = Date.now() + 40_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error("condition not reached within 40 s");
    clock.advance(stepMs);
    await wait(40);
  }
}
