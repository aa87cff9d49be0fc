/**
 * The one database seam. The server, workers and maintenance talk to the
 * database only through {@link Backend}; nothing outside `backend/` imports
 * kysely, better-sqlite3 or pg, or asks which dialect it runs on. Real
 * dialect gaps are {@link BackendCapabilities} fields.
 *
 * Not a public API: `@later/runtime` exports the backend factories, their
 * options and the errors; the seam is reachable through
 * `@later/runtime/internal` only, for the CLI and the project's tests, and
 * may change in any release. Do not implement it outside this package.
 *
 * ## Terminology
 *
 * - **backend**: one database and namespace as the runtime sees it
 *   (`SqliteBackend`, `PostgresBackend`): it opens and closes connections,
 *   reports wake-ups, and holds one store per subsystem.
 * - **store**: the statements of one subsystem, an interface of its own file
 *   here, with its params and results beside it, implemented directly by a
 *   class of each dialect (`SqliteJobStore`, `PostgresJobStore`, ...):
 *   - `jobs` ({@link JobStore}): insert, claim, finish, release, lease
 *     renewal; the stuck-job, ready-count and expiry statements;
 *   - `partitions` ({@link PartitionStore}): topics, head claims and their
 *     fencing, membership;
 *   - `recurring` ({@link RecurringStore}): cron schedules and their
 *     occurrences;
 *   - `control` ({@link JobControlStore}): retry and delete from outside,
 *     by id or by filter, in batches;
 *   - `inspect` ({@link InspectStore}): reads for people (CLI, dashboard):
 *     one job, a page of jobs, the stage counters, partition depths and
 *     the partition list (head, depth, lease);
 *   - `maintenance` ({@link MaintenanceStore}): turns at periodic tasks,
 *     vacuum;
 *   - `activity` ({@link ActivityStore}): the dashboard's writes:
 *     throughput and dispatch-wait buckets, backlog samples, server
 *     heartbeats;
 *   - `migrations` ({@link MigrationStore}): status and up;
 *   - `log` ({@link LogStore}): the retained log's topics, records with
 *     dense offsets, and consumer groups' committed offsets.
 * - **method**: one whole queue operation, taking one params object
 *   (`XxxParams`) and returning a named result (`XxxResult`); its doc says
 *   how each dialect does it where they differ. Every method is scoped to
 *   the backend's namespace but `inspect.namespaceCounts` and the migrations.
 * - **Trx**: the caller-owned transaction a backend's `jobs.insertMany`
 *   writes into (`enqueueIn`): `SqliteTransaction` or `PostgresTransaction`
 *   (`transaction-handle.ts`). `Backend<Trx>` carries it, so the publisher
 *   and the generated module check the handle's type at compile time.
 * - **statement written once**: a statement that means the same on both
 *   dialects is a Kysely query in `backend/shared/`, compiled once per
 *   dialect and cached; a dialect folder holds what differs (the hot writes,
 *   locking, notifications), each saying why.
 */
import type { ActivityStore } from "./activity-store.js";
import type { InspectStore } from "./inspect-store.js";
import type { JobControlStore } from "./job-control-store.js";
import type { JobStore } from "./job-store.js";
import type { LogStore } from "./log-store.js";
import type { MaintenanceStore } from "./maintenance-store.js";
import type { MigrationStore } from "./migration-store.js";
import type { PartitionStore } from "./partition-store.js";
import type { RecurringStore } from "./recurring-store.js";

export type * from "./activity-store.js";
export type * from "./inspect-store.js";
export type * from "./job-control-store.js";
export type * from "./job-store.js";
export type * from "./job-limits.js";
export type * from "./log-store.js";
export type * from "./maintenance-store.js";
export type * from "./migration-store.js";
export type * from "./partition-store.js";
export type * from "./recurring-store.js";
export type * from "./transaction-handle.js";

