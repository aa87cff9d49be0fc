/**
 * Stage counters of the SQLite backend: how many jobs each stage of a
 * namespace holds, and how many unfinished jobs each topic partition holds,
 * kept by triggers on `later_jobs` in the same transaction as every change,
 * so reading them is a few primary-key reads at any backlog (DESIGN §4, D7).
 *
 * How they are kept (migration 4): SQLite has row-level triggers only, and
 * one writer at a time, so one row per counter never makes writers wait on
 * each other. `AFTER INSERT` adds the new row's stage, `AFTER DELETE`
 * subtracts the old one, and `AFTER UPDATE OF stage … WHEN old.stage IS NOT
 * new.stage` moves one job between two counters: a lease renewal or a write
 * that leaves the stage as it was runs no trigger at all. The partition
 * depth triggers fire only for partitioned rows (`topic` set) whose
 * unfinished state changes (terminal stages: `success`, `failed`,
 * `cancelled`). Every statement that changes a stage is counted, including
 * ones written later, without remembering to. The counter tables are
 * `WITHOUT ROWID` (one b-tree each, keyed as they are read). Seeded by a
 * recount in the migration's `BEGIN IMMEDIATE` transaction, so no write
 * falls between the recount and the triggers.
 */
import { JOB_STAGES, type JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import type { SqliteConnection } from "./sqlite-connection.js";

const FINISHED = "('success', 'failed', 'cancelled')";

const addStage = (row: string) => `INSERT INTO later_stage_counts (namespace, stage, n) VALUES (${row}.namespace, ${row}.stage, 1)
    ON CONFLICT (namespace, stage) DO UPDATE SET n = n + 1;`;
const subtractStage = (row: string) => `UPDATE later_stage_counts SET n = n - 1 WHERE namespace = ${row}.namespace AND stage = ${row}.stage;`;

/** Migration 4. */
export const SQLITE_STAGE_COUNTERS_SQL = `
-- Jobs per (namespace, stage).
CREATE TABLE later_stage_counts (
  namespace TEXT NOT NULL,
  stage TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (namespace, stage)
) WITHOUT ROWID;
-- Unfinished jobs per (namespace, topic, partition).
CREATE TABLE later_partition_counts (
  namespace TEXT NOT NULL,
  topic TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (namespace, topic, partition_no)
) WITHOUT ROWID;
CREATE TRIGGER later_jobs_count_insert AFTER INSERT ON later_jobs BEGIN
  ${addStage("new")}
END;
CREATE TRIGGER later_jobs_count_update AFTER UPDATE OF stage ON later_jobs WHEN old.stage IS NOT new.stage BEGIN
  ${subtractStage("old")}
  ${addStage("new")}
END;
CREATE TRIGGER later_jobs_count_delete AFTER DELETE ON later_jobs BEGIN
  ${subtractStage("old")}
END;
CREATE TRIGGER later_jobs_depth_insert AFTER INSERT ON later_jobs WHEN new.topic IS NOT NULL AND new.stage NOT IN ${FINISHED} BEGIN
  INSERT INTO later_partition_counts (namespace, topic, partition_no, n) VALUES (new.namespace, new.topic, new.partition_no, 1)
    ON CONFLICT (namespace, topic, partition_no) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER later_jobs_depth_update AFTER UPDATE OF stage ON later_jobs
  WHEN new.topic IS NOT NULL AND (old.stage IN ${FINISHED}) IS NOT (new.stage IN ${FINISHED}) BEGIN
  INSERT INTO later_partition_counts (namespace, topic, partition_no, n)
    VALUES (new.namespace, new.topic, new.partition_no, CASE WHEN new.stage IN ${FINISHED} THEN -1 ELSE 1 END)
    ON CONFLICT (namespace, topic, partition_no) DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER later_jobs_depth_delete AFTER DELETE ON later_jobs WHEN old.topic IS NOT NULL AND old.stage NOT IN ${FINISHED} BEGIN
  UPDATE later_partition_counts SET n = n - 1 WHERE namespace = old.namespace AND topic = old.topic AND partition_no = old.partition_no;
END;
-- The recount that seeds them.
INSERT INTO later_stage_counts (namespace, stage, n) SELECT namespace, stage, count(*) FROM later_jobs GROUP BY namespace, stage;
INSERT INTO later_partition_counts (namespace, topic, partition_no, n)
  SELECT namespace, topic, partition_no, count(*) FROM later_jobs
  WHERE topic IS NOT NULL AND stage NOT IN ${FINISHED} GROUP BY namespace, topic, partition_no;
`;

/** What the readers need: the namespace and the open connection. */
export interface SqliteCounterHost {
  readonly namespace: string;
  conn(): SqliteConnection;
}

/** The readers of the counters: primary-key reads of the counter tables, never of the jobs. */
export class SqliteStageCounters {
  constructor(private readonly host: SqliteCounterHost) {}

  /** Jobs per stage of the namespace; every stage is present (0 when none). */
  stageCounts(): B.JobCountByStageResult {
    const counts = Object.fromEntries(JOB_STAGES.map((s) => [s, 0])) as Record<JobStage, number>;
    for (const r of this.host.conn().all("SELECT stage, n FROM later_stage_counts WHERE namespace = ?", this.host.namespace)) {
      if (String(r.stage) in counts) counts[r.stage as JobStage] = Number(r.n);
    }
    return { counts };
  }

  /** Unfinished jobs and the lease owner of every partition of the namespace's topics. */
  partitionDepth(): B.PartitionDepthResult {
    const rows = this.host.conn().all(
      `SELECT p.topic, p.partition_no, p.lease_owner, coalesce(c.n, 0) AS unfinished FROM later_partitions p
         LEFT JOIN later_partition_counts c ON c.namespace = p.namespace AND c.topic = p.topic AND c.partition_no = p.partition_no
       WHERE p.namespace = ? ORDER BY p.topic, p.partition_no`, this.host.namespace);
    return {
      partitions: rows.map((r) => ({
        topic: String(r.topic), partition: Number(r.partition_no), unfinished: Number(r.unfinished), leaseOwner: (r.lease_owner as string | null) ?? null,
      })),
    };
  }

  /** Unfinished jobs per topic of the namespace. */
  topicDepth(): B.TopicDepthResult {
    const rows = this.host.conn().all(
      `SELECT t.topic, t.partitions,
         (SELECT coalesce(sum(c.n), 0) FROM later_partition_counts c WHERE c.namespace = t.namespace AND c.topic = t.topic) AS unfinished
       FROM later_topics t WHERE t.namespace = ? ORDER BY t.topic`, this.host.namespace);
    return { topics: rows.map((r) => ({ topic: String(r.topic), partitions: Number(r.partitions), unfinished: Number(r.unfinished) })) };
  }
}
