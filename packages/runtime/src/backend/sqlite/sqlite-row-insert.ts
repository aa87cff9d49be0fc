/**
 * New job rows on SQLite, inside the caller's `immediate` transaction: the
 * body of `SqliteJobStore.insertRows` (enqueue, and the partition and
 * recurring stores' inserts). Plain rows go in multi-row inserts; a row that
 * reads its parent, marks fan-in parents or takes a partition's sequence is
 * written at once, in order. The moves into the first stages are added to
 * the stage counters in the same transaction.
 */
import type { JobStage } from "../../core/job-stage.js";
import { UnknownTopicError } from "../../errors.js";
import type * as B from "../backend.js";
import { fanInStage, insertStage, refuseParentsInBatch } from "../shared/insert-stage.js";
import { JOB_INSERT_COLUMN_LIST, jobInsertValues } from "../shared/job-insert-row.js";
import type { BoundStatement } from "../shared/shared-statement.js";
import { edgesJson, FAN_IN_SQL, readFanInParents } from "./sqlite-fan-in.js";
import { withUngroupedKey } from "../shared/ungrouped-group.js";
import type { SqliteHost } from "./sqlite-connection.js";
import { groupLimitedTypes } from "./sqlite-limits.js";
import { nextRowidText, RowPlaces } from "./sqlite-row-places.js";
import { type SqliteStageCounters, StageDeltas } from "./sqlite-stage-counters.js";
import { JOB_INSERT_PLACEHOLDERS } from "./sqlite-unique-insert.js";
import { SQLITE_TRANSITIONS as T, SqliteTransition } from "./sqlite-transition.js";

/**
 * The insert of one job, built once: the statement cache is keyed by the
 * text, and a text rebuilt per row would be hashed again per row (measured:
 * about 1 µs of a bulk enqueue's 10 µs per job).
 */
const INSERT_JOB = `INSERT INTO later_jobs (rowid, namespace, ${JOB_INSERT_COLUMN_LIST}, attempt, parent_id, last_error, stages, created_at, updated_at, expires_at, topic, partition_no, seq, parents_left)
  VALUES (?, ?, ${JOB_INSERT_PLACEHOLDERS}, 0, ?, ?, ${SqliteTransition.FIRST}, ?, ?, ?, ?, ?, ?, ?)`;

/** {@link INSERT_JOB} with the rowid found by the insert itself, from the priority bound four times: for a batch of one job. */
const INSERT_ONE = INSERT_JOB.replace("VALUES (?, ", `VALUES (${nextRowidText("?")}, `);

/** The most rows one multi-row insert carries ({@link insertValuesText}). */
const ROWS_PER_INSERT = 50;

/** The values tuple of {@link INSERT_JOB}, for the multi-row form. */
const INSERT_TUPLE = INSERT_JOB.slice(INSERT_JOB.indexOf("VALUES ") + "VALUES ".length);

/** How many values {@link INSERT_JOB} binds. */
const INSERT_COLUMNS = (INSERT_TUPLE.match(/\?/g) ?? []).length;

/** {@link INSERT_JOB} for `rows` rows at once, built once per row count. */
const insertValuesText = (() => {
  const texts: string[] = [];
  return (rows: number): string => {
    texts[rows] ??= `${INSERT_JOB.slice(0, INSERT_JOB.indexOf("VALUES "))}VALUES ${Array.from({ length: rows }, () => INSERT_TUPLE).join(", ")}`;
    return texts[rows]!;
  };
})();

export class SqliteRowInsert {
  constructor(
    private readonly host: SqliteHost,
    private readonly counters: SqliteStageCounters,
  ) {}

