/**
 * The partition statements of the PostgreSQL backend, as fixed SQL text
 * (see `postgres-partition-store.ts` for their locks and indexes).
 */
import { TERMINAL_STAGES } from "../../core/job-stage.js";
import { stageList } from "../shared/stage-list.js";
import { idIn, putBack, releaseChild, releasedTo } from "./postgres-job-queries.js";
import { inPartition, inPartitionAfter, partitionOrder } from "./postgres-partition-range.js";
import { PostgresStageCounters } from "./postgres-stage-counters.js";
import { statement, type Statement, StatementsMadeOnUse } from "./postgres-statement.js";
import { awaitedNotify, type PgTransition, transition, transitionTail } from "./postgres-transition.js";

const TERMINAL = stageList(TERMINAL_STAGES);

/** The partition statements of one schema (see `PostgresPartitionStore`). */
export class PostgresPartitionQueries {
  readonly topicRead: Statement;
  readonly topicInsert: Statement;
  /**
   * The free partitions asked for, locked, each with its head. The heads are read in the statement's snapshot,
   * taken before the partition rows are locked: a partition whose lease another server took, ran and freed
   * meanwhile is locked in its new version (READ COMMITTED re-checks only the partition row), beside a head
   * that has since finished. So its heads are claims to check, never facts: {@link headsRun} and
   * {@link headsTakeOver} take only a head still in the stage and at the attempt it was read at.
   */
  readonly freeHeads: Statement;
  readonly headOf: Statement;
  readonly leaseTake: Statement;
  /** `$1` ns, `$2` owner, `$3` now, `$4` ids, `$5` the attempt each was read at: claims those still claimable at it. */
  readonly headsRun: Statement;
  /** `$1` ns, `$2` owner, `$3` now, `$4` ids, `$5` the attempt each was read at: takes over those still `running` at it. */
  readonly headsTakeOver: Statement;
  readonly held: Statement;
  readonly behind: Statement;
  readonly followersRun: Statement;
  readonly headsPutBack: Statement;
  readonly leaseFree: Statement;
  readonly headRelease: Statement;
  readonly renew: Statement;
  readonly heartbeat: Statement;
  readonly memberRemove: Statement;
  readonly forceFail: Statement;
  readonly bumpEpoch: Statement;
  readonly lock: Statement;
  readonly truncate: Statement;
  private readonly successNextText: (room: number) => string;
  private readonly aheadText: (runMax: number) => string;
  private readonly runSuccessNextText: (room: number) => string;
  private readonly runSuccessNexts = new StatementsMadeOnUse<number>();
  /** Statements made per value written in, on first use (a server has one `partitionRunMax`). */
  private readonly successNexts = new StatementsMadeOnUse<number>();
  private readonly aheads = new StatementsMadeOnUse<number>();

  /**
   * A head's success that claims the next head with up to `room` followers (P3: `partitionRunMax` − 1),
   * with `room` written in its `LIMIT`: bound as a parameter, PostgreSQL estimates a `LIMIT` as a tenth of
   * the rows, so the generic plan never looked as cheap as the custom ones and this statement of a dozen
   * CTEs was planned anew on every run (about 1.6 ms of server CPU, twice its execution, measured with
   * `partitionRunMax: 1`). As the plain claim's batch sizes (`PostgresClaimQueries.claimBatch`).
   */
  successNext(room: number): Statement {
    return this.successNexts.of(room, this.successNextText);
  }

  /** {@link successNext} for a run whose head and followers all succeeded (P3); `room` written in as there. */
  runSuccessNext(room: number): Statement {
    return this.runSuccessNexts.of(room, this.runSuccessNextText);
  }

  /** A partition's next run, its head and at most `runMax` − 1 jobs behind it; `runMax` written in, as {@link successNext}'s room. */
  ahead(runMax: number): Statement {
    return this.aheads.of(runMax, this.aheadText);
  }

