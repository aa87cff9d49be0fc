/**
 * The partition statements of the SQLite backend (`backend.partitions`:
 * topics, head claims, fencing, membership), hand-written: a head's claim
 * and finish reuse the job store's statements inside their transaction,
 * and the counters need each statement's `RETURNING` rows. Every write runs
 * in one `BEGIN IMMEDIATE` transaction of {@link SqliteConnection}, so a
 * head claim's read of the partition lease and its write cannot interleave
 * with another process's.
 *
 * A head is found by one probe of `later_jobs_partition_head` per partition
 * (`ORDER BY seq LIMIT 1` over unfinished rows): the jobs queued behind a
 * blocked head are never read. A head's followers (its run, P3) are read
 * by one range of the same index from the head's sequence on
 * (`seq > ? ORDER BY seq LIMIT ?`), and only read: the partition lease keeps
 * other claimers off them until the run's outcomes are written together.
 */
import { TERMINAL_STAGES } from "../../core/job-stage.js";
import { PartitionCountMismatchError } from "../../errors.js";
import type * as B from "../backend.js";
import { cancelCandidates, claimedHead, followerRoom, readyAt, renewalCancelled, runFollowers } from "../shared/partition-heads.js";
import { stageList } from "../shared/stage-list.js";
import type { SqliteConnection } from "./sqlite-connection.js";
import { StageDeltas, type SqliteStageCounters } from "./sqlite-stage-counters.js";
import { SQLITE_TRANSITIONS as T } from "./sqlite-transition.js";

/** What the store needs: the connection, namespace and finish logic of the job store ({@link SqliteJobStore}). */
export interface SqlitePartitionHost {
  readonly namespace: string;
  conn(): SqliteConnection;
  finishRows(params: B.JobFinishManyParams): B.JobFinishManyResult;
  releaseRows(claims: readonly B.ClaimKey[], now: number, reason?: "shutdown"): B.ClaimKey[];
  failWaitingChildren(failed: { id: string; error: string }[], now: number, expires: number): void;
  cancelledClaims(claims: readonly B.ClaimKey[]): B.CancelledClaim[];
  /** The stage counters, which every statement here that changes a stage adds its moves to. */
  readonly counters: SqliteStageCounters;
}

const TERMINAL = stageList(TERMINAL_STAGES);
/** The head of a partition: its unfinished job with the lowest sequence, one probe of the partition-head index (whose predicate this repeats). */
const HEAD = `SELECT id, job_type, stage, run_at, seq, attempt FROM later_jobs
  WHERE namespace = ? AND topic = ? AND partition_no = ? AND stage NOT IN ${TERMINAL} ORDER BY seq LIMIT 1`;
/** The unfinished jobs behind a head, in sequence order: one range of the partition-head index (a run's candidate followers). */
const BEHIND = `SELECT id, job_type, stage, payload, attempt, retry_policy, timeout_ms, run_at, seq, meta FROM later_jobs
  WHERE namespace = ? AND topic = ? AND partition_no = ? AND stage NOT IN ${TERMINAL} AND seq > ? ORDER BY seq LIMIT ? + 0`;
/** A follower that ran, written as claimed at its start (fenced by the attempt before its own and a claimable stage). */
const FOLLOWER_RUN = `UPDATE later_jobs SET ${T.claim.stage}, attempt = attempt + 1, lease_owner = ?, lease_expires_at = NULL, updated_at = ?,
    ${T.claim.history}
  WHERE id = ? AND namespace = ? AND attempt = ? AND stage IN ('enqueued', 'delayed', 'requeued')
  RETURNING topic, partition_no, json_extract(stages, '$[#-2][0]') AS was`;

export class SqlitePartitionStore implements B.PartitionStore {
  constructor(private readonly host: SqlitePartitionHost) {}

  private get ns(): string {
    return this.host.namespace;
  }

  async topicRegister(params: B.TopicRegisterParams): Promise<void> {
    const c = this.host.conn();
    c.immediate(() => {
      for (const t of params.topics) {
        const row = c.get("SELECT partitions FROM later_topics WHERE namespace = ? AND topic = ?", this.ns, t.name);
        if (row && Number(row.partitions) !== t.partitions) throw new PartitionCountMismatchError(t.name, Number(row.partitions), t.partitions);
      }
      for (const t of params.topics) {
        c.run("INSERT OR IGNORE INTO later_topics (namespace, topic, partitions, created_at) VALUES (?, ?, ?, ?)", this.ns, t.name, t.partitions, params.now);
        for (let p = 0; p < t.partitions; p++) {
          c.run("INSERT OR IGNORE INTO later_partitions (namespace, topic, partition_no) VALUES (?, ?, ?)", this.ns, t.name, p);
        }
      }
    });
  }

