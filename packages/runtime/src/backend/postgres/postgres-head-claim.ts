/**
 * A PostgreSQL head claim's writes (`backend.partitions`, see
 * postgres-partition-store.ts): the heads read are put back, leased and
 * claimed, each only if it is still in the stage and at the attempt it was
 * read at. A head can move after its read: it was read in the snapshot of
 * the statement that locked its partition, before the lock was granted
 * (`freeHeads`), or it was cancelled between its read and its claim (a
 * cancel of a job not running takes no partition lock). The claim then throws
 * {@link HeadsMoved} inside its transaction, which rolls it back, and
 * {@link PostgresHeadClaim.fresh} runs the transaction again, whose new
 * statements see what moved.
 */
import { DatabaseBusyError } from "../../errors.js";
import type * as B from "../backend.js";
import type { Row } from "../shared/job-rows.js";
import { claimedHead, followerRoom, runFollowers } from "../shared/partition-heads.js";
import { CONFLICT_TRIES } from "./postgres-errors.js";
import type { PostgresPartitionQueries } from "./postgres-partition-queries.js";
import type { Execute } from "./postgres-statement.js";

/** A head read for a claim was no longer in the stage or at the attempt it was read at (see the file comment). */
class HeadsMoved extends Error {
  constructor() {
    super("a partition head moved between its read and its claim");
  }
}

/** What the claim needs of the backend (a part of the partition store's host). */
export interface HeadClaimHost {
  readonly namespace: string;
  /** The channel and payload of this backend's `pg_notify`. */
  readonly notifyArgs: readonly [string, string];
  /** BEGIN … COMMIT on one connection, retried on deadlock or serialization conflict. */
  inTransaction<R>(what: string, body: (execute: Execute) => Promise<R>): Promise<R>;
}

/** What {@link PostgresHeadClaim.claim} takes. */
export interface HeadClaimParams {
  /** The heads read, each with its partition row's `topic`, `partition_no`, `run_until_seq` and `careful_until_seq`. */
  heads: Row[];
  owner: string;
  leaseExpiresAt: number;
  now: number;
  jobTypes: readonly string[];
  runMax: number | undefined;
  /** The rows behind the heads, already read (one head's, by `headFinish`); absent: read here. */
  read?: Row[] | undefined;
}

export class PostgresHeadClaim {
  constructor(
    private readonly host: HeadClaimHost,
    private readonly q: PostgresPartitionQueries,
  ) {}