  constructor(schema: string) {
    const jobs = `${schema}.later_jobs`;
    const parts = `${schema}.later_partitions`;
    /** The counter and wake-up CTEs of a statement's transitions (see postgres-transition.ts); `$1` is every statement's namespace. */
    const tail = (transitions: PgTransition[], notify?: [string, string]) => transitionTail(schema, "$1", transitions, notify);
    // A partition's head: one probe of later_jobs_partition_head, whatever the statistics (see inPartition).
    // Not probed when the partition has no unfinished job (unfinishedOf): the range would read on to the namespace's end.
    const head = (p: string) => `SELECT j.id, j.job_type, j.stage, j.run_at, j.seq, j.attempt FROM ${jobs} j
      WHERE ${inPartition("j", `${p}.namespace`, `${p}.topic`, `${p}.partition_no`)}
        AND j.stage NOT IN ${TERMINAL} AND ${PostgresStageCounters.unfinishedOf(schema, `${p}.namespace`, `${p}.topic`, `${p}.partition_no`)} > 0
      ORDER BY ${partitionOrder("j")} LIMIT 1`;
    this.topicRead = statement(`SELECT topic, partitions FROM ${schema}.later_topics WHERE namespace = $1 AND topic = ANY($2::text[]) FOR UPDATE`);
    this.topicInsert = statement(`WITH t AS (
  INSERT INTO ${schema}.later_topics (namespace, topic, partitions, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING
)
INSERT INTO ${parts} (namespace, topic, partition_no) SELECT $1, $2, n FROM generate_series(0, $3::int - 1) n ON CONFLICT DO NOTHING`);
    // The partitions asked are locked first (materialized), so that only theirs are probed: written as one join, the
    // planner probed the head of every free partition of the namespace, then kept those asked.
    this.freeHeads = statement(`WITH p AS MATERIALIZED (
  SELECT p.namespace, p.topic, p.partition_no, p.run_until_seq, p.careful_until_seq, p.next_seq FROM ${parts} p
  WHERE p.namespace = $1 AND (p.topic, p.partition_no) IN (SELECT * FROM unnest($2::text[], $3::int[]))
    AND (p.lease_owner IS NULL OR p.lease_expires_at < $4)
  ORDER BY p.topic, p.partition_no
  FOR UPDATE OF p SKIP LOCKED
)
SELECT p.topic, p.partition_no, p.run_until_seq, p.careful_until_seq, p.next_seq, h.id, h.job_type, h.stage, h.run_at, h.seq, h.attempt
FROM p CROSS JOIN LATERAL (${head("p")}) h
ORDER BY p.topic, p.partition_no`);
    this.headOf = statement(`SELECT h.* FROM ${parts} p CROSS JOIN LATERAL (${head("p")}) h
WHERE p.namespace = $1 AND p.topic = $2 AND p.partition_no = $3`);
    // With the run each claim took (P3): its last sequence, and the careful bound (null: none) after a dead owner's run.
    this.leaseTake = statement(`UPDATE ${parts} p SET lease_owner = $2, lease_expires_at = $3, epoch = p.epoch + 1,
  run_until_seq = c.run_until_seq, careful_until_seq = c.careful_until_seq
FROM unnest($4::text[], $5::int[], $6::bigint[], $7::bigint[]) AS c(topic, partition_no, run_until_seq, careful_until_seq)
WHERE p.namespace = $1 AND p.topic = c.topic AND p.partition_no = c.partition_no
RETURNING p.topic, p.partition_no, p.epoch`);
    // The attempt a head was read at: `$5` at the place of its id in `$4` (of headsRun and headsTakeOver).
    const readAttempt = "(SELECT c.attempt FROM unnest($4::text[], $5::int[]) AS c(id, attempt) WHERE c.id = j.id)";
    // The heads are locked first (id order, as every writer of several job rows) to read the stage each leaves, and
    // only those still claimable at the attempt they were read at are claimed (see {@link headsRun}).
    const run = transition({ kinds: "claim", rows: "run", from: "old_stage", to: "'running'", at: "$3::bigint" });
    this.headsRun = statement(`WITH heads AS (
  SELECT id, stage FROM ${jobs} j WHERE namespace = $1 AND ${idIn("id", "$4")} AND stage IN ('enqueued', 'delayed', 'requeued')
    AND attempt = ${readAttempt}
  ORDER BY id FOR UPDATE
), run AS (
  UPDATE ${jobs} j SET ${run.stage}, attempt = j.attempt + 1, lease_owner = $2, lease_expires_at = NULL, updated_at = $3,
    ${run.history}
  FROM heads h WHERE j.id = h.id
  RETURNING j.id, j.job_type, j.payload, j.attempt, j.retry_policy, j.timeout_ms, j.run_at, j.seq, j.topic, j.partition_no, h.stage AS old_stage, j.meta
)${tail([run])}
SELECT id, job_type, payload, attempt, retry_policy, timeout_ms, run_at, seq, topic, partition_no, meta FROM run`);
    // A head still `running` under a free lease: its claimer is gone; taken over without a new attempt (lostAttempt).
    this.headsTakeOver = statement(`UPDATE ${jobs} j SET lease_owner = $2, updated_at = $3
WHERE j.namespace = $1 AND ${idIn("j.id", "$4")} AND j.stage = 'running'
  AND j.attempt = ${readAttempt}
RETURNING j.id, j.job_type, j.payload, j.attempt, j.retry_policy, j.timeout_ms, j.run_at, j.seq, j.topic, j.partition_no, j.meta`);
    this.held = statement(`SELECT run_until_seq, careful_until_seq FROM ${parts}
WHERE namespace = $1 AND topic = $2 AND partition_no = $3 AND epoch = $4 AND lease_owner = $5 FOR UPDATE`);
    // A run's candidate followers (P3): for each claimed head, the next unfinished jobs of its partition, one
    // range of later_jobs_partition_head past the head's sequence (a LATERAL per partition), at most `room`;
    // the caller keeps their ready prefix. Read only. $1 ns, $2 topics, $3 partitions, $4 head seqs, $5 rooms.
    this.behind =
      statement(`SELECT c.topic, c.partition_no, f.* FROM unnest($2::text[], $3::int[], $4::bigint[], $5::int[]) AS c(topic, partition_no, seq, room)
CROSS JOIN LATERAL (
  SELECT j.id, j.job_type, j.stage, j.payload, j.attempt, j.retry_policy, j.timeout_ms, j.run_at, j.seq, j.meta FROM ${jobs} j
  WHERE ${inPartitionAfter("j", "$1", "c.topic", "c.partition_no", "c.seq")} AND j.stage NOT IN ${TERMINAL}
  ORDER BY ${partitionOrder("j")} LIMIT c.room
) f
ORDER BY c.topic, c.partition_no, f.seq`);
    // A partition's next run, read at once: its head and the unfinished jobs behind it, at most runMax rows in all
    // (one range of later_jobs_partition_head), and no more than the partition has (unfinishedOf). $1 ns, $2 topic,
    // $3 partition; runMax written in (see ahead).
    this.aheadText = (runMax) => `SELECT j.id, j.job_type, j.stage, j.payload, j.attempt, j.retry_policy, j.timeout_ms, j.run_at, j.seq, j.meta FROM ${jobs} j
WHERE ${inPartition("j", "$1", "$2", "$3")} AND j.stage NOT IN ${TERMINAL}
ORDER BY ${partitionOrder("j")} LIMIT least(${runMax}, ${PostgresStageCounters.unfinishedOf(schema, "$1", "$2", "$3")})`;
    // The followers of a run that ran, written as claimed at their start, in run order, as long as each is still
    // in a claimable stage at the attempt before its own: the first that is not (cancelled meanwhile) ends the
    // prefix written. Locked in id order, as every writer of several job rows. $1 ns, $2 owner, $3 ids (run
    // order), $4 attempts run, $5 start times.
    // The locked rows carry their parameters (`cur`), and the prefix's bound is computed once (`upto`, materialized:
    // inlined, it was run again for every row written).
    const ran = transition({ kinds: "claim", rows: "ran", from: "old_stage", to: "'running'", at: "h.started_at" });
    this.followersRun = statement(`WITH c AS (
  SELECT * FROM unnest($3::text[], $4::int[], $5::bigint[]) WITH ORDINALITY AS c(id, attempt, started_at, ord)
), cur AS (
  SELECT j.id, j.stage, c.started_at, c.ord FROM ${jobs} j JOIN c ON j.id = c.id
  WHERE ${idIn("j.id", "$3")} AND j.namespace = $1 AND j.attempt = c.attempt - 1 AND j.stage IN ('enqueued', 'delayed', 'requeued')
  ORDER BY j.id FOR UPDATE OF j
), upto AS MATERIALIZED (
  SELECT coalesce(min(c.ord) FILTER (WHERE cur.id IS NULL), 2147483647) AS stop FROM c LEFT JOIN cur ON cur.id = c.id
), ran AS (
  UPDATE ${jobs} j SET ${ran.stage}, attempt = j.attempt + 1, lease_owner = $2, lease_expires_at = NULL, updated_at = h.started_at,
    ${ran.history}
  FROM cur h CROSS JOIN upto WHERE j.id = h.id AND h.ord < upto.stop
  RETURNING j.id, j.topic, j.partition_no, h.stage AS old_stage
)${tail([ran])}
SELECT id FROM ran`);
    // A dead owner's head found `running` inside its run (P3): put back unstarted, attempt undone, as a release.
    // $1 ns, $2 ids, $3 attempts, $4 now, $5/$6 notify channel and payload.
    const undone = putBack("undone", "$4::bigint", "NULL::text");
    this.headsPutBack = statement(`WITH c AS (
  SELECT * FROM unnest($2::text[], $3::int[]) AS c(id, attempt)
), undone AS (
  UPDATE ${jobs} j SET ${undone.stage}, attempt = j.attempt - 1, lease_owner = NULL, lease_expires_at = NULL, updated_at = $4,
    ${undone.history}
  FROM c WHERE ${idIn("j.id", "$2")} AND j.id = c.id AND j.attempt = c.attempt AND j.namespace = $1 AND j.stage = 'running'
  RETURNING j.id, j.stage, j.topic, j.partition_no
)${tail([undone], ["$5", "$6"])}
SELECT id, (SELECT count(*) FROM notified)::int AS notified FROM undone`);
    // A success, and the next head claimed (or the lease freed), in one statement: the hot path of a
    // busy partition. Every CTE sees the snapshot before the statement, so the finished head is
    // excluded by id, and a continuation of the head that this success releases is still `waiting`
    // in `nxt`: when it is the next head, due, and of `$11`, `ready` takes it as it is, `released`
    // leaves it out (a row updated twice in one statement keeps one update) and `claimed` moves it
    // from `waiting` straight to `running`, its history and `run_at` as a release then a claim write
    // them; it counts as released. As SQLite's finish then claim, one transaction (J5, P3). The
    // common case pays one more test on the one `nxt` row and a filter on `released` by `ready`'s id.
    // $1 ns, $2 topic, $3 partition, $4 epoch, $5 owner, $6 id, $7 now, $8 expires_at, $9 attempt,
    // $10 claim next?, $11 job types, $12 next lease expiry, $13/$14 notify channel and payload,
    // $15 the result's JSON text (null: none, X6), $16 the done channel; the room for followers (P3: runMax - 1) is
    // written in (see successNext).
    // The next head's run (P3) is read here too (`behind`: the rows past it, `run`: their ready prefix, by a
    // window over sequence order; none while the partition is careful up to the head), and its last sequence
    // recorded with the lease; the caller reads the followers from the `followers` JSON column.
    const done = transition({ kinds: "succeed", rows: "done", from: "'running'", to: "'success'", at: "$7::bigint" });
    const released = releaseChild("released", "$7");
    // The next head: claimed from its stage; a waiting continuation of the head is released (`enqueued`) then claimed.
    const claimed = transition({ kinds: "claim", rows: "claimed", from: "old_stage", to: "'running'", at: "$7::bigint" });
    const releasedNow = transition({ kinds: "releaseChild", rows: "claimed", from: "'waiting'", to: "'enqueued'", at: "$7::bigint" });
    // The next run's part of `successNext` and `runSuccessNext`, after their own CTEs (from `nxt` to `claimed`):
    // the partition's next unfinished job past `after` (SQL of a sequence), claimed when it is ready (`ready`: a due
    // job of the types asked, or a waiting continuation whose parent is among `parents`, released and claimed at
    // once) with the ready prefix behind it (`run`, at most `room`, none while the partition is careful up to it),
    // the continuations of `released` released, and the lease moved to the next run's epoch and last sequence, or
    // freed when nothing is ready, if `leaseIf` (SQL). Every CTE sees the snapshot before the statement, so `after`
    // must exclude the rows the statement finished. A next head cancelled after that snapshot (X3: a cancel of a job
    // not running takes no partition lock) is re-checked by `claimed` when its lock is granted, and left as it is:
    // the lease then moved to an epoch with no head, which the caller frees (see `leftOverLease`).
    const nextRun = (room: number, o: { after: string; nxtIf: string; parents: string; released: string; leaseIf: string }) => `), nxt AS (
  SELECT j.id, j.job_type, j.stage, j.run_at, j.parent_id, j.seq FROM ${jobs} j
  WHERE ${inPartitionAfter("j", "$1", "$2", "$3", o.after)} AND j.stage NOT IN ${TERMINAL}
    AND ${o.nxtIf} AND ${o.after} < (SELECT next_seq - 1 FROM held)
  ORDER BY ${partitionOrder("j")} LIMIT 1
), ready AS (
  SELECT id, stage, seq FROM nxt WHERE job_type = ANY($11::text[])
    AND (stage = 'enqueued' OR (stage IN ('delayed', 'requeued') AND run_at <= $7) OR (stage = 'waiting' AND parent_id IN (${o.parents}) AND run_at <= $7))
), behind AS (
  SELECT b.*, bool_and(b.job_type = ANY($11::text[]) AND (b.stage = 'enqueued' OR (b.stage IN ('delayed', 'requeued') AND b.run_at <= $7)))
    OVER (ORDER BY b.seq) AS ok
  FROM (
    SELECT j.id, j.job_type, j.stage, j.payload, j.attempt, j.retry_policy, j.timeout_ms, j.run_at, j.seq, j.meta FROM ${jobs} j
    WHERE ${inPartitionAfter("j", "$1", "$2", "$3", "(SELECT seq FROM ready)")} AND j.stage NOT IN ${TERMINAL}
      AND (SELECT seq FROM ready) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM held WHERE careful_until_seq >= (SELECT seq FROM ready))
    ORDER BY ${partitionOrder("j")} LIMIT least(${room}, (SELECT next_seq - 1 FROM held) - (SELECT seq FROM ready))
  ) b
), run AS (
  SELECT * FROM behind WHERE ok
), released AS (
  UPDATE ${jobs} k SET ${releasedTo(released, "$7")}
  WHERE k.stage = 'waiting' AND k.namespace = $1 AND k.parent_id IN (${o.released}) AND k.id NOT IN (SELECT id FROM ready)
  RETURNING k.id, k.stage, k.topic, k.partition_no
), lease AS (
  UPDATE ${parts} p SET
    lease_owner = CASE WHEN EXISTS (SELECT 1 FROM ready) THEN p.lease_owner END,
    lease_expires_at = CASE WHEN EXISTS (SELECT 1 FROM ready) THEN $12::bigint END,
    epoch = p.epoch + CASE WHEN EXISTS (SELECT 1 FROM ready) THEN 1 ELSE 0 END,
    run_until_seq = CASE WHEN EXISTS (SELECT 1 FROM ready) THEN coalesce((SELECT max(seq) FROM run), (SELECT seq FROM ready)) ELSE p.run_until_seq END,
    careful_until_seq = CASE WHEN p.careful_until_seq < (SELECT seq FROM ready) THEN NULL ELSE p.careful_until_seq END
  WHERE p.namespace = $1 AND p.topic = $2 AND p.partition_no = $3 AND p.epoch = $4 AND ${o.leaseIf}
  RETURNING p.epoch
), claimed AS (
  UPDATE ${jobs} j SET ${claimed.stage}, attempt = j.attempt + 1, lease_owner = $5, updated_at = $7,
    run_at = CASE WHEN r.stage = 'waiting' THEN $7::bigint ELSE j.run_at END,
    stages = CASE WHEN r.stage = 'waiting' THEN ${claimed.append(releasedNow.append("j.stages"))} ELSE ${claimed.append("j.stages")} END
  FROM ready r WHERE j.id = r.id AND j.stage = r.stage
  RETURNING j.id, j.job_type, j.payload, j.attempt, j.retry_policy, j.timeout_ms, j.run_at, j.seq, j.topic, j.partition_no, r.stage AS old_stage, j.meta
`;
    // The columns of the next run claimed (its head, whose id is null when none was, and its followers' JSON).
    const nextRunColumns = `(SELECT epoch FROM lease) AS epoch,
  c.id, c.job_type, c.payload, c.attempt, c.retry_policy, c.timeout_ms, c.run_at, c.seq, c.meta,
  (SELECT json_agg(json_build_object('id', r.id, 'job_type', r.job_type, 'stage', r.stage, 'payload', r.payload, 'attempt', r.attempt,
    'retry_policy', r.retry_policy, 'timeout_ms', r.timeout_ms, 'run_at', r.run_at, 'seq', r.seq, 'meta', r.meta) ORDER BY r.seq) FROM run r) AS followers
FROM (SELECT 1) one LEFT JOIN claimed c ON true`;
    this.successNextText = (room) => `WITH held AS (
  SELECT careful_until_seq, next_seq FROM ${parts} WHERE namespace = $1 AND topic = $2 AND partition_no = $3 AND epoch = $4 AND lease_owner = $5 FOR UPDATE
), done AS (
  UPDATE ${jobs} j SET ${done.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = $7, expires_at = $8,
    ${done.history}, result = $15::text
  WHERE j.id = $6 AND j.attempt = $9 AND j.namespace = $1 AND j.stage || '' = 'running' AND EXISTS (SELECT 1 FROM held)
  RETURNING j.id, j.waiters, j.topic, j.partition_no, j.awaited, j.seq
${nextRun(room, { after: "(SELECT seq FROM done)", nxtIf: "$10::boolean", parents: "$6", released: "SELECT id FROM done", leaseIf: "EXISTS (SELECT 1 FROM done)" })})${tail([done, released, claimed], ["$13", "$14"])}${awaitedNotify("done", "$16")}
SELECT (SELECT count(*) FROM done)::int AS applied, (SELECT count(*) FROM woken)::int AS woken,
  (SELECT count(*) FROM released)::int + (SELECT count(*) FROM claimed WHERE old_stage = 'waiting')::int AS released,
  (SELECT max(waiters) FROM done) AS waiters, (SELECT count(*) FROM notified)::int AS notified, ${nextRunColumns}`;
    // A run whose head and followers all succeeded (P3), the common case of a busy partition, in one statement as
    // `successNext` is for a run of one: what `held`, `followersRun`, `finish` and the next run's claim write in turn
    // in a transaction, with each follower's row updated once (its `running` and `success` entries appended
    // together) instead of twice. The same fences: the partition row at the claim's epoch and owner (locked first),
    // the head `running` at its attempt, the followers' prefix still claimable at the attempt before theirs (locked in
    // id order; the first that is not, cancelled meanwhile, ends the prefix written). The counters count a
    // follower's move into `running` (its `entered` too) and out of it into `success`, as the two statements did.
    // The next run starts past the last job written (past the head when none was), and a continuation of any job
    // written may be its head. As in `followersRun`, the locked followers carry their parameters and `upto` is
    // computed once (a quarter of the statement's server CPU went to doing both again per follower).
    // $1-$16 as `successNext`; $17 follower ids (run order), $18 their attempts run,
    // $19 their start times, $20 their expires_at, $21 their results (JSON text or null, X6).
    const headDone = transition({ kinds: "succeed", rows: "done", from: "'running'", to: "'success'", at: "$7::bigint" });
    const followerRan = transition({ kinds: "claim", rows: "fdone", from: "old_stage", to: "'running'", at: "h.started_at" });
    const followerDone = transition({ kinds: "succeed", rows: "fdone", from: "'running'", to: "'success'", at: "$7::bigint" });
    this.runSuccessNextText = (room) => `WITH held AS (
  SELECT careful_until_seq, next_seq FROM ${parts} WHERE namespace = $1 AND topic = $2 AND partition_no = $3 AND epoch = $4 AND lease_owner = $5 FOR UPDATE
), fw AS (
  SELECT * FROM unnest($17::text[], $18::int[], $19::bigint[], $20::bigint[], $21::text[]) WITH ORDINALITY AS fw(id, attempt, started_at, expires_at, result, ord)
), cur AS (
  SELECT j.id, j.stage, fw.started_at, fw.expires_at, fw.result, fw.ord FROM ${jobs} j JOIN fw ON j.id = fw.id
  WHERE ${idIn("j.id", "$17")} AND j.namespace = $1 AND j.attempt = fw.attempt - 1 AND j.stage IN ('enqueued', 'delayed', 'requeued') AND EXISTS (SELECT 1 FROM held)
  ORDER BY j.id FOR UPDATE OF j
), upto AS MATERIALIZED (
  SELECT coalesce(min(fw.ord) FILTER (WHERE cur.id IS NULL), 2147483647) AS stop FROM fw LEFT JOIN cur ON cur.id = fw.id
), done AS (
  UPDATE ${jobs} j SET ${headDone.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = $7, expires_at = $8,
    ${headDone.history}, result = $15::text
  WHERE j.id = $6 AND j.attempt = $9 AND j.namespace = $1 AND j.stage || '' = 'running' AND EXISTS (SELECT 1 FROM held)
  RETURNING j.id, j.waiters, j.topic, j.partition_no, j.awaited, j.seq
), fdone AS (
  UPDATE ${jobs} j SET ${followerDone.stage}, attempt = j.attempt + 1, lease_owner = NULL, lease_expires_at = NULL, updated_at = $7,
    expires_at = h.expires_at, stages = ${followerDone.append(followerRan.append("j.stages"))}, result = h.result
  FROM cur h CROSS JOIN upto WHERE j.id = h.id AND h.ord < upto.stop
  RETURNING j.id, j.waiters, j.topic, j.partition_no, j.awaited, j.seq, h.stage AS old_stage
), finished AS (
  SELECT id, waiters, awaited, seq FROM done UNION ALL SELECT id, waiters, awaited, seq FROM fdone
${nextRun(room, {
  after: `coalesce((SELECT max(seq) FROM finished), (SELECT h.seq FROM ${jobs} h WHERE h.id = $6 AND h.namespace = $1))`,
  nxtIf: "$10::boolean AND EXISTS (SELECT 1 FROM held)",
  parents: "SELECT id FROM finished",
  released: "SELECT id FROM finished WHERE waiters > 0",
  leaseIf: "EXISTS (SELECT 1 FROM held)",
})})${tail([headDone, followerRan, followerDone, released, claimed], ["$13", "$14"])}${awaitedNotify("finished", "$16")}
SELECT (SELECT count(*) FROM held)::int AS held, (SELECT count(*) FROM done)::int AS applied, (SELECT count(*) FROM fdone)::int AS followers_applied,
  (SELECT count(*) FROM woken)::int AS woken,
  (SELECT count(*) FROM released)::int + (SELECT count(*) FROM claimed WHERE old_stage = 'waiting')::int AS released,
  (SELECT string_agg(id, ',') FROM finished WHERE waiters > 0) AS marked, (SELECT count(*) FROM notified)::int AS notified,
  ${nextRunColumns}`;
    this.leaseFree = statement(`UPDATE ${parts} SET lease_owner = NULL, lease_expires_at = NULL
WHERE namespace = $1 AND topic = $2 AND partition_no = $3 AND epoch = $4`);
    // Shutdown's put-back: the partition rows still held at the claim's epoch are locked (in (topic, partition)
    // order, as every writer of several), their lease freed and their heads put back, attempt undone.
    // $1 ns, $2 owner, $3 topics, $4 partitions, $5 epochs, $6 ids, $7 attempts, $8 now, $9/$10 notify channel and payload,
    // $11 the history entry's note (null: none; docs/semantics.md J9).
    const back = putBack("rel", "$8::bigint", "$11::text");
    this.headRelease = statement(`WITH c AS (
  SELECT * FROM unnest($3::text[], $4::int[], $5::bigint[], $6::text[], $7::int[]) AS c(topic, partition_no, epoch, id, attempt)
), held AS (
  SELECT p.topic, p.partition_no FROM ${parts} p JOIN c ON p.topic = c.topic AND p.partition_no = c.partition_no AND p.epoch = c.epoch
  WHERE p.namespace = $1 AND p.lease_owner = $2 ORDER BY p.topic, p.partition_no FOR UPDATE OF p
), freed AS (
  UPDATE ${parts} p SET lease_owner = NULL, lease_expires_at = NULL FROM held h
  WHERE p.namespace = $1 AND p.topic = h.topic AND p.partition_no = h.partition_no
  RETURNING p.topic
), rel AS (
  UPDATE ${jobs} j SET ${back.stage}, attempt = j.attempt - 1, lease_owner = NULL, lease_expires_at = NULL, updated_at = $8,
    ${back.history}
  FROM c JOIN held h ON h.topic = c.topic AND h.partition_no = c.partition_no
  WHERE j.id = c.id AND j.attempt = c.attempt AND j.namespace = $1 AND j.stage = 'running'
  RETURNING j.id, j.stage, j.topic, j.partition_no
)${tail([back], ["$9", "$10"])}
SELECT id, (SELECT count(*) FROM notified)::int AS notified, (SELECT count(*) FROM freed)::int AS freed FROM rel`);
    // The rows are locked first, in (topic, partition) order: an enqueue reserves sequences in that
    // order inside its transaction, and a renewal taking them in another order would deadlock with it.
    this.renew = statement(`WITH held AS (
  SELECT p.topic, p.partition_no FROM ${parts} p
  JOIN unnest($4::text[], $5::int[], $6::bigint[]) AS c(topic, partition_no, epoch) ON p.topic = c.topic AND p.partition_no = c.partition_no AND p.epoch = c.epoch
  WHERE p.namespace = $2 AND p.lease_owner = $3
  ORDER BY p.topic, p.partition_no
  FOR UPDATE OF p
)
UPDATE ${parts} p SET lease_expires_at = $1 FROM held h
WHERE p.namespace = $2 AND p.topic = h.topic AND p.partition_no = h.partition_no
RETURNING p.topic, p.partition_no, p.epoch`);
    // One statement: the upsert, the purge of dead members, and the live list
    // (the main SELECT sees the snapshot before the statement, hence the UNION and the time filter).
    this.heartbeat = statement(`WITH up AS (
  INSERT INTO ${schema}.later_partition_members (namespace, member_id, expires_at) VALUES ($1, $2, $3)
  ON CONFLICT (namespace, member_id) DO UPDATE SET expires_at = excluded.expires_at RETURNING member_id
), gone AS (
  DELETE FROM ${schema}.later_partition_members WHERE namespace = $1 AND expires_at <= $4
)
SELECT member_id FROM ${schema}.later_partition_members WHERE namespace = $1 AND expires_at > $4
UNION SELECT member_id FROM up ORDER BY member_id`);
    this.memberRemove = statement(`DELETE FROM ${schema}.later_partition_members WHERE namespace = $1 AND member_id = $2`);
    const forced = transition({ kinds: "forceFail", rows: "failed", from: "old_stage", to: "'failed'", at: "$3::bigint" });
    this.forceFail = statement(`WITH head AS (
  SELECT id, stage FROM ${jobs} WHERE namespace = $1 AND id = $2 FOR UPDATE
), failed AS (
  UPDATE ${jobs} j SET ${forced.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = $3, expires_at = $4, last_error = $5,
    ${forced.history}
  FROM head h WHERE j.id = h.id
  RETURNING j.topic, j.partition_no, h.stage AS old_stage, j.awaited
)${tail([forced])}${awaitedNotify("failed", "$6")}
SELECT count(*)::int AS failed, (SELECT count(*) FROM woken)::int AS woken FROM failed`);
    this.lock = statement(`SELECT 1 FROM ${parts} WHERE namespace = $1 AND topic = $2 AND partition_no = $3 FOR UPDATE`);
    this.bumpEpoch = statement(`UPDATE ${parts} SET lease_owner = NULL, lease_expires_at = NULL, epoch = epoch + 1
WHERE namespace = $1 AND topic = $2 AND partition_no = $3`);
    const truncated = transition({ kinds: "truncate", rows: "gone", from: "stage", to: null });
    this.truncate = statement(`WITH gone AS (
  DELETE FROM ${jobs} WHERE id IN (
    SELECT j.id FROM ${jobs} j WHERE ${inPartition("j", "$1", "$2", "$3")} AND j.stage IN ${TERMINAL}
    ORDER BY ${partitionOrder("j", true)} OFFSET $4)
  RETURNING stage, topic, partition_no
)${tail([truncated])}
SELECT 1 AS one FROM gone`);
  }
}
