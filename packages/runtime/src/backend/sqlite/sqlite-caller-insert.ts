/**
 * `enqueueIn` on SQLite: the jobs are written into a caller-owned Kysely
 * transaction on the same database file, with the queries compiled by
 * Kysely (only Kysely knows how to run on the caller's transaction). A
 * partitioned job takes its sequence in that transaction too, and the stage
 * counters are added to there (see `sqlite-stage-counters.ts`).
 */
import { CompiledQuery, DummyDriver, Kysely, sql, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from "kysely";
import type { JobStage } from "../../core/job-stage.js";
import { InvalidArgumentError, UnknownTopicError } from "../../errors.js";
import type * as B from "../backend.js";
import type { LaterDatabase, LaterJobsTable } from "../schema.js";
import { insertStage } from "../shared/insert-stage.js";
import type { Row } from "../shared/job-rows.js";
import { isKyselyExecutor } from "./kysely-executor.js";
import { StageDeltas } from "./sqlite-stage-counters.js";

/** Compiles Kysely queries to SQLite SQL without a connection. */
const compiler = new Kysely<LaterDatabase>({
  dialect: {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  },
});

export async function insertIntoCallerTransaction(
  transaction: B.TransactionHandle,
  namespace: string,
  params: B.JobInsertManyParams,
): Promise<B.JobInsertManyResult> {
  if (!isKyselyExecutor(transaction)) {
    throw new InvalidArgumentError("enqueueIn: the SQLite backend takes a Kysely transaction (db.transaction().execute(trx => ...)) on the same database file");
  }
  const stages: JobStage[] = [];
  const deltas = new StageDeltas();
  for (const job of params.jobs) {
    let parent: Row | undefined;
    if (job.parentId) {
      const q = compiler.selectFrom("later_jobs").select(["stage", "last_error"]).where("id", "=", job.parentId).where("namespace", "=", namespace).compile();
      parent = (await transaction.executeQuery(q)).rows[0] as Row | undefined;
    }
    const { stage, error } = insertStage(job, params.now, parent);
    let seq: number | null = null;
    if (job.topic !== undefined) {
      const bump = compiler
        .updateTable("later_partitions")
        .set((eb) => ({ next_seq: eb("next_seq", "+", 1) }))
        .where("namespace", "=", namespace)
        .where("topic", "=", job.topic)
        .where("partition_no", "=", job.partition ?? -1)
        .returning(sql<number>`next_seq - 1`.as("seq"))
        .compile();
      const row = (await transaction.executeQuery(bump)).rows[0] as Row | undefined;
      if (!row) throw new UnknownTopicError(job.topic, job.partition);
      seq = Number(row.seq);
    }
    const q = compiler
      .insertInto("later_jobs")
      .values({
        id: job.id,
        namespace,
        job_type: job.jobType,
        payload: job.payload,
        stage,
        attempt: 0,
        retry_policy: job.retryPolicy,
        run_at: job.runAt,
        parent_id: job.parentId ?? null,
        last_error: error,
        stages: JSON.stringify([[stage, params.now]]),
        created_at: params.now,
        updated_at: params.now,
        expires_at: null,
        lease_owner: null,
        lease_expires_at: null,
        topic: job.topic ?? null,
        partition_no: job.partition ?? null,
        seq,
        waiters: 0,
      } satisfies LaterJobsTable)
      .compile();
    await transaction.executeQuery(q);
    stages.push(stage);
    deltas.move(null, stage, job.topic, job.partition);
  }
  for (const [stage, n] of deltas.stages) {
    await transaction.executeQuery(
      CompiledQuery.raw(
        `INSERT INTO later_stage_counts (namespace, stage, n) VALUES (?, ?, ?)
      ON CONFLICT (namespace, stage) DO UPDATE SET n = n + excluded.n`,
        [namespace, stage, n],
      ),
    );
  }
  for (const p of deltas.partitions.values()) {
    await transaction.executeQuery(
      CompiledQuery.raw(
        `INSERT INTO later_partition_counts (namespace, topic, partition_no, n) VALUES (?, ?, ?, ?)
      ON CONFLICT (namespace, topic, partition_no) DO UPDATE SET n = n + excluded.n`,
        [namespace, p.topic, p.partition, p.n],
      ),
    );
  }
  return { stages };
}