  async headClaim(params: B.PartitionHeadClaimParams): Promise<B.PartitionHeadClaimResult> {
    if (params.limit <= 0 || params.partitions.length === 0) return { claimed: [], nextRunAt: null };
    const c = this.host.conn();
    const types = new Set(params.jobTypes);
    return c.immediate(() => {
      const free = c.all(
        `SELECT p.topic, p.partition_no, p.run_until_seq, p.careful_until_seq FROM json_each(?) o
           JOIN later_partitions p ON p.namespace = ? AND p.topic = json_extract(o.value, '$[0]') AND p.partition_no = json_extract(o.value, '$[1]')
         WHERE p.lease_owner IS NULL OR p.lease_expires_at < ?`,
        JSON.stringify(params.partitions.map((p) => [p.topic, p.partition])),
        this.ns,
        params.now,
      );
      const claimed: B.ClaimedPartitionJob[] = [];
      let nextRunAt: number | null = null;
      for (const p of free) {
        if (claimed.length >= params.limit) break;
        const ref = { topic: String(p.topic), partition: Number(p.partition_no) };
        const head = c.get(HEAD, this.ns, ref.topic, ref.partition);
        if (!head || !types.has(String(head.job_type))) continue;
        const wait = readyAt(head, params.now);
        if (wait === null) continue;
        if (wait > params.now) {
          nextRunAt = nextRunAt === null ? wait : Math.min(nextRunAt, wait);
          continue;
        }
        claimed.push(this.claim(c, ref, head, p, params.owner, params.leaseExpiresAt, params.now, params.jobTypes, params.runMax));
      }
      return { claimed, nextRunAt };
    });
  }

  async headFinish(params: B.PartitionHeadFinishParams): Promise<B.PartitionHeadFinishResult> {
    const c = this.host.conn();
    const { claim, now } = params;
    return c.immediate(() => {
      const held = c.get(
        "SELECT run_until_seq, careful_until_seq FROM later_partitions WHERE namespace = ? AND topic = ? AND partition_no = ? AND epoch = ? AND lease_owner = ?",
        this.ns,
        claim.topic,
        claim.partition,
        claim.epoch,
        params.owner,
      );
      if (!held)
        return params.followers?.length ? { applied: false, released: 0, next: null, followersApplied: 0 } : { applied: false, released: 0, next: null };
      const result = this.host.finishRows({
        finishes: [{ id: claim.id, attempt: claim.attempt, outcome: params.outcome }],
        now,
        retentionMs: params.retentionMs,
      });
      const applied = result.applied.length > 0;
      let released = result.released;
      let followersApplied = 0;
      // The followers that ran become `running` at their start, in run order, then finish together (one finish per retention).
      const ran = new Map<number, B.JobFinish[]>();
      const deltas = new StageDeltas();
      for (const f of applied ? (params.followers ?? []) : []) {
        const run = c.get(FOLLOWER_RUN, params.owner, f.startedAt, f.startedAt, f.id, this.ns, f.attempt - 1);
        if (!run) break; // no longer as read (cancelled meanwhile): it and the rest are not written
        T.claim.count(deltas, [run], (r) => r.was, "running", claim);
        ran.set(f.retentionMs, [...(ran.get(f.retentionMs) ?? []), { id: f.id, attempt: f.attempt, outcome: f.outcome }]);
        followersApplied++;
      }
      this.host.counters.write(deltas);
      for (const [retentionMs, finishes] of ran) released += this.host.finishRows({ finishes, now, retentionMs }).released;
      let next: B.ClaimedPartitionJob | null = null;
      if (params.claimNext) {
        const head = c.get(HEAD, this.ns, claim.topic, claim.partition);
        const at = head ? readyAt(head, now) : null;
        if (head && at !== null && at <= now && params.claimNext.jobTypes.includes(String(head.job_type))) {
          next = this.claim(c, claim, head, held, params.owner, params.claimNext.leaseExpiresAt, now, params.claimNext.jobTypes, params.claimNext.runMax);
        }
      }
      if (!next) {
        c.run(
          "UPDATE later_partitions SET lease_owner = NULL, lease_expires_at = NULL WHERE namespace = ? AND topic = ? AND partition_no = ? AND epoch = ?",
          this.ns,
          claim.topic,
          claim.partition,
          claim.epoch,
        );
      }
      return params.followers?.length ? { applied, released, next, followersApplied } : { applied, released, next };
    });
  }

