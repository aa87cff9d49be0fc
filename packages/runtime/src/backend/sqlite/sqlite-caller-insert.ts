/**
 * `enqueueIn` on SQLite: the jobs are written into a caller-owned Kysely
 * transaction on the same database file. Only Kysely knows how to run on
 * the caller's transaction, so these statements are Kysely queries,
 * compiled once (see `shared/shared-statement.ts`) and run with
 * `executeQuery`. A partitioned job takes its sequence in that transaction
 * too, and the stage counters are added to there (see
 * `sqlite-stage-counters.ts`).
 */
import { CompiledQuery, sql } from "kysely";
import type { JobStage } from "../../core/job-stage.js";
import { UnknownTopicError } from "../../errors.js";
import type * as B from "../backend.js";
import type { LaterJobsTable } from "../schema.js";
import { fanInStage, insertStage, refuseParentsInBatch } from "../shared/insert-stage.js";
import { jobInsertRow } from "../shared/job-insert-row.js";
import type { Row } from "../shared/job-rows.js";
import { type RunStatement, SharedStatement, sqliteCompiler } from "../shared/shared-statement.js";
import { isKyselyExecutor } from "./kysely-executor.js";
import { transactionRefusal } from "../transaction-refusal.js";
import { adoptUngroupedSql } from "../shared/ungrouped-group.js";
import { FAN_IN_SQL } from "./sqlite-fan-in.js";
import { nextRowid } from "./sqlite-row-places.js";
import { StageDeltas } from "./sqlite-stage-counters.js";
import { SQLITE_TRANSITIONS as T, SqliteTransition } from "./sqlite-transition.js";

interface InNamespace {
  namespace: string;
}

/** The parent of a continuation, as the insert needs it. */
const PARENT = new SharedStatement<{ id: string } & InNamespace, Row | undefined>({
  build: (db, $) => db.selectFrom("later_jobs").select(["stage", "last_error"]).where("id", "=", $("id")).where("namespace", "=", $("namespace")),
  read: (rows) => rows[0],
});

/** Takes the partition's next sequence; no row: the partition does not exist. */
const NEXT_SEQ = new SharedStatement<{ topic: string; partition: number } & InNamespace, number | null>({
  build: (db, $) =>
    db
      .updateTable("later_partitions")
      .set((eb) => ({ next_seq: eb("next_seq", "+", 1) }))
      .where("namespace", "=", $("namespace"))
      .where("topic", "=", $("topic"))
      .where("partition_no", "=", $("partition"))
      .returning(sql<number>`next_seq - 1`.as("seq")),
  read: (rows) => (rows[0] ? Number(rows[0].seq) : null),
});

const INSERT = new SharedStatement<Omit<LaterJobsTable, "unique_key" | "unique_slot" | "result">, void>({
  build: (db, $) =>
    db
      .withTables<{ later_jobs: { rowid: number } }>()
      .insertInto("later_jobs")
      .values({
        rowid: nextRowid($("priority")),
        id: $("id"),
        namespace: $("namespace"),
        job_type: $("job_type"),
        payload: $("payload"),
        stage: $("stage"),
        attempt: $("attempt"),
        retry_policy: $("retry_policy"),
        timeout_ms: $("timeout_ms"),
        run_at: $("run_at"),
        parent_id: $("parent_id"),
        last_error: $("last_error"),
        stages: $("stages"),
        created_at: $("created_at"),
        updated_at: $("updated_at"),
        expires_at: $("expires_at"),
        lease_owner: $("lease_owner"),
        lease_expires_at: $("lease_expires_at"),
        topic: $("topic"),
        partition_no: $("partition_no"),
        seq: $("seq"),
        waiters: $("waiters"),
        meta: $("meta"),
        priority: $("priority"),
        parents_left: $("parents_left"),
        group_key: $("group_key"),
      }),
  read: () => undefined,
});

