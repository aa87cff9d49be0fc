/**
 * The SQLite backend: one database file, shared by every process that can
 * open it.
 *
 * How it runs: better-sqlite3 is synchronous, so every transaction of this
 * backend's own runs start to finish inside one call (`BEGIN IMMEDIATE`
 * through better-sqlite3's `transaction().immediate()`): no other code can
 * interleave statements on the connection, and the write lock is taken up
 * front, so two processes never deadlock upgrading a read lock. Statements
 * are prepared once and cached. Kysely is used where a caller-owned
 * transaction is written to (`enqueueIn`), since only Kysely knows how to
 * run on it; the hot statements are fixed SQL text, prepared once, because
 * compiling a query per call costs more than running it here. Times in the
 * stage history are cast to INTEGER: better-sqlite3 binds JS numbers as
 * REAL, which JSON would print as `1796221142587.0`. Pragmas and
 * the statement cache are in {@link SqliteConnection}.
 */
import type Database from "better-sqlite3";
import { parentFailedReason } from "../../core/continuation-stage.js";
import { JOB_STAGES, type JobStage } from "../../core/job-stage.js";
import { DatabaseUnavailableError, InvalidConfigError, UnknownTopicError } from "../../errors.js";
import type * as B from "../backend.js";
import { SqliteConnection } from "./sqlite-connection.js";
import { SqlitePartitionStore } from "./sqlite-partition-store.js";
import { SqliteRecurringStore } from "./sqlite-recurring-store.js";
import { jobRecordFromRow, renewedClaims, type Row } from "../shared/job-rows.js";
import { insertIntoCallerTransaction } from "./sqlite-caller-insert.js";
import { insertStage } from "../shared/insert-stage.js";
import { applySqliteMigrations, readSqliteMigrationStatus } from "./sqlite-migrations.js";
import { subscribeCommits, WalWatcher } from "./wal-watcher.js";

/** Options of {@link sqlite}. Give either `file` or `database`. */
export interface SqliteBackendOptions {
  /** Path of the database file; created when missing. */
  file?: string;
  /** An application-owned better-sqlite3 database. later never closes it. */
  database?: Database.Database;
  /** Servers on one file and namespace share work. Default `"default"`. */
  namespace?: string;
  /** How long a writer waits for another process's write lock, ms. Default 5000. */
  busyTimeoutMs?: number;
}

const OPTION_KEYS = new Set(["file", "database", "namespace", "busyTimeoutMs"]);

/** Creates the SQLite backend. Nothing is opened until the server starts (or `open()`). */
export function sqlite(options: SqliteBackendOptions): SqliteBackend {
  return new SqliteBackend(options);
}

const STAGE_SET = new Set<string>(JOB_STAGES);

export class SqliteBackend implements B.Backend {
  readonly kind = "sqlite";
  readonly namespace: string;
  readonly capabilities: B.BackendCapabilities = { crossProcessWake: true, supportsVacuum: true, claimBatch: { perWorker: 4, max: 32 } };
  readonly migrateHint: string;