/** What a backend can and cannot do, for the few places where that matters. */
export interface BackendCapabilities {
  /**
   * The backend reports commits made by other processes through
   * {@link Backend.wakeSubscribe} (SQLite: the WAL file is watched;
   * PostgreSQL: LISTEN/NOTIFY). When false, other processes' work is found
   * by polling only.
   */
  readonly crossProcessWake: boolean;
  /** `maintenance.vacuum` reclaims disk space (SQLite `VACUUM`). */
  readonly supportsVacuum: boolean;
  /**
   * `maintenance.statisticsRefresh` keeps the planner's statistics in step
   * with the tables' growth (PostgreSQL, whose cached generic plans follow
   * the statistics). SQLite's planner does not weigh a table's size.
   */
  readonly plannerStatistics: boolean;
  /**
   * How many jobs a server keeps claimed (running plus buffered): `perWorker`
   * × the live workers until the worker pool has measured its pace, then
   * what the workers finish in a few claim round trips, at most `max` (and
   * never fewer than two per worker); see `ClaimPacer`. Claimed jobs wait in
   * the server's local buffer, leased, until a worker is free. Each
   * claim is a transaction with a commit, whose cost its jobs share, so a
   * fast job stream runs faster in larger batches (PostgreSQL: a round trip
   * and a commit; SQLite: a write transaction whose commit writes the WAL
   * frames of every page it touched). `max` bounds what one server holds
   * when jobs are quick; slow jobs never reach it (the pace keeps about two
   * per worker), so they stay spread over the servers.
   */
  readonly claimBatch: { readonly perWorker: number; readonly max: number };
}

/** Options of {@link Backend.open}. */
export interface BackendOpenOptions {
  /**
   * May a database that does not exist be created? SQLite: the file (and
   * its first table) is created when missing; false throws
   * `DatabaseNotFoundError` instead and creates nothing (servers, publishers
   * and logs without `autoMigrate`, the CLI's reading commands), so a
   * mistyped path does not become a new empty database. PostgreSQL never
   * creates a database, so it ignores this. Default true.
   */
  createMissing?: boolean;
}

/**
 * The database seam: one backend's stores, by subsystem (see the module doc).
 * `Trx` is the kind of caller-owned transaction its inserts accept.
 */
export interface Backend<Trx = unknown> {
  /** `"sqlite"` or `"postgres"`, for messages only. */
  readonly kind: string;
  readonly namespace: string;
  readonly capabilities: BackendCapabilities;
  /** The command that migrates this database, for error messages. */
  readonly migrateHint: string;

  /**
   * Opens connections. Idempotent. Throws `DatabaseUnavailableError` when the
   * database cannot be opened, and `DatabaseNotFoundError` when it does not
   * exist and `createMissing` is false.
   */
  open(options?: BackendOpenOptions): Promise<void>;
  /** Closes what the backend opened; never closes a caller-owned database or pool. Idempotent. */
  close(): Promise<void>;
  /**
   * Calls `listener` (soon, coalesced) after another process may have
   * committed work. A latency hint only: correctness never depends on it.
   * Returns the unsubscribe function.
   */
  wakeSubscribe(listener: () => void): () => void;
  /**
   * Calls `listener` when a running job of this namespace was cancelled by
   * any process (X3), so a server renews its leases at once and aborts the
   * attempt (PostgreSQL: a notification on the wake-up channel). Absent
   * (SQLite): the next lease renewal finds it. Returns the unsubscribe function.
   */
  cancelSubscribe?(listener: () => void): () => void;

  /**
   * Calls `listener` (soon, coalesced) after a job of this namespace may
   * have become terminal, for `waitFor` (X6), which then re-reads its rows
   * (`jobs.readOutcomes`). Resolves to the unsubscribe function once
   * listening: a terminal write committed after that is reported.
   * PostgreSQL: notifications on the namespace's done channel, sent only
   * for rows marked awaited (one LISTEN connection, opened by the first
   * call; none with `listen: false`). SQLite: every commit, other
   * processes' (WAL watcher) and this backend's own. A latency hint as
   * `wakeSubscribe` is: the waiters also poll, slowly, for what it misses.
   * Throws `DatabaseUnavailableError` when the backend is not open.
   *
   * `discarded` (J11): ids of successes whose row the terminal write deleted
   * (`successMs: 0`), so a waiter resolves though a re-read finds no row.
   * PostgreSQL: awaited ones, in the notification's payload (up to 250 per
   * statement; past that, none are named); SQLite: this backend's own
   * commits only (another process's deleted success is `JOB_NOT_FOUND`).
   */
  doneSubscribe(listener: (discarded?: readonly string[]) => void): Promise<() => void>;

  readonly migrations: MigrationStore;
  readonly jobs: JobStore<Trx>;
  readonly partitions: PartitionStore;
  readonly recurring: RecurringStore;
  readonly control: JobControlStore;
  readonly inspect: InspectStore;
  readonly maintenance: MaintenanceStore;
  readonly log: LogStore<Trx>;
  readonly activity: ActivityStore;
}