/** The inserted jobs (JSON ids) with no group whose type has a stored group limit, moved to the ungrouped group; binds ns, ns, ids, ns. */
const JOIN_UNGROUPED = adoptUngroupedSql({
  jobs: "later_jobs",
  limits: "later_limits",
  namespace: "?",
  rows: "id IN (SELECT value FROM json_each(?)) AND topic IS NULL",
});

/** Checks `transaction` at run time too (JavaScript callers, casts): anything but a Kysely transaction (a Kysely instance included) throws `InvalidArgumentError` saying what it got. */
export async function insertIntoCallerTransaction(
  transaction: B.SqliteTransaction,
  namespace: string,
  params: B.JobInsertManyParams<B.SqliteTransaction>,
): Promise<B.JobInsertManyResult> {
  if (!isKyselyExecutor(transaction) || (transaction as { isTransaction?: unknown }).isTransaction === false) {
    throw transactionRefusal(
      "enqueueIn",
      "the SQLite backend takes a Kysely transaction (db.transaction().execute(trx => ...)) on the same database file",
      transaction,
    );
  }
  refuseParentsInBatch(params.jobs); // before any statement on the caller's transaction (J5)
  const run: RunStatement = async (s) => (await transaction.executeQuery(CompiledQuery.raw(s.text, s.values))).rows as Row[];
  const stages: JobStage[] = [];
  const deltas = new StageDeltas();
  for (const job of params.jobs) {
    const parent = job.parentId ? await PARENT.run(sqliteCompiler, run, { id: job.parentId, namespace }) : undefined;
    // A fan-in job (X5): its parents read and marked, as `SqliteJobStore.insertRows` does (sqlite-fan-in.ts).
    let fanIn: Map<string, Row> | undefined;
    if (job.parentIds) {
      const ids = JSON.stringify(job.parentIds);
      fanIn = new Map((await run({ text: FAN_IN_SQL.parents, values: [namespace, ids] })).map((r) => [String(r.id), r]));
      await run({ text: FAN_IN_SQL.mark, values: [namespace, ids] });
    }
    const { stage, error, expiresAt, parentsLeft } = fanIn
      ? fanInStage(job, params.now, fanIn, params.retentionMs)
      : insertStage(job, params.now, parent, params.retentionMs);
    let seq: number | null = null;
    if (job.topic !== undefined) {
      seq = await NEXT_SEQ.run(sqliteCompiler, run, { topic: job.topic, partition: job.partition ?? -1, namespace });
      if (seq === null) throw new UnknownTopicError(job.topic, job.partition);
    }
    await INSERT.run(sqliteCompiler, run, {
      ...jobInsertRow(job, stage),
      namespace,
      progress: null,
      attempt: 0,
      parent_id: job.parentId ?? null,
      last_error: error,
      stages: SqliteTransition.first(stage, params.now),
      created_at: params.now,
      updated_at: params.now,
      expires_at: expiresAt,
      lease_owner: null,
      lease_expires_at: null,
      topic: job.topic ?? null,
      partition_no: job.partition ?? null,
      seq,
      waiters: 0,
      parents_left: parentsLeft ?? null,
    });
    if (fanIn) {
      const edges = JSON.stringify(job.parentIds!.map((id) => [id, fanIn.get(id)?.stage === "success" ? 1 : 0]));
      await run({ text: FAN_IN_SQL.edges, values: [namespace, job.id, edges] });
    }
    stages.push(stage);
    T.insert.count(deltas, [{ stage, topic: job.topic, partition_no: job.partition }], null);
  }
  // X9: the jobs with no group of a group-limited type join their ungrouped group (shared/ungrouped-group.ts), once the
  // inserts hold the write lock: read first, in a caller's deferred transaction, the limits would pin a snapshot that
  // another process's commit makes the inserts fail on ("database is locked").
  await run({ text: JOIN_UNGROUPED, values: [namespace, namespace, JSON.stringify(params.jobs.map((j) => j.id)), namespace] });
  for (const s of deltas.statements(namespace)) await run(s);
  return { stages };
}