  async headRelease(params: B.PartitionHeadReleaseParams): Promise<B.PartitionHeadReleaseResult> {
    if (params.claims.length === 0) return { released: [] };
    const c = this.host.conn();
    return c.immediate(() => {
      const released: B.PartitionClaim[] = [];
      for (const claim of params.claims) {
        // Fenced by the partition lease: only the holder of this epoch frees it and puts its head back.
        const freed = c.run(
          "UPDATE later_partitions SET lease_owner = NULL, lease_expires_at = NULL WHERE namespace = ? AND topic = ? AND partition_no = ? AND epoch = ? AND lease_owner = ?",
          this.ns,
          claim.topic,
          claim.partition,
          claim.epoch,
          params.owner,
        );
        if (freed === 0) continue;
        if (this.host.releaseRows([claim], params.now, params.reason).length > 0) released.push(claim);
      }
      return { released };
    });
  }

  async leaseRenew(params: B.PartitionLeaseRenewParams): Promise<B.PartitionLeaseRenewResult> {
    if (params.claims.length === 0) return { renewed: [] };
    const c = this.host.conn();
    return c.immediate(() => {
      const rows = c.all(
        `UPDATE later_partitions SET lease_expires_at = ? WHERE namespace = ? AND lease_owner = ?
         AND (topic, partition_no, epoch) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?))
       RETURNING topic, partition_no, epoch`,
        params.leaseExpiresAt,
        this.ns,
        params.owner,
        JSON.stringify(params.claims.map((k) => [k.topic, k.partition, k.epoch])),
      );
      const kept = new Set(rows.map((r) => `${String(r.topic)}\0${Number(r.partition_no)}\0${Number(r.epoch)}`));
      const renewed = params.claims.filter((k) => kept.has(`${k.topic}\0${k.partition}\0${k.epoch}`));
      const followers = params.followers ?? [];
      if (renewed.length === params.claims.length && followers.length === 0) return { renewed };
      const lost = params.claims.filter((k) => !renewed.includes(k));
      return { renewed, cancelled: renewalCancelled(lost, followers, this.host.cancelledClaims(cancelCandidates(lost, followers))) };
    });
  }

  async memberHeartbeat(params: B.PartitionMemberHeartbeatParams): Promise<B.PartitionMemberHeartbeatResult> {
    const c = this.host.conn();
    return c.immediate(() => {
      c.run(
        `INSERT INTO later_partition_members (namespace, member_id, expires_at) VALUES (?, ?, ?)
             ON CONFLICT (namespace, member_id) DO UPDATE SET expires_at = excluded.expires_at`,
        this.ns,
        params.member,
        params.expiresAt,
      );
      c.run("DELETE FROM later_partition_members WHERE namespace = ? AND expires_at <= ?", this.ns, params.now);
      return {
        members: c.all("SELECT member_id FROM later_partition_members WHERE namespace = ? ORDER BY member_id", this.ns).map((r) => String(r.member_id)),
      };
    });
  }

  async memberRemove(params: B.PartitionMemberRemoveParams): Promise<void> {
    const c = this.host.conn();
    c.immediate(() => c.run("DELETE FROM later_partition_members WHERE namespace = ? AND member_id = ?", this.ns, params.member));
  }

  async headForceFail(params: B.PartitionHeadForceFailParams): Promise<string | null> {
    const c = this.host.conn();
    const expires = params.now + params.retentionMs;
    return c.immediate(() => {
      const head = c.get(HEAD, this.ns, params.topic, params.partition);
      if (!head) return null;
      const id = String(head.id);
      c.run(
        `UPDATE later_jobs SET ${T.forceFail.stage}, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?, expires_at = ?, last_error = ?,
               ${T.forceFail.history} WHERE id = ? AND namespace = ?`,
        params.now,
        expires,
        params.reason,
        params.now,
        id,
        this.ns,
      );
      const deltas = new StageDeltas();
      T.forceFail.count(deltas, [head], (r) => r.stage, "failed", params);
      this.host.counters.write(deltas);
      this.host.failWaitingChildren([{ id, error: params.reason }], params.now, expires);
      c.run(
        `UPDATE later_partitions SET lease_owner = NULL, lease_expires_at = NULL, epoch = epoch + 1
             WHERE namespace = ? AND topic = ? AND partition_no = ?`,
        this.ns,
        params.topic,
        params.partition,
      );
      return id;
    });
  }