  /**
   * Inserts jobs inside the caller's `immediate` transaction and returns
   * their stages. A partitioned job takes its partition's next sequence in
   * the same transaction; an unknown partition throws, rolling back all.
   * `retentionMs`: the retention of a job stored terminal (see `insertStage`).
   */
  insertRows(given: readonly B.JobInsert[], now: number, retentionMs?: number): JobStage[] {
    // Row by row, a parent earlier in the batch would be found: refused as on PostgreSQL (J5).
    refuseParentsInBatch(given);
    // X9: a job with no group of a group-limited type joins its ungrouped group (shared/ungrouped-group.ts).
    const jobs = withUngroupedKey(given, groupLimitedTypes(this.host.conn(), this.host.namespace));
    const stages: JobStage[] = [];
    const deltas = new StageDeltas();
    const plain: unknown[] = [];
    // Each row's rowid from its priority (sqlite-row-places.ts): the jobs of one priority lie together. A batch of
    // one job (a single enqueue, mostly) finds it in its insert; a larger one reads once per priority.
    const places = RowPlaces.forRows(jobs.length, (st: BoundStatement) => this.host.conn().get(st.text, ...st.values));
    for (const job of jobs) {
      const parent = job.parentId
        ? this.host.conn().get("SELECT stage, last_error FROM later_jobs WHERE id = ? AND namespace = ?", job.parentId, this.host.namespace)
        : undefined;
      // A fan-in job (X5): its parents read and marked, its stage from all of them (sqlite-fan-in.ts).
      const fanIn = job.parentIds ? readFanInParents(this.host.conn(), this.host.namespace, job) : undefined;
      const { stage, error, expiresAt, parentsLeft } = fanIn ? fanInStage(job, now, fanIn, retentionMs) : insertStage(job, now, parent, retentionMs);
      let seq: number | null = null;
      if (job.topic !== undefined) {
        const row = this.host
          .conn()
          .get(
            "UPDATE later_partitions SET next_seq = next_seq + 1 WHERE namespace = ? AND topic = ? AND partition_no = ? RETURNING next_seq - 1 AS seq",
            this.host.namespace,
            job.topic,
            job.partition ?? -1,
          );
        if (!row) throw new UnknownTopicError(job.topic, job.partition);
        seq = Number(row.seq);
      }
      const priority = job.priority ?? 0;
      const values = [
        places?.next(priority) ?? null,
        this.host.namespace,
        ...jobInsertValues(job, stage),
        job.parentId ?? null,
        error,
        stage,
        now,
        now,
        now,
        expiresAt,
        job.topic ?? null,
        job.partition ?? null,
        seq,
        parentsLeft ?? null,
      ];
      // Plain rows go in multi-row inserts: SQLite evaluates the partial indexes' predicates once per
      // statement run for their IN lists (an ephemeral table each run), and a statement run has its own
      // cost; a row that reads a parent or takes a sequence is written at once, after the rows before it
      // (rows go in in the order `places` gave their rowids: a null one is numbered by SQLite at insert).
      if (places === null) this.host.conn().run(INSERT_ONE, priority, priority, priority, priority, ...values.slice(1));
      else if (job.parentId || job.parentIds || job.topic !== undefined) {
        this.insertPlain(plain);
        this.host.conn().run(INSERT_JOB, values);
      } else {
        for (const v of values) plain.push(v);
        if (plain.length === ROWS_PER_INSERT * INSERT_COLUMNS) this.insertPlain(plain);
      }
      if (fanIn) this.host.conn().run(FAN_IN_SQL.edges, this.host.namespace, job.id, edgesJson(job, fanIn));
      stages.push(stage);
      T.insert.count(deltas, [{ stage, topic: job.topic, partition_no: job.partition }], null);
    }
    this.insertPlain(plain);
    this.counters.write(deltas);
    return stages;
  }

  /** Writes the rows whose values `plain` holds one after another ({@link INSERT_JOB}'s, bound as one array) in one statement, and empties it. */
  private insertPlain(plain: unknown[]): void {
    if (plain.length === 0) return;
    this.host.conn().run(insertValuesText(plain.length / INSERT_COLUMNS), plain);
    plain.length = 0;
  }
}