  private connection: SqliteConnection | null = null;
  private readonly partitions = new SqlitePartitionStore(this);
  private readonly recurring = new SqliteRecurringStore(this);
  private watcher: WalWatcher | null = null;
  constructor(private readonly options: SqliteBackendOptions) {
    if (options === null || typeof options !== "object") throw new InvalidConfigError("sqlite(options): options must be an object");
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) throw new InvalidConfigError(`sqlite(): unknown option "${key}"`);
    }
    if ((options.file === undefined) === (options.database === undefined)) {
      throw new InvalidConfigError("sqlite(): give exactly one of `file` or `database`");
    }
    if (options.file !== undefined && (typeof options.file !== "string" || options.file === "")) {
      throw new InvalidConfigError("sqlite(): `file` must be a non-empty path");
    }
    this.namespace = options.namespace ?? "default";
    if (typeof this.namespace !== "string" || this.namespace === "") throw new InvalidConfigError("sqlite(): `namespace` must be a non-empty string");
    const busy = options.busyTimeoutMs ?? 5_000;
    if (!Number.isInteger(busy) || busy < 0) throw new InvalidConfigError("sqlite(): `busyTimeoutMs` must be an integer >= 0");
    this.migrateHint = `later migrate up --database sqlite:${options.file ?? options.database?.name ?? "PATH"}`;
  }

  /** The database file path. */
  get file(): string {
    return this.options.file ?? this.options.database!.name;
  }

  async open(): Promise<void> {
    if (this.connection) return;
    const { file, database } = this.options;
    this.connection = SqliteConnection.open(database ? { database } : { file: file! }, this.options.busyTimeoutMs ?? 5_000);
  }

  async close(): Promise<void> {
    this.watcher?.stop();
    this.watcher = null;
    this.connection?.close();
    this.connection = null;
  }

  // ---- migrations -------------------------------------------------------

  async migrationStatus(): Promise<B.MigrationStatusResult> {
    return readSqliteMigrationStatus(this.conn());
  }

  async migrationUp(): Promise<B.MigrationUpResult> {
    const applied = applySqliteMigrations(this.conn());
    return { applied, current: (await this.migrationStatus()).current };
  }

  // ---- jobs -------------------------------------------------------------

  async jobInsertMany(params: B.JobInsertManyParams): Promise<B.JobInsertManyResult> {
    if (params.transaction !== undefined) return insertIntoCallerTransaction(params.transaction, this.namespace, params);
    return this.immediate(() => ({ stages: this.insertRows(params.jobs, params.now) }));
  }

  /**
   * Inserts jobs inside the caller's `immediate` transaction and returns
   * their stages. A partitioned job takes its partition's next sequence in
   * the same transaction; an unknown partition throws, rolling back all.
   */
  insertRows(jobs: readonly B.JobInsert[], now: number): JobStage[] {
    const stages: JobStage[] = [];
    for (const job of jobs) {
      const parent = job.parentId ? this.get("SELECT stage, last_error FROM later_jobs WHERE id = ? AND namespace = ?", job.parentId, this.namespace) : undefined;
      const { stage, error } = insertStage(job, now, parent);
      let seq: number | null = null;
      if (job.topic !== undefined) {
        const row = this.get(
          "UPDATE later_partitions SET next_seq = next_seq + 1 WHERE namespace = ? AND topic = ? AND partition_no = ? RETURNING next_seq - 1 AS seq",
          this.namespace, job.topic, job.partition ?? -1);
        if (!row) throw new UnknownTopicError(job.topic, job.partition);
        seq = Number(row.seq);
      }
      this.run(
        `INSERT INTO later_jobs (id, namespace, job_type, payload, stage, attempt, retry_policy, run_at, parent_id, last_error, stages, created_at, updated_at, expires_at, topic, partition_no, seq)
         VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, json_array(json_array(?, CAST(? AS INTEGER))), ?, ?, ?, ?, ?, ?)`,
        job.id, this.namespace, job.jobType, job.payload, stage, job.retryPolicy, job.runAt, job.parentId ?? null,
        error, stage, now, now, now, null, job.topic ?? null, job.partition ?? null, seq,
      );
      stages.push(stage);
    }
    return stages;
  }

  async jobClaimReady(params: B.JobClaimReadyParams): Promise<B.JobClaimReadyResult> {
    if (params.limit <= 0 || params.jobTypes.length === 0) return { jobs: [] };
    const types = JSON.stringify(params.jobTypes);
    const rows = this.immediate(() =>
      this.all(
        `UPDATE later_jobs SET stage = 'running', attempt = attempt + 1, lease_owner = ?, lease_expires_at = ?, updated_at = ?,
           stages = json_insert(stages, '$[#]', json_array('running', CAST(? AS INTEGER)))
         WHERE id IN (SELECT id FROM later_jobs WHERE namespace = ? AND stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL
                        AND run_at <= ? AND job_type IN (SELECT value FROM json_each(?)) ORDER BY run_at LIMIT ?)
         RETURNING id, job_type, payload, attempt, retry_policy, run_at`,
        params.owner, params.leaseExpiresAt, params.now, params.now, this.namespace, params.now, types, params.limit,
      ),
    );
    rows.sort((a, b) => Number(a.run_at) - Number(b.run_at) || (String(a.id) < String(b.id) ? -1 : 1));
    const jobs = rows.map((r) => ({
      id: String(r.id), jobType: String(r.job_type), payload: String(r.payload), attempt: Number(r.attempt),
      retryPolicy: String(r.retry_policy),
    }));
    if (jobs.length === params.limit) return { jobs };
    const next = this.get(
      `SELECT min(run_at) AS t FROM later_jobs WHERE namespace = ? AND stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL
         AND run_at > ? AND job_type IN (SELECT value FROM json_each(?))`,
      this.namespace, params.now, types);
    return { jobs, nextRunAt: next?.t === null || next?.t === undefined ? null : Number(next.t) };
  }

  async jobFinishMany(params: B.JobFinishManyParams): Promise<B.JobFinishManyResult> {
    return this.immediate(() => this.finishRows(params));
  }

  /** The body of {@link jobFinishMany}, inside the caller's `immediate` transaction (partition heads reuse it). */
  finishRows(params: B.JobFinishManyParams): B.JobFinishManyResult {
    const ns = this.namespace;
    const guard = params.leaseExpiredBefore ?? Number.MAX_SAFE_INTEGER;
    const expires = params.now + params.retentionMs;
    {
      const applied: B.ClaimKey[] = [];
      const succeeded: string[] = [];
      const failed: { id: string; error: string }[] = [];
      // Successes, the hot path: one statement for the whole batch, each row
      // matched on its claim (id, attempt) through the primary key (the unary
      // `+` keeps the planner off the running index, which it would scan).
      const successes = params.finishes.filter((f) => f.outcome.kind === "success");
      if (successes.length > 0) {
        const claimsJson = JSON.stringify(successes.map((f) => [f.id, f.attempt]));
        const rows = this.all(
          `UPDATE later_jobs SET stage = 'success', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, expires_at = ?,
             stages = json_insert(stages, '$[#]', json_array('success', CAST(? AS INTEGER)))
           WHERE +namespace = ? AND +stage = 'running' AND coalesce(lease_expires_at, 0) < ?
             AND id IN (SELECT json_extract(value, '$[0]') FROM json_each(?))
             AND (id, attempt) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
           RETURNING id, attempt`,
          params.now, expires, params.now, ns, guard, claimsJson, claimsJson);
        for (const r of rows) {
          applied.push({ id: String(r.id), attempt: Number(r.attempt) });
          succeeded.push(String(r.id));
        }
      }
      for (const f of params.finishes) {
        const o = f.outcome;
        if (o.kind === "success") continue;
        const where = `WHERE id = ? AND namespace = ? AND stage = 'running' AND attempt = ? AND coalesce(lease_expires_at, 0) < ?`;
        let changes: number;
        if (o.kind === "retry") {
          changes = this.run(
            `UPDATE later_jobs SET stage = 'requeued', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, run_at = ?, last_error = ?,
               retry_policy = coalesce(?, retry_policy), stages = json_insert(stages, '$[#]', json_array('requeued', CAST(? AS INTEGER))) ${where}`,
            params.now, o.runAt, o.error, o.retryPolicy ?? null, params.now, f.id, ns, f.attempt, guard);
        } else {
          changes = this.run(
            `UPDATE later_jobs SET stage = 'failed', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, expires_at = ?, last_error = ?,
               stages = json_insert(stages, '$[#]', json_array('failed', CAST(? AS INTEGER))) ${where}`,
            params.now, expires, o.error, params.now, f.id, ns, f.attempt, guard);
          if (changes) failed.push({ id: f.id, error: o.error });
        }
        if (changes) applied.push({ id: f.id, attempt: f.attempt });
      }
      let released = 0;
      if (succeeded.length > 0) {
        released = this.run(
          `UPDATE later_jobs SET stage = 'enqueued', run_at = ?, updated_at = ?, stages = json_insert(stages, '$[#]', json_array('enqueued', CAST(? AS INTEGER)))
           WHERE parent_id IN (SELECT value FROM json_each(?)) AND namespace = ? AND stage = 'waiting'`,
          params.now, params.now, params.now, JSON.stringify(succeeded), ns);
      }
      this.failWaitingChildren(failed, params.now, expires);
      return { applied, released };
    }
  }

  /** A final failure fails the waiting continuations, down the whole chain (inside the caller's transaction). */
  failWaitingChildren(failed: { id: string; error: string }[], now: number, expires: number): void {
    while (failed.length > 0) {
      const parent = failed.pop()!;
      const reason = parentFailedReason(parent.id, parent.error);
      const children = this.all(
        `UPDATE later_jobs SET stage = 'failed', updated_at = ?, expires_at = ?, last_error = ?, stages = json_insert(stages, '$[#]', json_array('failed', CAST(? AS INTEGER)))
         WHERE parent_id = ? AND namespace = ? AND stage = 'waiting' RETURNING id`,
        now, expires, reason, now, parent.id, this.namespace);
      for (const c of children) failed.push({ id: String(c.id), error: reason });
    }
  }

  async jobReleaseMany(params: B.JobReleaseManyParams): Promise<void> {
    this.immediate(() => {
      for (const c of params.claims) {
        this.run(
          `UPDATE later_jobs SET stage = CASE WHEN attempt <= 1 THEN 'enqueued' ELSE 'requeued' END, attempt = attempt - 1,
             lease_owner = NULL, lease_expires_at = NULL, updated_at = ?,
             stages = json_insert(stages, '$[#]', json_array(CASE WHEN attempt <= 1 THEN 'enqueued' ELSE 'requeued' END, CAST(? AS INTEGER)))
           WHERE id = ? AND namespace = ? AND stage = 'running' AND attempt = ?`,
          params.now, params.now, c.id, this.namespace, c.attempt);
      }
    });
  }

  async leaseRenew(params: B.LeaseRenewParams): Promise<B.LeaseRenewResult> {
    if (params.claims.length === 0) return { renewed: [] };
    const held = new Map(params.claims.map((c) => [c.id, c.attempt]));
    const rows = this.immediate(() =>
      this.all(
        `UPDATE later_jobs SET lease_expires_at = ? WHERE namespace = ? AND stage = 'running' AND lease_owner = ?
           AND id IN (SELECT value FROM json_each(?)) RETURNING id, attempt`,
        params.leaseExpiresAt, this.namespace, params.owner, JSON.stringify([...held.keys()])),
    );
    return { renewed: renewedClaims(held, rows) };
  }

  async jobListStuck(params: B.JobListStuckParams): Promise<B.StuckJob[]> {
    return this.all(
      `SELECT id, attempt, job_type, retry_policy FROM later_jobs WHERE namespace = ? AND stage = 'running' AND topic IS NULL AND lease_expires_at < ?
       ORDER BY lease_expires_at LIMIT ?`,
      this.namespace, params.leaseExpiredBefore, params.limit,
    ).map((r) => ({ id: String(r.id), attempt: Number(r.attempt), jobType: String(r.job_type), retryPolicy: String(r.retry_policy) }));
  }

  async jobCountReady(params: B.JobCountReadyParams): Promise<number> {
    if (params.jobTypes.length === 0) return 0;
    const row = this.get(
      `SELECT count(*) AS n FROM later_jobs WHERE namespace = ? AND stage IN ('enqueued', 'delayed', 'requeued') AND topic IS NULL AND run_at <= ?
         AND job_type IN (SELECT value FROM json_each(?))`,
      this.namespace, params.now, JSON.stringify(params.jobTypes));
    return Number(row?.n ?? 0);
  }

  async jobDeleteExpired(params: B.JobDeleteExpiredParams): Promise<number> {
    return this.immediate(() =>
      this.run(
        `DELETE FROM later_jobs WHERE id IN (SELECT id FROM later_jobs WHERE namespace = ? AND expires_at IS NOT NULL AND expires_at < ? LIMIT ?)`,
        this.namespace, params.now, params.limit),
    );
  }

  async jobGet(params: B.JobGetParams): Promise<B.JobRecord | null> {
    const row = this.get("SELECT * FROM later_jobs WHERE id = ? AND namespace = ?", params.id, this.namespace);
    return row ? jobRecordFromRow(row) : null;
  }

  async jobList(params: B.JobListParams): Promise<B.JobRecord[]> {
    // The cursor is a plain bound on the primary key in both orders ('~' sorts
    // after every id character), so either walk is an index range scan.
    const desc = params.order === "desc";
    const rows = this.all(
      `SELECT * FROM later_jobs WHERE namespace = ? AND (? IS NULL OR stage = ?) AND (? IS NULL OR job_type = ?)
         AND ${desc ? "id < ? ORDER BY id DESC" : "id > ? ORDER BY id"} LIMIT ?`,
      this.namespace, params.stage ?? null, params.stage ?? null, params.jobType ?? null, params.jobType ?? null,
      params.afterId ?? (desc ? "~" : ""), params.limit);
    return rows.map(jobRecordFromRow);
  }

  async jobCountByStage(): Promise<B.JobCountByStageResult> {
    const counts = Object.fromEntries(JOB_STAGES.map((s) => [s, 0])) as Record<JobStage, number>;
    for (const r of this.all("SELECT stage, count(*) AS n FROM later_jobs WHERE namespace = ? GROUP BY stage", this.namespace)) {
      if (STAGE_SET.has(String(r.stage))) counts[r.stage as JobStage] = Number(r.n);
    }
    return { counts };
  }

  async maintenanceClaim(params: B.MaintenanceClaimParams): Promise<boolean> {
    return this.immediate(() => {
      const changes = this.run(
        `INSERT INTO later_maintenance (namespace, task, last_run_at) VALUES (?, ?, ?)
         ON CONFLICT (namespace, task) DO UPDATE SET last_run_at = excluded.last_run_at
         WHERE later_maintenance.last_run_at <= ?`,
        this.namespace, params.task, params.now, params.now - params.intervalMs);
      return changes > 0;
    });
  }

  async databaseVacuum(): Promise<void> {
    this.conn().db.exec("VACUUM");
  }

  /** Other processes' commits, from the WAL file filtered by `PRAGMA data_version` (see {@link subscribeCommits}). */
  wakeSubscribe(listener: () => void): () => void {
    this.watcher ??= new WalWatcher(this.file);
    return subscribeCommits(this.watcher, () => this.connection?.dataVersion() ?? null, listener);
  }

  // ---- topics and partitions (SQL in sqlite-partition-store.ts) ----------

  async topicRegister(params: B.TopicRegisterParams): Promise<void> {
    this.partitions.topicRegister(params);
  }

  async partitionHeadClaim(params: B.PartitionHeadClaimParams): Promise<B.PartitionHeadClaimResult> {
    return this.partitions.headClaim(params);
  }

  async partitionHeadFinish(params: B.PartitionHeadFinishParams): Promise<B.PartitionHeadFinishResult> {
    return this.partitions.headFinish(params);
  }

  async partitionLeaseRenew(params: B.PartitionLeaseRenewParams): Promise<B.PartitionLeaseRenewResult> {
    return this.partitions.leaseRenew(params);
  }

  async partitionMemberHeartbeat(params: B.PartitionMemberHeartbeatParams): Promise<B.PartitionMemberHeartbeatResult> {
    return this.partitions.memberHeartbeat(params);
  }

  async partitionMemberRemove(params: B.PartitionMemberRemoveParams): Promise<void> {
    this.partitions.memberRemove(params);
  }

  async partitionHeadForceFail(params: B.PartitionHeadForceFailParams): Promise<string | null> {
    return this.partitions.headForceFail(params);
  }

  async partitionHistoryTruncate(params: B.PartitionHistoryTruncateParams): Promise<number> {
    return this.partitions.historyTruncate(params);
  }

  async partitionDepth(): Promise<B.PartitionDepthResult> {
    return this.partitions.depth();
  }

  // ---- recurring schedules (SQL in sqlite-recurring-store.ts) ------------

  async recurringUpsert(params: B.RecurringUpsertParams): Promise<B.RecurringUpsertResult> {
    return this.recurring.upsert(params);
  }

  async recurringDueList(params: B.RecurringDueListParams): Promise<B.RecurringSchedule[]> {
    return this.recurring.dueList(params);
  }

  async recurringAdvance(params: B.RecurringAdvanceParams): Promise<B.RecurringAdvanceResult> {
    return this.recurring.advance(params);
  }

  async recurringList(): Promise<B.RecurringSchedule[]> {
    return this.recurring.list();
  }

  async recurringDelete(params: B.RecurringDeleteParams): Promise<boolean> {
    return this.recurring.delete(params);
  }

  // ---- statement plumbing -------------------------------------------------

  private immediate<R>(body: () => R): R {
    return this.conn().immediate(body);
  }

  /** @internal The open connection (for the stores beside this class); throws when closed. */
  conn(): SqliteConnection {
    if (!this.connection) throw new DatabaseUnavailableError("the SQLite backend is not open (the server was shut down, or never started)");
    return this.connection;
  }

  private run(text: string, ...args: unknown[]): number {
    return this.conn().run(text, ...args);
  }

  private all(text: string, ...args: unknown[]): Row[] {
    return this.conn().all(text, ...args);
  }

  private get(text: string, ...args: unknown[]): Row | undefined {
    return this.conn().get(text, ...args);
  }
}
