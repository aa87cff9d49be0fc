/**
 * Small factories for the seam suite (test/seam): every method of
 * `backend.jobs`, `backend.partitions` and `backend.control` called directly
 * on each backend of test/conformance/backends.ts, as River's
 * `riverdrivertest` calls every driver method on every driver, so that a
 * dialect bug shows up at the seam rather than three layers up in a server.
 *
 * - {@link jobInsert}: a `JobInsert` with defaults (a fresh id, type `work`,
 *   payload `{}`, due at {@link NOW}, no retry policy), any field overridden.
 * - {@link freshBackend}: a fresh database of one entry, its backend opened and
 *   migrated; `close()` closes the backend and disposes of the database.
 * - {@link useSeam}: the same as a vitest hook: one database per `describe`
 *   (created and migrated once), and per test a backend on a namespace of its
 *   own (every method is scoped to its namespace, docs/semantics.md J6), opened
 *   before the test and closed after it, so each test starts empty and fast.
 * - {@link expectCountersMatch}: the stage counters (`inspect.stageCounts`) and
 *   partition depths (`inspect.partitionDepth`) equal a GROUP BY over the jobs
 *   read through the database's raw access (D7), to be called after every
 *   change of stages.
 *
 * Times are fixed ({@link NOW}, far ahead of the wall clock): the seam takes
 * `now` as a parameter everywhere, so no test waits for time to pass.
 */
import { sql } from "kysely";
import type { Kysely } from "kysely";
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";
import { JOB_STAGES, newJobId } from "@later/runtime";
import type { Backend, JobInsert, JobRecord } from "@later/runtime/internal";
import type { BackendEntry, TestDatabase } from "../conformance/backends.js";

export { BACKENDS } from "../conformance/backends.js";

/** The suite's clock: every `now` passed to the seam is this or a fixed offset from it. */
export const NOW = 1_900_000_000_000;

let made = 0;

/** A job to insert, with defaults; ids increase with each call (ULIDs of increasing times). */
export function jobInsert(overrides: Partial<JobInsert> = {}): JobInsert {
  made++;
  return { id: newJobId(NOW + made), jobType: "work", payload: "{}", runAt: NOW, retryPolicy: null, ...overrides };
}

/** An open, migrated backend on a database of its own, and the database's raw access. */
export interface Seam {
  readonly entry: BackendEntry;
  readonly db: TestDatabase;
  readonly backend: Backend;
  /** A Kysely on the same database, for the recount (destroyed by `close`). */
  readonly raw: Kysely<Record<string, never>>;
  /** Reads one job (`inspect.jobGet`); throws when it is not stored. */
  job(id: string): Promise<JobRecord>;
  /** Another backend on the same database, on `namespace`, opened (closed by `close`). */
  other(namespace: string): Promise<Backend>;
  close(): Promise<void>;
}

function seamOn(entry: BackendEntry, db: TestDatabase, backend: Backend, raw: Kysely<Record<string, never>>, onClose: () => Promise<void>): Seam {
  const others: Backend[] = [];
  return {
    entry,
    db,
    backend,
    raw,
    async job(id) {
      const record = await backend.inspect.jobGet({ id });
      if (record === null) throw new Error(`job ${id} is not stored in namespace ${backend.namespace}`);
      return record;
    },
    async other(namespace) {
      const b = db.backend(namespace);
      others.push(b);
      await b.open();
      return b;
    },
    async close() {
      for (const b of others.splice(0)) await b.close();
      await backend.close();
      await onClose();
    },
  };
}

/** A fresh database of `entry`, with its backend on `namespace` opened and migrated. Close it (`seam.close()`) in the test. */
export async function freshBackend(entry: BackendEntry, namespace = "seam"): Promise<Seam> {
  const db = await entry.createDatabase();
  const backend = db.backend(namespace);
  try {
    await backend.open();
    await backend.migrations.up();
  } catch (error) {
    await backend.close();
    await db.dispose();
    throw error;
  }
  const raw = db.appDatabase<Record<string, never>>();
  return seamOn(entry, db, backend, raw, async () => {
    await raw.destroy();
    await db.dispose();
  });
}

let namespaces = 0;

/**
 * Registers the hooks of one `describe`: a database created and migrated
 * once, and per test a fresh namespace whose backend is open during the
 * test. Returns the current test's seam.
 */
export function useSeam(entry: BackendEntry): () => Seam {
  let base: Seam | undefined;
  let current: Seam | undefined;
  beforeAll(async () => {
    base = await freshBackend(entry, "seam-base");
  });
  afterAll(async () => {
    await base?.close();
  });
  beforeEach(async () => {
    const backend = base!.db.backend(`seam-${process.pid}-${++namespaces}`);
    await backend.open();
    current = seamOn(entry, base!.db, backend, base!.raw, async () => undefined);
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return () => {
    if (!current) throw new Error("useSeam: no test is running");
    return current;
  };
}

/**
 * Asserts that the stage counters of the seam's namespace equal a
 * `SELECT stage, count(*) … GROUP BY stage` over its jobs, and the partition
 * depth counters a GROUP BY of its unfinished partitioned jobs (D7). No
 * server runs in this suite, so the two reads never straddle a commit.
 */
export async function expectCountersMatch(seam: Seam): Promise<void> {
  const ns = seam.backend.namespace;
  const grouped = await sql<{ stage: string; n: number | string }>`SELECT stage, count(*) AS n FROM later_jobs WHERE namespace = ${ns} GROUP BY stage`.execute(
    seam.raw,
  );
  const expected = Object.fromEntries(JOB_STAGES.map((s) => [s, Number(grouped.rows.find((r) => r.stage === s)?.n ?? 0)]));
  expect((await seam.backend.inspect.stageCounts()).counts).toEqual(expected);
  const parts = await sql<{ topic: string; partition_no: number | string; n: number | string }>`SELECT topic, partition_no, count(*) AS n FROM later_jobs
    WHERE namespace = ${ns} AND topic IS NOT NULL AND stage NOT IN ('success', 'failed', 'cancelled') GROUP BY topic, partition_no`.execute(seam.raw);
  const key = (t: string, p: number) => `${t}/${p}`;
  const depth = Object.fromEntries(parts.rows.map((r) => [key(r.topic, Number(r.partition_no)), Number(r.n)]));
  const counted = Object.fromEntries(
    (await seam.backend.inspect.partitionDepth()).partitions.filter((p) => p.unfinished !== 0).map((p) => [key(p.topic, p.partition), p.unfinished]),
  );
  expect(counted).toEqual(depth);
}

/** The stages of the seam's namespace by job id, read through the raw access (no counter involved). */
export async function storedStages(seam: Seam): Promise<Record<string, string>> {
  const rows = await sql<{ id: string; stage: string }>`SELECT id, stage FROM later_jobs WHERE namespace = ${seam.backend.namespace} ORDER BY id`.execute(
    seam.raw,
  );
  return Object.fromEntries(rows.rows.map((r) => [r.id, r.stage]));
}

/** The history entries' stages (and notes) of a job, oldest first. */
export function history(job: JobRecord): string[] {
  return job.stages.map((c) => (c.note ? `${c.stage}:${c.note}` : c.stage));
}
