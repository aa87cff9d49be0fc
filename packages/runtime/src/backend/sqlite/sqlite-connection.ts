import type Database from "better-sqlite3";
import { DatabaseUnavailableError } from "../../errors.js";
import type { Row } from "../shared/job-rows.js";
import { translateSqliteError } from "./sqlite-errors.js";
import type { BoundStatement } from "../shared/shared-statement.js";

/** What a store needs of the SQLite backend: its namespace and open connection. */
export interface SqliteHost {
  readonly namespace: string;
  /** The open connection; throws `DatabaseUnavailableError` when the backend is closed. */
  conn(): SqliteConnection;
}

/** A row count bound bare (`LIMIT ?`, `OFFSET $5`): SQLite would prepare the statement again at every run (see `unplanned`). */
const BARE_ROW_COUNT = /\b(?:LIMIT|OFFSET)\s+[?$:@]\w*(?!\s*\+\s*0)(?:\s|\)|$)/i;

/**
 * One open better-sqlite3 connection with the pragmas later needs, a cache
 * of prepared statements, and a `BEGIN IMMEDIATE` runner.
 *
 * Pragmas: WAL (readers never block the writer), `synchronous = NORMAL`
 * (durable across process crashes; a power cut may lose the last commits),
 * `busy_timeout` for the write lock between processes.
 *
 * Errors: every statement and transaction turns SQLite's errors about the
 * database (full, locked past `busy_timeout`, unreadable) into typed
 * `LaterError`s (see `sqlite-errors.ts`).
 */
export class SqliteConnection {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly transactionRunner: Database.Transaction<(run: () => unknown) => unknown>;
  /** Told (once per macrotask) after this connection's `immediate` transactions commit: `waitFor`'s waiters (X6). */
  private readonly commitListeners = new Set<(discarded?: readonly string[]) => void>();
  private commitScheduled = false;
  /** J11: ids of successes deleted by the transaction running now ({@link noteDiscarded}); moved to {@link committedDiscards} at its commit. */
  private discarding: string[] = [];
  /** Deleted successes committed since the last call of the commit listeners. */
  private committedDiscards: string[] = [];

  private constructor(
    readonly db: Database.Database,
    private readonly owned: boolean,
    private readonly busyTimeoutMs: number,
  ) {
    // One better-sqlite3 transaction wrapper per connection, given the body as
    // its argument: making a wrapper per call costs more than a small transaction.
    this.transactionRunner = db.transaction((run: () => unknown) => run());
  }

  /**
   * Opens `file` (created when missing, unless `mustExist`) with the better-sqlite3 `driver`,
   * or adopts an application-owned database, which {@link close} then
   * leaves open. Throws `DatabaseUnavailableError` when the file cannot be
   * opened or written.
   */
  static open(
    target: { file: string; driver: typeof Database; mustExist?: boolean } | { database: Database.Database },
    busyTimeoutMs: number,
  ): SqliteConnection {
    const name = "file" in target ? target.file : target.database.name;
    try {
      const db = "file" in target ? new target.driver(target.file, { fileMustExist: target.mustExist === true }) : target.database;
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      db.prepare("CREATE TABLE IF NOT EXISTS later_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)").run();
      return new SqliteConnection(db, "file" in target, busyTimeoutMs);
    } catch (cause) {
      throw new DatabaseUnavailableError(
        `cannot open SQLite database ${name}: ${(cause as Error).message}; check that the folder exists and is writable`,
        cause,
      );
    }
  }

  close(): void {
    this.statements.clear();
    if (this.owned) this.db.close();
  }

  /** Runs `body` in `BEGIN IMMEDIATE ... COMMIT` (rolled back if it throws): the write lock is taken up front, so two processes never deadlock upgrading a read lock. */
  immediate<R>(body: () => R): R {
    let result: R;
    try {
      result = this.transactionRunner.immediate(body) as R;
    } catch (error) {
      this.discarding = [];
      throw this.typed(error);
    }
    if (this.discarding.length > 0) {
      this.committedDiscards.push(...this.discarding);
      this.discarding = [];
    }
    if (this.commitListeners.size > 0) this.committed();
    return result;
  }

  /**
   * J11: the running transaction deleted these successes (`successMs: 0`); the commit listeners get their ids
   * once it commits, so a `waitFor` of this process resolves though the row is gone. Nothing is kept when
   * nobody listens (no `waitFor` pending), nor when the transaction rolls back.
   */
  noteDiscarded(ids: readonly string[]): void {
    if (this.commitListeners.size > 0) this.discarding.push(...ids);
  }

  /**
   * Calls `listener` after this connection's transactions commit, coalesced per macrotask, with the ids of
   * successes those commits deleted (J11; absent when none); returns the unsubscribe function.
   */
  commitSubscribe(listener: (discarded?: readonly string[]) => void): () => void {
    this.commitListeners.add(listener);
    return () => {
      this.commitListeners.delete(listener);
    };
  }

  private committed(): void {
    if (this.commitScheduled) return;
    this.commitScheduled = true;
    setImmediate(() => {
      this.commitScheduled = false;
      const discarded = this.committedDiscards.length > 0 ? this.committedDiscards : undefined;
      this.committedDiscards = [];
      for (const listener of this.commitListeners) listener(discarded);
    });
  }

  run(text: string, ...args: unknown[]): number {
    try {
      return this.statement(text).run(...args).changes;
    } catch (error) {
      throw this.typed(error);
    }
  }

  all(text: string, ...args: unknown[]): Row[] {
    try {
      return this.statement(text).all(...args) as Row[];
    } catch (error) {
      throw this.typed(error);
    }
  }

  get(text: string, ...args: unknown[]): Row | undefined {
    try {
      return this.statement(text).get(...args) as Row | undefined;
    } catch (error) {
      throw this.typed(error);
    }
  }

  /** Runs SQL text that returns nothing (`VACUUM`), uncached. */
  exec(text: string): void {
    try {
      this.db.exec(text);
    } catch (error) {
      throw this.typed(error);
    }
  }

  private typed(error: unknown): unknown {
    return translateSqliteError(error, this.db.name, this.busyTimeoutMs);
  }

  /** Runs a statement written once (`backend/shared/`) that reads. */
  read(s: BoundStatement): Row[] {
    return this.all(s.text, ...s.values);
  }

  /** Runs a statement written once that writes, in its own `immediate` transaction. */
  write(s: BoundStatement): Row[] {
    return this.immediate(() => this.all(s.text, ...s.values));
  }

  /** Changes only when another connection commits (`PRAGMA data_version`); null when it cannot be read. */
  dataVersion(): number | null {
    try {
      return Number(this.db.pragma("data_version", { simple: true }));
    } catch {
      return null;
    }
  }

  private statement(text: string): Database.Statement {
    let s = this.statements.get(text);
    if (!s) {
      // A defect of this package, found by any test that runs the statement: see `unplanned` (shared-statement.ts).
      if (BARE_ROW_COUNT.test(text)) throw new Error(`a bound LIMIT or OFFSET must be written \`? + 0\` (see unplanned): ${text}`);
      s = this.db.prepare(text);
      this.statements.set(text, s);
    }
    return s;
  }
}