  async historyTruncate(params: B.PartitionHistoryTruncateParams): Promise<number> {
    const c = this.host.conn();
    return c.immediate(() => {
      const rows = c.all(
        `DELETE FROM later_jobs WHERE id IN (SELECT id FROM later_jobs WHERE namespace = ? AND topic = ? AND partition_no = ?
           AND stage IN ${TERMINAL} ORDER BY seq DESC LIMIT -1 OFFSET ? + 0) RETURNING stage`,
        this.ns,
        params.topic,
        params.partition,
        params.keep,
      );
      const deltas = new StageDeltas();
      T.truncate.count(deltas, rows, (r) => r.stage, null, params);
      this.host.counters.write(deltas);
      return rows.length;
    });
  }

  /**
   * Takes the partition lease (next epoch) and marks its head running; a head
   * already `running` (its claimer is gone) is taken over as it is, its lost
   * attempt left for the caller to record.
   */
  private claim(
    c: SqliteConnection,
    ref: B.PartitionRef,
    head: Record<string, unknown>,
    part: Record<string, unknown>,
    owner: string,
    leaseExpiresAt: number,
    now: number,
    jobTypes: readonly string[],
    runMax: number | undefined,
  ): B.ClaimedPartitionJob {
    const id = String(head.id);
    const seq = Number(head.seq);
    let careful = part.careful_until_seq === null || part.careful_until_seq === undefined ? null : Number(part.careful_until_seq);
    const runUntil = part.run_until_seq === null || part.run_until_seq === undefined ? null : Number(part.run_until_seq);
    let lost = head.stage === "running";
    if (lost && runUntil !== null && runUntil > seq) {
      // The dead owner was inside a run: which of its jobs was running is unknown, so the head goes back
      // unstarted (no attempt counted) and heads up to the run's end are claimed alone from now on.
      this.host.releaseRows([{ id, attempt: Number(head.attempt) }], now);
      careful = Math.max(careful ?? runUntil, runUntil);
      lost = false;
    }
    const room = lost ? 0 : followerRoom(runMax, seq, careful);
    const behind = room > 0 ? c.all(BEHIND, this.ns, ref.topic, ref.partition, seq, room) : [];
    const p = c.get(
      `UPDATE later_partitions SET lease_owner = ?, lease_expires_at = ?, epoch = epoch + 1, run_until_seq = ?, careful_until_seq = ?
       WHERE namespace = ? AND topic = ? AND partition_no = ? RETURNING epoch`,
      owner,
      leaseExpiresAt,
      seq,
      careful !== null && seq <= careful ? careful : null,
      this.ns,
      ref.topic,
      ref.partition,
    )!;
    const epoch = Number(p.epoch);
    const followers = runFollowers(behind, ref, epoch, now, jobTypes, room);
    if (followers.length > 0) {
      c.run(
        "UPDATE later_partitions SET run_until_seq = ? WHERE namespace = ? AND topic = ? AND partition_no = ?",
        followers.at(-1)!.seq,
        this.ns,
        ref.topic,
        ref.partition,
      );
    }
    if (lost) {
      const taken = c.get(
        `UPDATE later_jobs SET lease_owner = ?, updated_at = ? WHERE id = ? AND namespace = ?
         RETURNING id, job_type, payload, attempt, retry_policy, timeout_ms, run_at, parent_id, created_at, seq, meta`,
        owner,
        now,
        id,
        this.ns,
      )!;
      return claimedHead(taken, ref, epoch, true);
    }
    const j = c.get(
      `UPDATE later_jobs SET ${T.claim.stage}, attempt = attempt + 1, lease_owner = ?, lease_expires_at = NULL, updated_at = ?,
         ${T.claim.history}
       WHERE id = ? AND namespace = ? RETURNING id, job_type, payload, attempt, retry_policy, timeout_ms, run_at, parent_id, created_at, seq, json_extract(stages, '$[#-2][0]') AS was, meta`,
      owner,
      now,
      now,
      id,
      this.ns,
    )!;
    const deltas = new StageDeltas();
    T.claim.count(deltas, [j], (r) => r.was, "running", ref);
    this.host.counters.write(deltas);
    const claimed = claimedHead(j, ref, epoch);
    if (followers.length > 0) claimed.followers = followers;
    return claimed;
  }
}