  /**
   * A transaction that claims heads (`body`), rolled back and run again when a head moved between its read and its
   * claim, up to {@link CONFLICT_TRIES} tries; then `gaveUp`, or, when null, a `DATABASE_BUSY`.
   */
  async fresh<R>(what: string, gaveUp: R | null, body: (execute: Execute) => Promise<R>): Promise<R> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.host.inTransaction(what, body);
      } catch (error) {
        if (!(error instanceof HeadsMoved)) throw error;
        if (tries < CONFLICT_TRIES) continue;
        if (gaveUp !== null) return gaveUp;
        throw new DatabaseBusyError(`${what}: the partition heads kept changing under the claim (${tries} tries); nothing was written`);
      }
    }
  }

  /**
   * Takes the leases (next epoch) of the heads' partitions and marks the heads
   * running; heads already `running` (their claimer is gone) are taken over as
   * they are, their lost attempts left for the caller to record.
   */
  async claim(execute: Execute, params: HeadClaimParams): Promise<B.ClaimedPartitionJob[]> {
    const { heads, owner, leaseExpiresAt, now, jobTypes, runMax, read } = params;
    const key = (r: Row) => `${String(r.topic)}\0${Number(r.partition_no)}`;
    const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
    // A dead owner's head still `running` inside its run (P3): put back unstarted, the partition careful up to the run's end.
    const careful = new Map(heads.map((h) => [key(h), num(h.careful_until_seq)]));
    const inRun = heads.filter((h) => h.stage === "running" && num(h.run_until_seq) !== null && num(h.run_until_seq)! > Number(h.seq));
    if (inRun.length > 0) {
      const back = await execute(this.q.headsPutBack, [
        this.host.namespace,
        inRun.map((h) => String(h.id)),
        inRun.map((h) => Number(h.attempt)),
        now,
        ...this.host.notifyArgs,
      ]);
      if (back.length < inRun.length) throw new HeadsMoved();
      for (const h of inRun) careful.set(key(h), Math.max(careful.get(key(h)) ?? 0, num(h.run_until_seq)!));
    }
    const isLost = (h: Row) => h.stage === "running" && !inRun.includes(h);
    // No more followers looked for than the partition has jobs past the head (its `next_seq`, read under the partition's
    // lock, which every enqueue to it waits for): a range that finds fewer than it looks for reads on to the namespace's end.
    const jobsPast = (h: Row) => (h.next_seq === undefined || h.next_seq === null ? Number.POSITIVE_INFINITY : Number(h.next_seq) - 1 - Number(h.seq));
    const room = new Map(heads.map((h) => [key(h), isLost(h) ? 0 : Math.min(followerRoom(runMax, Number(h.seq), careful.get(key(h))), jobsPast(h))]));
    const reading = heads.filter((h) => room.get(key(h))! > 0);
    const behind =
      reading.length === 0 || read !== undefined
        ? (read ?? [])
        : await execute(this.q.behind, [
            this.host.namespace,
            reading.map((h) => h.topic),
            reading.map((h) => Number(h.partition_no)),
            reading.map((h) => Number(h.seq)),
            reading.map((h) => room.get(key(h))!),
          ]);
    const rowsBehind = new Map<string, Row[]>();
    for (const r of behind) rowsBehind.set(key(r), [...(rowsBehind.get(key(r)) ?? []), r]);
    // The ready prefix of each, decided before the lease is written (the run's last sequence goes with it); epochs follow.
    const ready = new Map(
      heads.map((h) => [key(h), runFollowers(rowsBehind.get(key(h)) ?? [], { topic: "", partition: 0 }, 0, now, jobTypes, room.get(key(h))!)]),
    );
    const until = (h: Row) => ready.get(key(h))!.at(-1)?.seq ?? Number(h.seq);
    const carefulNext = (h: Row) => {
      const c = careful.get(key(h));
      return c !== null && c !== undefined && Number(h.seq) <= c ? c : null;
    };
    const leases = await execute(this.q.leaseTake, [
      this.host.namespace,
      owner,
      leaseExpiresAt,
      heads.map((h) => h.topic),
      heads.map((h) => Number(h.partition_no)),
      heads.map(until),
      heads.map(carefulNext),
    ]);
    const epochs = new Map(leases.map((l) => [key(l), Number(l.epoch)]));
    const lost = heads.filter(isLost);
    const fresh = heads.filter((h) => !isLost(h));
    // The attempt each head is at now: as read, or one less when it was just put back.
    const attempts = (hs: Row[]) => hs.map((h) => Number(h.attempt) - (inRun.includes(h) ? 1 : 0));
    const ids = (hs: Row[]) => hs.map((h) => String(h.id));
    const rows = fresh.length === 0 ? [] : await execute(this.q.headsRun, [this.host.namespace, owner, now, ids(fresh), attempts(fresh)]);
    const taken = lost.length === 0 ? [] : await execute(this.q.headsTakeOver, [this.host.namespace, owner, now, ids(lost), attempts(lost)]);
    if (rows.length < fresh.length || taken.length < lost.length) throw new HeadsMoved();
    const head = (r: Row, lostAttempt: boolean) => {
      const ref = { topic: String(r.topic), partition: Number(r.partition_no) };
      const epoch = epochs.get(key(r))!;
      const claimed = claimedHead(r, ref, epoch, lostAttempt);
      const followers = ready.get(key(r)) ?? [];
      if (followers.length > 0) {
        // Made for this claim by runFollowers: given their partition and epoch in place (see claimedHead).
        for (const f of followers) {
          f.topic = ref.topic;
          f.partition = ref.partition;
          f.epoch = epoch;
        }
        claimed.followers = followers;
      }
      return claimed;
    };
    return [...rows.map((r) => head(r, false)), ...taken.map((r) => head(r, true))];
  }
}
