/**
 * Retry, delete and cancel from outside on PostgreSQL (`backend.control`; see
 * `job-control-store.ts`). Each call is one statement (autocommit): its
 * first CTE picks at most `limit` rows of the target in id order and locks
 * them `FOR UPDATE`, the next ones change them and add their moves to the
 * stage counters (`postgres-stage-counters.ts`). Fixed SQL, as the other
 * writes that count their moves; one text per target form (ids, or
 * filter), so the by-id form is planned on the primary key and the filter
 * on the expiry index (`expires_at IS NOT NULL` holds exactly for terminal
 * jobs); cancel's filter (unfinished jobs) walks the primary key in id order.
 *
 * Lock order: a retry locks its job rows, then the partition rows whose
 * sequences it reserves, where an enqueue locks partition rows first; a
 * deadlock between the two is rolled back by PostgreSQL and the statement
 * runs again (the runner's `execute` runs a statement rolled back for a
 * deadlock again). A cancel likewise: its job rows, then the
 * partitions of running heads it frees.
 */
import { CANCELLABLE_STAGES, RETRYABLE_STAGES, TERMINAL_STAGES, type JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { retryableRow } from "../shared/retryable-row.js";
import { stageList } from "../shared/stage-list.js";
import { PauseStatements } from "../shared/pause-statements.js";
import { statement, type Statement } from "./postgres-statement.js";
import type { PostgresRunner } from "./postgres-runner.js";
import { awaitedNotify, transition, transitionTail } from "./postgres-transition.js";
import { cancelNotice, cancelNotifyPayload } from "./postgres-wakeups.js";

/** The wake-up a resume sends: `$1` channel, `$2` payload (the backend's own, as its other writes). */
const NOTIFY = statement("SELECT pg_notify($1, $2)");

/** The statement of each target form. */
interface ByTarget {
  ids: Statement;
  filter: Statement;
}

export class PostgresJobControlStore implements B.JobControlStore {
  /**
   * `$1` namespace, `$2` limit, `$3` now, `$4`/`$5` notify channel and
   * payload, then `$6` ids, or `$6` stage, `$7` job type and `$8` the id to start after (null: any).
   * Partitioned rows reserve `count` sequences of their partition and take
   * them in their old sequence order: they go to the partition's end.
   */
  private readonly retry: ByTarget;
  /** `$1` namespace, `$2` limit, then `$3` ids, or `$3` stage, `$4` job type and `$5` the id to start after (null: any). */
  private readonly remove: ByTarget;
  /**
   * `$1` namespace, `$2` limit, `$3` now, `$4` expires at, `$5` note (null: none), `$6`/`$7` notify channel and
   * wake-up payload, `$8` cancel payload, `$9` the done channel (X6: notified when an awaited job was cancelled), then `$10` ids, or `$10` stage, `$11` job type, `$12` the id to start after.
   */
  private readonly cancel: ByTarget;
  /** `$1` namespace, `$2` stage, `$3` job type (null: any), by action. */
  private readonly count: Record<"retry" | "delete" | "cancel", Statement>;
  /** X4's statements, written once (`shared/pause-statements.ts`). */
  private readonly pauses: PauseStatements;

  constructor(
    private readonly host: PostgresRunner,
    schema: string,
  ) {
    this.pauses = new PauseStatements(host.compiler, host.shared, host.shared, host.namespace);
    const jobs = `${schema}.later_jobs`;
    const retried = transition({ kinds: "retry", rows: "retried", from: "old_stage", to: "'enqueued'", at: "$3::bigint" });
    const gone = transition({ kinds: "delete", rows: "gone", from: "stage", to: null });
    // X3: the picked rows leave their stage (`cancel`), their waiting continuations `waiting` (`cancelChild`).
    const cancelled = transition({
      kinds: ["cancel", "cancelChild"],
      rows: "cancelled",
      from: "old_stage",
      to: "'cancelled'",
      at: "$3::bigint",
      note: "$5::text",
    });
    const retryable = retryableRow(jobs);
    const pick = (stages: readonly JobStage[], target: string) =>
      `SELECT id, stage, topic, partition_no, seq FROM ${jobs} WHERE namespace = $1 AND stage IN ${stageList(stages)} AND ${target}
  ORDER BY id LIMIT $2 FOR UPDATE`;
    const byIds = (n: number) => `id = ANY($${n}::text[])`;
    const byFilter = (n: number, terminal = true) =>
      `${terminal ? "expires_at IS NOT NULL" : "TRUE"} AND ($${n}::text IS NULL OR stage = $${n}::text) AND ($${n + 1}::text IS NULL OR job_type = $${n + 1}::text)
  AND ($${n + 2}::text IS NULL OR id > $${n + 2}::text)`;
    const retry = (target: string) =>
      statement(`WITH picked AS (
  ${pick(RETRYABLE_STAGES, `${target} AND ${retryable}`)}
), numbered AS (
  SELECT id, topic, partition_no, row_number() OVER (PARTITION BY topic, partition_no ORDER BY seq) AS k FROM picked WHERE topic IS NOT NULL
), reserved AS (
  UPDATE ${schema}.later_partitions p SET next_seq = p.next_seq + c.n
  FROM (SELECT topic, partition_no, count(*)::bigint AS n FROM numbered GROUP BY topic, partition_no) c
  WHERE p.namespace = $1 AND p.topic = c.topic AND p.partition_no = c.partition_no
  RETURNING p.topic, p.partition_no, p.next_seq - c.n AS first
), retried AS (
  UPDATE ${jobs} j SET ${retried.stage}, run_at = $3, updated_at = $3, expires_at = NULL, lease_owner = NULL, lease_expires_at = NULL,
    ${retried.history},
    seq = CASE WHEN j.topic IS NULL THEN j.seq ELSE r.first + n.k - 1 END
  FROM picked p LEFT JOIN numbered n ON n.id = p.id LEFT JOIN reserved r ON r.topic = n.topic AND r.partition_no = n.partition_no
  WHERE j.id = p.id
  RETURNING j.id, p.stage AS old_stage, j.topic, j.partition_no
)${transitionTail(schema, "$1", [retried], ["$4", "$5"])}
SELECT id, (SELECT count(*) FROM notified)::int AS notified FROM retried ORDER BY id`);
    const remove = (target: string) =>
      statement(`WITH picked AS (
  ${pick(TERMINAL_STAGES, target)}
), gone AS (
  DELETE FROM ${jobs} j USING picked p WHERE j.id = p.id
  RETURNING j.id, j.stage, j.topic, j.partition_no
)${transitionTail(schema, "$1", [gone])}
SELECT id FROM gone ORDER BY id`);
    // X3: the picked rows and their waiting continuations down the chain (`tree`: single-parent children by
    // `parent_id`, fan-in children (X5) through `later_job_parents`) end `cancelled`; a continuation is
    // re-checked `waiting` by the UPDATE (a fan-in child one of whose parents is cancelled is cancelled). A running partition head frees its partition
    // (epoch moved on: its owner's renewal reports it, and the next head may be claimed at once). Two
    // notifications, at most one each: the transition's wake-up (`notified`: a partitioned row was
    // cancelled, its partition may go on) and, after it, the cancel notice (`told`: a running job was
    // cancelled, its server renews now and aborts the attempt; see cancelNotice).
    const cancel = (target: string) =>
      statement(`WITH RECURSIVE picked AS (
  ${pick(CANCELLABLE_STAGES, target)}
), tree(id) AS (
  SELECT id FROM picked UNION SELECT c.id FROM tree t CROSS JOIN LATERAL (
    SELECT k.id FROM ${jobs} k WHERE k.parent_id = t.id AND k.namespace = $1 AND k.stage = 'waiting'
    UNION ALL SELECT e.child_id FROM ${schema}.later_job_parents e WHERE e.parent_id = t.id AND e.namespace = $1
  ) c
), cancelled AS (
  UPDATE ${jobs} j SET ${cancelled.stage}, unique_slot = NULL, lease_owner = NULL, lease_expires_at = NULL, updated_at = $3,
    expires_at = coalesce($3::bigint + ($10::jsonb ->> j.job_type)::bigint, $4), ${cancelled.history}
  FROM tree t LEFT JOIN picked p ON p.id = t.id
  WHERE j.id = t.id AND j.namespace = $1 AND (p.id IS NOT NULL OR j.stage = 'waiting')
  RETURNING j.id, coalesce(p.stage, 'waiting') AS old_stage, j.topic, j.partition_no, p.id IS NOT NULL AS picked, j.awaited
)${transitionTail(schema, "$1", [cancelled], ["$6", "$7"])}${awaitedNotify("cancelled", "$9")}, freed AS (
  UPDATE ${schema}.later_partitions pt SET lease_owner = NULL, lease_expires_at = NULL, epoch = pt.epoch + 1
  FROM (SELECT DISTINCT topic, partition_no FROM cancelled WHERE old_stage = 'running' AND topic IS NOT NULL ORDER BY topic, partition_no) c
  WHERE pt.namespace = $1 AND pt.topic = c.topic AND pt.partition_no = c.partition_no
  RETURNING pt.topic
), ${cancelNotice("cancelled", "$6", "$8")}
SELECT id, (SELECT count(*) FROM notified)::int + (SELECT count(*) FROM told)::int + (SELECT count(*) FROM freed)::int
  + (SELECT count(*) FROM woken)::int AS notified
FROM cancelled WHERE picked ORDER BY id`);
    const count = (stages: readonly JobStage[], extra = "") =>
      statement(`SELECT count(*)::bigint AS n FROM ${jobs} WHERE namespace = $1 AND stage IN ${stageList(stages)}
  AND expires_at IS NOT NULL AND ($2::text IS NULL OR stage = $2::text) AND ($3::text IS NULL OR job_type = $3::text)${extra}`);
    const countUnfinished = statement(`SELECT count(*)::bigint AS n FROM ${jobs} WHERE namespace = $1 AND stage IN ${stageList(CANCELLABLE_STAGES)}
  AND ($2::text IS NULL OR stage = $2::text) AND ($3::text IS NULL OR job_type = $3::text)`);
    this.count = { retry: count(RETRYABLE_STAGES, ` AND ${retryable}`), delete: count(TERMINAL_STAGES), cancel: countUnfinished };
    this.cancel = { ids: cancel(byIds(11)), filter: cancel(byFilter(11, false)) };
    this.retry = { ids: retry(byIds(6)), filter: retry(byFilter(6)) };
    this.remove = { ids: remove(byIds(3)), filter: remove(byFilter(3)) };
  }

  /** X4: a resume that deleted its row sends the backend's wake-up, so idle servers of other processes read the set again at once. */
  async pauseSet(params: B.PauseSetParams): Promise<boolean> {
    const changed = await this.pauses.set(params);
    if (changed && !params.paused) await this.host.execute(NOTIFY, [...this.host.notifyArgs]);
    return changed;
  }

  async pausedList(): Promise<B.PausedTarget[]> {
    return this.pauses.list();
  }

  async pauseTargetKnown(params: B.PauseTargetRef): Promise<boolean> {
    return this.pauses.known(params);
  }

  async retryMany(params: B.JobRetryManyParams): Promise<B.JobControlResult> {
    const head = [this.host.namespace, params.limit, params.now, ...this.host.notifyArgs];
    return this.run(this.retry, params.target, head);
  }

  async deleteMany(params: B.JobDeleteManyParams): Promise<B.JobControlResult> {
    return this.run(this.remove, params.target, [this.host.namespace, params.limit]);
  }

  async cancelMany(params: B.JobCancelManyParams): Promise<B.JobControlResult> {
    const [channel, payload] = this.host.notifyArgs;
    const head = [
      this.host.namespace,
      params.limit,
      params.now,
      params.expiresAt,
      params.reason,
      channel,
      payload,
      cancelNotifyPayload(this.host.namespace),
      this.host.doneChannel,
      params.retentionMsByType ? JSON.stringify(params.retentionMsByType) : null,
    ];
    return this.run(this.cancel, params.target, head);
  }

  async countMatching(params: B.JobCountMatchingParams): Promise<number> {
    const [row] = await this.host.execute(this.count[params.action], [this.host.namespace, params.filter.stage ?? null, params.filter.jobType ?? null]);
    return Number(row?.n ?? 0);
  }

  private async run(statements: ByTarget, target: B.JobControlTarget, head: unknown[]): Promise<B.JobControlResult> {
    const [s, values] =
      "ids" in target
        ? [statements.ids, [...head, [...target.ids]]]
        : [statements.filter, [...head, target.filter.stage ?? null, target.filter.jobType ?? null, target.filter.afterId ?? null]];
    const rows = await this.host.execute(s, values);
    return { ids: rows.map((r) => String(r.id)) };
  }
}
