/**
 * Stage counters of the SQLite backend: how many jobs each stage of a
 * namespace holds, and how many unfinished jobs each topic partition holds,
 * kept in the same transaction as every change, so reading them is a few
 * primary-key reads at any backlog (D7 in docs/semantics.md; docs/storage.md).
 *
 * How they are kept: by the statements themselves, through the one path of
 * a stage change (X13): each write site of the job, partition, control and
 * caller-insert code takes its history SQL from the `SqliteTransition` of
 * its kind (`sqlite-transition.ts`, built on the core table
 * `core/stage-transition.ts`) and, through the same transition's `count`,
 * collects its moves in a {@link StageDeltas} (from its `RETURNING` rows, or
 * the stage it just read); {@link SqliteStageCounters.write} adds the net
 * change, one upsert per changed counter, before the transaction commits. Row triggers
 * were measured first: one trigger program per changed row cost about
 * 4 µs of CPU per job on the claim-and-finish path (23 µs instead of 19),
 * far more than the 5% of processing the counters may cost, where a batch
 * of 32 claims pays two upserts here. The price is that a new statement
 * that changes stages must go through a transition; the conformance suite's
 * stage-counter test compares the counters with a GROUP BY after every kind
 * of change, and every stored history with the transition table.
 * SQLite has one writer at a time, so one row per counter never makes
 * writers wait on each other.
 *
 * A partitioned job (`topic` set) counts towards its partition's depth while
 * its stage is not terminal (`success`, `failed`, `cancelled`). The counter
 * tables are `WITHOUT ROWID` (one b-tree each, keyed as they are read).
 * Seeded by a recount in the migration's `BEGIN IMMEDIATE` transaction, so
 * no write falls between the recount and the first counted change.
 */
import { UNFINISHED_STAGES } from "../../core/job-stage.js";
import type { BoundStatement } from "../shared/shared-statement.js";
import type { SqliteHost } from "./sqlite-connection.js";

/** The migration's own list, frozen with it (a migration's text never changes once shipped). */
const FINISHED = "('success', 'failed', 'cancelled')";
const UNFINISHED = new Set<string>(UNFINISHED_STAGES);

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
-- The recount that seeds them; from here on every statement that changes a stage counts.
INSERT INTO later_stage_counts (namespace, stage, n) SELECT namespace, stage, count(*) FROM later_jobs GROUP BY namespace, stage;
INSERT INTO later_partition_counts (namespace, topic, partition_no, n)
  SELECT namespace, topic, partition_no, count(*) FROM later_jobs
  WHERE topic IS NOT NULL AND stage NOT IN ${FINISHED} GROUP BY namespace, topic, partition_no;
`;

// \`entered\` (migration 7): transitions into the stage so far, for the dashboard's throughput; same row, same upsert.
const STAGE_UPSERT = `INSERT INTO later_stage_counts (namespace, stage, n, entered) VALUES (?, ?, ?, ?)
  ON CONFLICT (namespace, stage) DO UPDATE SET n = n + excluded.n, entered = entered + excluded.entered`;
const PARTITION_UPSERT = `INSERT INTO later_partition_counts (namespace, topic, partition_no, n) VALUES (?, ?, ?, ?)
  ON CONFLICT (namespace, topic, partition_no) DO UPDATE SET n = n + excluded.n`;

/** The net change one transaction makes to the counters of one namespace, collected move by move. */
export class StageDeltas {
  /** Net change per stage. */
  readonly stages = new Map<string, number>();
  /** Jobs that entered each stage (inserts included), before netting: the dashboard's throughput. */
  readonly entered = new Map<string, number>();
  /** Net change of unfinished jobs per partition, keyed `topic\0partition`. */
  readonly partitions = new Map<string, { topic: string; partition: number; n: number }>();

  /**
   * One job moved from stage `from` to `to`; `from` null: inserted; `to`
   * null: deleted. `topic`/`partition`: the job's partition, if any.
   */
  move(from: unknown, to: unknown, topic: unknown = null, partition: unknown = null): this {
    if (from === to) return this;
    if (from !== null && from !== undefined) this.stages.set(String(from), (this.stages.get(String(from)) ?? 0) - 1);
    if (to !== null && to !== undefined) {
      this.stages.set(String(to), (this.stages.get(String(to)) ?? 0) + 1);
      this.entered.set(String(to), (this.entered.get(String(to)) ?? 0) + 1);
    }
    if (topic === null || topic === undefined) return this;
    const unfinished = (s: unknown) => (UNFINISHED.has(String(s)) ? 1 : 0);
    const change = unfinished(to) - unfinished(from);
    if (change === 0) return this;
    const key = `${String(topic)}\0${String(partition)}`;
    const entry = this.partitions.get(key);
    if (entry) entry.n += change;
    else this.partitions.set(key, { topic: String(topic), partition: Number(partition), n: change });
    return this;
  }

  /** The upserts that add these changes to the counters of `namespace`: one per changed counter. */
  statements(namespace: string): BoundStatement[] {
    const upserts: BoundStatement[] = [];
    for (const [stage, n] of this.stages) {
      const entered = this.entered.get(stage) ?? 0;
      if (n !== 0 || entered !== 0) upserts.push({ text: STAGE_UPSERT, values: [namespace, stage, n, entered] });
    }
    for (const p of this.partitions.values()) {
      if (p.n !== 0) upserts.push({ text: PARTITION_UPSERT, values: [namespace, p.topic, p.partition, p.n] });
    }
    return upserts;
  }

  /** `count` jobs moved from `from` to `to` (none of them partitioned, or none changing its unfinished state). */
  moveMany(from: string, to: string, count: number): this {
    if (count === 0 || from === to) return this;
    this.stages.set(from, (this.stages.get(from) ?? 0) - count);
    this.stages.set(to, (this.stages.get(to) ?? 0) + count);
    this.entered.set(to, (this.entered.get(to) ?? 0) + count);
    return this;
  }
}

/** Writes the counters, inside the caller's transaction (`SqliteInspectStore` reads them). */
export class SqliteStageCounters {
  constructor(private readonly host: SqliteHost) {}

  /** Adds `deltas` to the namespace's counters: one upsert per changed counter, inside the caller's `immediate` transaction. */
  write(deltas: StageDeltas): void {
    const c = this.host.conn();
    for (const s of deltas.statements(this.host.namespace)) c.run(s.text, ...s.values);
  }
}
