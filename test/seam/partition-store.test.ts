/**
 * The seam suite of `backend.partitions` (packages/runtime/src/backend/partition-store.ts):
 * every method called directly on each backend, asserting what its TSDoc
 * promises (head claims, their fencing epochs, put-backs, membership, the
 * operator tools), with the stage counters and partition depths checked
 * against a GROUP BY after every change of stages (D7). See
 * seam-factory.ts; the coverage guard (seam-coverage.test.ts) fails when a
 * method of the store has no test here.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { PartitionCountMismatchError, UnknownTopicError } from "@later/runtime";
import type { Backend, PartitionClaim, PartitionRef } from "@later/runtime/internal";
import { BACKENDS, expectCountersMatch, history, jobInsert, NOW, type Seam, useSeam } from "./seam-factory.js";

const LEASE = NOW + 30_000;
const DAY = 86_400_000;
const P0: PartitionRef = { topic: "orders", partition: 0 };
const P1: PartitionRef = { topic: "orders", partition: 1 };
const P2: PartitionRef = { topic: "orders", partition: 2 };

/** Registers `orders` (3 partitions) and inserts jobs into the given partitions, one batch per call; returns their ids. */
async function fill(s: Seam, partitions: number[], extra: Parameters<typeof jobInsert>[0] = {}): Promise<string[]> {
  await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 3 }], now: NOW });
  const jobs = partitions.map((partition) => jobInsert({ topic: "orders", partition, ...extra }));
  await s.backend.jobs.insertMany({ jobs, now: NOW });
  return jobs.map((j) => j.id);
}

function headClaim(
  backend: Backend,
  partitions: PartitionRef[],
  opts: { owner?: string; limit?: number; now?: number; lease?: number; types?: string[] } = {},
) {
  return backend.partitions.headClaim({
    owner: opts.owner ?? "m1",
    partitions,
    limit: opts.limit ?? 10,
    now: opts.now ?? NOW,
    leaseExpiresAt: opts.lease ?? LEASE,
    jobTypes: opts.types ?? ["work"],
  });
}

/** The claim key of a claimed head. */
const claimOf = (h: PartitionClaim): PartitionClaim => ({ id: h.id, attempt: h.attempt, topic: h.topic, partition: h.partition, epoch: h.epoch });

describe.each(BACKENDS)("backend.partitions on $name", (entry) => {
  const seam = useSeam(entry);

  describe("topicRegister", () => {
    it("P1: records topics with a row per partition, idempotently; another partition count throws PartitionCountMismatchError and writes nothing", async () => {
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 3 }], now: NOW });
      await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 3 }], now: NOW + 1 });
      expect((await s.backend.inspect.partitionList({ topic: "orders" })).partitions.map((p) => p.partition)).toEqual([0, 1, 2]);
      await expect(
        s.backend.partitions.topicRegister({
          topics: [
            { name: "fresh", partitions: 2 },
            { name: "orders", partitions: 4 },
          ],
          now: NOW,
        }),
      ).rejects.toBeInstanceOf(PartitionCountMismatchError);
      expect((await s.backend.inspect.partitionList({})).partitions.map((p) => `${p.topic}/${p.partition}`)).toEqual(["orders/0", "orders/1", "orders/2"]);
      await expect(s.backend.jobs.insertMany({ jobs: [jobInsert({ topic: "fresh", partition: 0 })], now: NOW })).rejects.toBeInstanceOf(UnknownTopicError);
      // Scoped to the namespace: another namespace registers the same name with its own count.
      const other = await s.other(`${s.backend.namespace}-other`);
      await other.partitions.topicRegister({ topics: [{ name: "orders", partitions: 1 }], now: NOW });
      expect((await other.inspect.partitionList({})).partitions).toHaveLength(1);
    });
  });

  describe("headClaim", () => {
    it("P3/P6: claims the lowest-sequence head of each unleased partition, one per partition, at most limit, taking the lease at a new epoch", async () => {
      const s = seam();
      const ids = await fill(s, [0, 0, 1, 1, 2]);
      const first = await headClaim(s.backend, [P0, P1], { limit: 10 });
      expect(first.claimed.map((h) => h.id).sort()).toEqual([ids[0], ids[2]].sort());
      const h0 = first.claimed.find((h) => h.partition === 0)!;
      expect(h0).toMatchObject({ topic: "orders", partition: 0, attempt: 1, jobType: "work", payload: "{}", runAt: NOW });
      expect(h0.lostAttempt).toBeUndefined();
      expect(await s.job(ids[0]!)).toMatchObject({ stage: "running", attempt: 1, leaseOwner: "m1" });
      expect(history(await s.job(ids[0]!))).toEqual(["enqueued", "running"]);
      const listed = (await s.backend.inspect.partitionList({ topic: "orders" })).partitions[0]!;
      expect(listed).toMatchObject({ headJobId: ids[0], leaseOwner: "m1", leaseExpiresAt: LEASE });
      await expectCountersMatch(s);
      // Leased partitions are skipped: nothing more in 0 and 1; 2 was not asked for until now; limit 1 of 3.
      expect((await headClaim(s.backend, [P0, P1], { owner: "m2" })).claimed).toEqual([]);
      const limited = await headClaim(s.backend, [P0, P1, P2], { owner: "m2", limit: 1 });
      expect(limited.claimed.map((h) => h.id)).toEqual([ids[4]]);
      expect(await headClaim(s.backend, [P2], { limit: 0 })).toEqual({ claimed: [], nextRunAt: null });
      expect(await headClaim(s.backend, [], {})).toEqual({ claimed: [], nextRunAt: null });
      await expectCountersMatch(s);
    });

    it("P3: a delayed head blocks its partition until due (nextRunAt), a waiting head blocks it (no nextRunAt); other job types are left alone", async () => {
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 3 }], now: NOW });
      const parent = jobInsert({ jobType: "parent" });
      await s.backend.jobs.insertMany({ jobs: [parent], now: NOW });
      const delayed = jobInsert({ topic: "orders", partition: 0, runAt: NOW + 700 });
      const waiting = jobInsert({ topic: "orders", partition: 1, parentId: parent.id });
      const other = jobInsert({ topic: "orders", partition: 2, jobType: "other" });
      await s.backend.jobs.insertMany({ jobs: [delayed, waiting, other], now: NOW });
      await s.backend.jobs.insertMany({ jobs: [0, 1, 2].map((partition) => jobInsert({ topic: "orders", partition })), now: NOW });
      expect(await headClaim(s.backend, [P0, P1, P2])).toEqual({ claimed: [], nextRunAt: NOW + 700 });
      const due = await headClaim(s.backend, [P0, P1, P2], { now: NOW + 700, types: ["work", "other"] });
      expect(due.claimed.map((h) => h.id).sort()).toEqual([delayed.id, other.id].sort());
      expect(due.nextRunAt).toBeNull();
      await expectCountersMatch(s);
    });

    it("P6: a running head under an expired lease is taken over at a new epoch as a lost attempt (same attempt, still running)", async () => {
      const s = seam();
      const [id] = await fill(s, [0, 0]);
      const [lost] = (await headClaim(s.backend, [P0], { lease: NOW + 100 })).claimed;
      expect((await headClaim(s.backend, [P0], { owner: "m2", now: NOW + 100 })).claimed).toEqual([]); // expires_at < now, strictly
      const [taken] = (await headClaim(s.backend, [P0], { owner: "m2", now: NOW + 101 })).claimed;
      expect(taken).toMatchObject({ id, attempt: 1, lostAttempt: true, epoch: lost!.epoch + 1 });
      expect(await s.job(id!)).toMatchObject({ stage: "running", attempt: 1, leaseOwner: "m2" });
      // The old claim's writes are rejected; the new holder records the lost attempt's outcome.
      const stale = await s.backend.partitions.headFinish({
        owner: "m1",
        claim: claimOf(lost!),
        outcome: { kind: "success" },
        now: NOW + 102,
        retentionMs: DAY,
      });
      expect(stale).toEqual({ applied: false, released: 0, next: null });
      const recorded = await s.backend.partitions.headFinish({
        owner: "m2",
        claim: claimOf(taken!),
        outcome: { kind: "retry", runAt: NOW + 200, error: "lost" },
        now: NOW + 102,
        retentionMs: DAY,
      });
      expect(recorded.applied).toBe(true);
      expect(await s.job(id!)).toMatchObject({ stage: "requeued", attempt: 1, runAt: NOW + 200 });
      await expectCountersMatch(s);
    });

    it("J6: another namespace's partitions and jobs are not claimed", async () => {
      const s = seam();
      await fill(s, [0]);
      const other = await s.other(`${s.backend.namespace}-other`);
      await other.partitions.topicRegister({ topics: [{ name: "orders", partitions: 3 }], now: NOW });
      expect(await headClaim(other, [P0])).toEqual({ claimed: [], nextRunAt: null });
      expect((await headClaim(s.backend, [P0])).claimed).toHaveLength(1);
      await expectCountersMatch(s);
    });
  });

  describe("headFinish", () => {
    it("X10: a head's meta comes back with its claim, and with the next head claimed by a success", async () => {
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 3 }], now: NOW });
      const jobs = [jobInsert({ topic: "orders", partition: 0, meta: '{"a":1}' }), jobInsert({ topic: "orders", partition: 0, meta: '{"b":2}' })];
      await s.backend.jobs.insertMany({ jobs, now: NOW });
      const [h] = (await headClaim(s.backend, [P0])).claimed;
      expect(h!.meta).toBe('{"a":1}');
      const r = await s.backend.partitions.headFinish({
        owner: "m1",
        claim: claimOf(h!),
        outcome: { kind: "success" },
        now: NOW + 1,
        retentionMs: 1_000,
        claimNext: { leaseExpiresAt: NOW + 60_000, jobTypes: ["work"] },
      });
      expect(r.next?.meta).toBe('{"b":2}');
      const [plain] = await fill(s, [1]);
      const [p1] = (await headClaim(s.backend, [P1])).claimed;
      expect([p1!.id, p1!.meta ?? null]).toEqual([plain, null]);
    });

    it("P3: a success with claimNext claims the partition's next head at once, keeping the lease at a new epoch; without a next head the lease is freed", async () => {
      const s = seam();
      const ids = await fill(s, [0, 0]);
      const [h] = (await headClaim(s.backend, [P0])).claimed;
      const claimNext = { leaseExpiresAt: NOW + 60_000, jobTypes: ["work"] };
      const r = await s.backend.partitions.headFinish({
        owner: "m1",
        claim: claimOf(h!),
        outcome: { kind: "success" },
        now: NOW + 1,
        retentionMs: 1_000,
        claimNext,
      });
      expect(r.applied).toBe(true);
      expect(r.released).toBe(0);
      expect(r.next).toMatchObject({ id: ids[1], seq: h!.seq + 1, attempt: 1, epoch: h!.epoch + 1, topic: "orders", partition: 0 });
      expect(await s.job(ids[0]!)).toMatchObject({ stage: "success", expiresAt: NOW + 1_001, leaseOwner: null });
      expect((await s.backend.inspect.partitionList({ topic: "orders" })).partitions[0]).toMatchObject({ leaseOwner: "m1", leaseExpiresAt: NOW + 60_000 });
      await expectCountersMatch(s);
      const last = await s.backend.partitions.headFinish({
        owner: "m1",
        claim: claimOf(r.next!),
        outcome: { kind: "success" },
        now: NOW + 2,
        retentionMs: 1_000,
        claimNext,
      });
      expect(last).toEqual({ applied: true, released: 0, next: null });
      expect((await s.backend.inspect.partitionList({ topic: "orders" })).partitions[0]).toMatchObject({ headJobId: null, leaseOwner: null });
      await expectCountersMatch(s);
    });

    it("P3: a retry keeps the head's place (the partition stays blocked until due); a final failure releases the next job and fails the head's continuations", async () => {
      const s = seam();
      const ids = await fill(s, [1, 1]);
      const [h] = (await headClaim(s.backend, [P1])).claimed;
      const elsewhere = jobInsert({ parentId: ids[0] });
      await s.backend.jobs.insertMany({ jobs: [elsewhere], now: NOW });
      const retry = await s.backend.partitions.headFinish({
        owner: "m1",
        claim: claimOf(h!),
        outcome: { kind: "retry", runAt: NOW + 500, error: "again" },
        now: NOW + 1,
        retentionMs: DAY,
        claimNext: { leaseExpiresAt: LEASE, jobTypes: ["work"] },
      });
      expect(retry).toEqual({ applied: true, released: 0, next: null });
      expect(await s.job(ids[0]!)).toMatchObject({ stage: "requeued", runAt: NOW + 500, lastError: "again" });
      expect(await headClaim(s.backend, [P1], { now: NOW + 2 })).toEqual({ claimed: [], nextRunAt: NOW + 500 });
      await expectCountersMatch(s);
      const [again] = (await headClaim(s.backend, [P1], { now: NOW + 500 })).claimed;
      expect(again).toMatchObject({ id: ids[0], attempt: 2 });
      const fail = await s.backend.partitions.headFinish({
        owner: "m1",
        claim: claimOf(again!),
        outcome: { kind: "fail", error: "broken" },
        now: NOW + 501,
        retentionMs: DAY,
        claimNext: { leaseExpiresAt: LEASE, jobTypes: ["work"] },
      });
      expect(fail.applied).toBe(true);
      expect(fail.next).toMatchObject({ id: ids[1], attempt: 1, epoch: again!.epoch + 1 });
      expect(await s.job(elsewhere.id)).toMatchObject({ stage: "failed", lastError: `parent job ${ids[0]} failed: broken` });
      await expectCountersMatch(s);
    });

    it("J5: a head's success releases its waiting continuations outside the partition (released)", async () => {
      const s = seam();
      const ids = await fill(s, [2]);
      const kids = [jobInsert({ parentId: ids[0] }), jobInsert({ parentId: ids[0] })];
      await s.backend.jobs.insertMany({ jobs: kids, now: NOW });
      const [h] = (await headClaim(s.backend, [P2])).claimed;
      const r = await s.backend.partitions.headFinish({ owner: "m1", claim: claimOf(h!), outcome: { kind: "success" }, now: NOW, retentionMs: DAY });
      expect(r).toEqual({ applied: true, released: 2, next: null });
      expect((await s.job(kids[0]!.id)).stage).toBe("enqueued");
      await expectCountersMatch(s);
    });

    it("P6: a finish under a stale epoch (another claim took the partition) or another owner writes nothing", async () => {
      const s = seam();
      const ids = await fill(s, [0, 0]);
      const [h] = (await headClaim(s.backend, [P0])).claimed;
      for (const [owner, claim] of [
        ["m1", { ...claimOf(h!), epoch: h!.epoch - 1 }],
        ["m1", { ...claimOf(h!), epoch: h!.epoch + 1 }],
        ["m9", claimOf(h!)],
      ] as const) {
        for (const outcome of [{ kind: "success" }, { kind: "fail", error: "x" }] as const) {
          const r = await s.backend.partitions.headFinish({
            owner,
            claim,
            outcome,
            now: NOW,
            retentionMs: DAY,
            claimNext: { leaseExpiresAt: LEASE, jobTypes: ["work"] },
          });
          expect(r).toEqual({ applied: false, released: 0, next: null });
        }
      }
      expect(await s.job(ids[0]!)).toMatchObject({ stage: "running", attempt: 1 });
      expect((await s.job(ids[1]!)).stage).toBe("enqueued");
      expect((await s.backend.inspect.partitionList({ topic: "orders" })).partitions[0]).toMatchObject({ leaseOwner: "m1" });
      await expectCountersMatch(s);
    });
  });

  describe("headFinish: the head's own continuation", () => {
    const finishHead = (s: Seam, h: PartitionClaim, types = ["work"]) =>
      s.backend.partitions.headFinish({
        owner: "m1",
        claim: claimOf(h),
        outcome: { kind: "success" },
        now: NOW + 1,
        retentionMs: DAY,
        claimNext: { leaseExpiresAt: LEASE, jobTypes: types },
      });

    it("J5/P3: a continuation queued behind another job is released, then claimed once it is the head", async () => {
      const s = seam();
      const [head, after] = await fill(s, [0, 0]);
      const kid = jobInsert({ topic: "orders", partition: 0, parentId: head });
      const elsewhere = jobInsert({ parentId: head });
      await s.backend.jobs.insertMany({ jobs: [kid, elsewhere], now: NOW });
      const [h] = (await headClaim(s.backend, [P0])).claimed;
      // `after` was queued before the continuation: it is the next head; the continuation is only released.
      const r = await finishHead(s, h!);
      expect(r).toMatchObject({ applied: true, released: 2, next: { id: after, epoch: h!.epoch + 1 } });
      expect((await s.job(kid.id)).stage).toBe("enqueued");
      const r2 = await finishHead(s, r.next!);
      // Now the continuation is next: claimed in the same write, as a release then a claim write it.
      expect(r2).toMatchObject({ applied: true, released: 0, next: { id: kid.id, attempt: 1, epoch: h!.epoch + 2, runAt: NOW + 1 } });
      expect((await s.job(elsewhere.id)).stage).toBe("enqueued");
      await expectCountersMatch(s);
    });

    it("J5/P3: a head's success with claimNext claims its own continuation queued next in the partition on every dialect", async () => {
      const s2 = seam();
      const [head2] = await fill(s2, [0]);
      const kid2 = jobInsert({ topic: "orders", partition: 0, parentId: head2 });
      await s2.backend.jobs.insertMany({ jobs: [kid2], now: NOW });
      const [h2] = (await headClaim(s2.backend, [P0])).claimed;
      const r3 = await finishHead(s2, h2!);
      expect(r3).toMatchObject({ applied: true, released: 1, next: { id: kid2.id, attempt: 1, epoch: h2!.epoch + 1, runAt: NOW + 1 } });
      const stored = await s2.job(kid2.id);
      expect(stored).toMatchObject({ stage: "running", attempt: 1, runAt: NOW + 1 });
      expect(stored.stages).toEqual([
        { stage: "waiting", at: NOW },
        { stage: "enqueued", at: NOW + 1 },
        { stage: "running", at: NOW + 1 },
      ]);
      expect((await s2.backend.inspect.partitionList({ topic: "orders" })).partitions[0]).toMatchObject({ leaseOwner: "m1" });
      await expectCountersMatch(s2);
    });

    it("J5/P3: its continuation not due yet, or of a type not asked for, is released and the lease freed", async () => {
      const s = seam();
      const [a, b] = await fill(s, [0, 1]);
      const delayed = jobInsert({ topic: "orders", partition: 0, parentId: a, runAt: NOW + 1_000 });
      const other = jobInsert({ topic: "orders", partition: 1, parentId: b, jobType: "other" });
      await s.backend.jobs.insertMany({ jobs: [delayed, other], now: NOW });
      const claimed = (await headClaim(s.backend, [P0, P1])).claimed;
      for (const h of claimed) expect(await finishHead(s, h)).toEqual({ applied: true, released: 1, next: null });
      expect((await s.job(delayed.id)).stage).toBe("delayed");
      expect((await s.job(other.id)).stage).toBe("enqueued");
      expect((await s.backend.inspect.partitionList({ topic: "orders" })).partitions.map((p) => p.leaseOwner)).toEqual([null, null, null]);
      await expectCountersMatch(s);
    });
  });

  describe("headRelease", () => {
    it("J9: puts held heads back (attempt undone, noted shutdown) and frees their partitions; a claim whose epoch moved on is untouched", async () => {
      const s = seam();
      const ids = await fill(s, [0, 1]);
      const claimed = (await headClaim(s.backend, [P0, P1], { lease: NOW + 100 })).claimed;
      const h0 = claimed.find((h) => h.partition === 0)!;
      const h1 = claimed.find((h) => h.partition === 1)!;
      // Partition 1's lease expired and another member took it over.
      const [taken] = (await headClaim(s.backend, [P1], { owner: "m2", now: NOW + 200 })).claimed;
      const r = await s.backend.partitions.headRelease({ owner: "m1", claims: [claimOf(h0), claimOf(h1)], now: NOW + 300, reason: "shutdown" });
      expect(r.released).toEqual([claimOf(h0)]);
      expect(await s.job(ids[0]!)).toMatchObject({ stage: "enqueued", attempt: 0, leaseOwner: null });
      expect(history(await s.job(ids[0]!))).toEqual(["enqueued", "running", "enqueued:shutdown"]);
      expect(await s.job(ids[1]!)).toMatchObject({ stage: "running", attempt: 1, leaseOwner: "m2" });
      await expectCountersMatch(s);
      // The partition is free: the next owner claims the same head at once.
      const [next] = (await headClaim(s.backend, [P0], { owner: "m3", now: NOW + 300 })).claimed;
      expect(next).toMatchObject({ id: ids[0], attempt: 1, epoch: h0.epoch + 1 });
      // Without a reason the entry is plain; the taken-over head goes back too.
      expect((await s.backend.partitions.headRelease({ owner: "m2", claims: [claimOf(taken!)], now: NOW + 301 })).released).toEqual([claimOf(taken!)]);
      expect(history(await s.job(ids[1]!))).toEqual(["enqueued", "running", "enqueued"]);
      expect(await s.backend.partitions.headRelease({ owner: "m2", claims: [], now: NOW })).toEqual({ released: [] });
      await expectCountersMatch(s);
    });
  });

  describe("leaseRenew", () => {
    it("P6: extends the leases of held claims whose epoch is current; a stale epoch or another owner's claim is not renewed", async () => {
      const s = seam();
      await fill(s, [0, 1, 2]);
      const claimed = (await headClaim(s.backend, [P0, P1, P2], { lease: NOW + 100 })).claimed.map(claimOf);
      const byPartition = (p: number) => claimed.find((c) => c.partition === p)!;
      await headClaim(s.backend, [P2], { owner: "m2", now: NOW + 200 }); // partition 2 moved on
      const r = await s.backend.partitions.leaseRenew({
        owner: "m1",
        claims: [byPartition(0), { ...byPartition(1), epoch: byPartition(1).epoch - 1 }, byPartition(2), byPartition(1)],
        leaseExpiresAt: NOW + 5_000,
      });
      expect(r.renewed).toEqual([byPartition(0), byPartition(1)]);
      const listed = (await s.backend.inspect.partitionList({ topic: "orders" })).partitions;
      expect(listed.map((p) => [p.leaseOwner, p.leaseExpiresAt])).toEqual([
        ["m1", NOW + 5_000],
        ["m1", NOW + 5_000],
        ["m2", LEASE],
      ]);
      expect((await s.backend.partitions.leaseRenew({ owner: "m2", claims: [byPartition(0)], leaseExpiresAt: NOW + 9_000 })).renewed).toEqual([]);
      expect(await s.backend.partitions.leaseRenew({ owner: "m1", claims: [], leaseExpiresAt: NOW })).toEqual({ renewed: [] });
      await expectCountersMatch(s);
    });
  });

  describe("memberHeartbeat and memberRemove", () => {
    it("P5: a heartbeat registers or refreshes a member and returns the live ones, sorted, deleting dead rows; memberRemove deregisters at once", async () => {
      const s = seam();
      const beat = (member: string, now: number, expiresAt: number) => s.backend.partitions.memberHeartbeat({ member, now, expiresAt });
      expect(await beat("m2", NOW, NOW + 100)).toEqual({ members: ["m2"] });
      expect(await beat("m1", NOW, NOW + 1_000)).toEqual({ members: ["m1", "m2"] });
      expect(await beat("m3", NOW + 100, NOW + 1_000)).toEqual({ members: ["m1", "m3"] }); // m2 expired at now: dead
      expect(await beat("m2", NOW + 100, NOW + 2_000)).toEqual({ members: ["m1", "m2", "m3"] }); // back again
      expect(await beat("m1", NOW + 1_500, NOW + 3_000)).toEqual({ members: ["m1", "m2"] }); // refreshed; m3 dead
      const other = await s.other(`${s.backend.namespace}-other`);
      expect(await other.partitions.memberHeartbeat({ member: "x", now: NOW, expiresAt: NOW + 1_000 })).toEqual({ members: ["x"] });
      await s.backend.partitions.memberRemove({ member: "m2" });
      await s.backend.partitions.memberRemove({ member: "unknown" });
      expect(await beat("m1", NOW + 1_500, NOW + 3_000)).toEqual({ members: ["m1"] });
      expect(await other.partitions.memberHeartbeat({ member: "x", now: NOW, expiresAt: NOW + 1_000 })).toEqual({ members: ["x"] });
    });
  });

  describe("headForceFail", () => {
    it("P8: fails the head whatever its stage or lease, with its waiting continuations, and frees the partition at a new epoch: the old claim's writes are rejected", async () => {
      const s = seam();
      const ids = await fill(s, [0, 0]);
      const kid = jobInsert({ parentId: ids[0] });
      await s.backend.jobs.insertMany({ jobs: [kid], now: NOW });
      const [h] = (await headClaim(s.backend, [P0])).claimed;
      expect(await s.backend.partitions.headForceFail({ ...P0, reason: "poison", now: NOW + 1, retentionMs: 1_000 })).toBe(ids[0]);
      expect(await s.job(ids[0]!)).toMatchObject({ stage: "failed", lastError: "poison", leaseOwner: null, expiresAt: NOW + 1_001 });
      expect(await s.job(kid.id)).toMatchObject({ stage: "failed", lastError: `parent job ${ids[0]} failed: poison` });
      await expectCountersMatch(s);
      const stale = await s.backend.partitions.headFinish({ owner: "m1", claim: claimOf(h!), outcome: { kind: "success" }, now: NOW + 2, retentionMs: DAY });
      expect(stale.applied).toBe(false);
      expect((await s.backend.partitions.leaseRenew({ owner: "m1", claims: [claimOf(h!)], leaseExpiresAt: NOW + 9 })).renewed).toEqual([]);
      const [next] = (await headClaim(s.backend, [P0], { owner: "m2", now: NOW + 2 })).claimed;
      expect(next).toMatchObject({ id: ids[1] });
      expect(next!.epoch).toBeGreaterThan(h!.epoch + 1);
      await expectCountersMatch(s);
    });

    it("P8: fails a delayed or waiting head too, and returns null for a partition with no unfinished job", async () => {
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 3 }], now: NOW });
      const parent = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [parent], now: NOW });
      const delayed = jobInsert({ topic: "orders", partition: 0, runAt: NOW + 1_000_000 });
      const waiting = jobInsert({ topic: "orders", partition: 1, parentId: parent.id });
      await s.backend.jobs.insertMany({ jobs: [delayed, waiting], now: NOW });
      const ff = (p: PartitionRef) => s.backend.partitions.headForceFail({ ...p, reason: "operator", now: NOW, retentionMs: DAY });
      expect(await ff(P0)).toBe(delayed.id);
      expect(await ff(P1)).toBe(waiting.id);
      expect(await ff(P2)).toBeNull();
      expect(await ff(P0)).toBeNull();
      expect((await s.job(waiting.id)).stage).toBe("failed");
      await expectCountersMatch(s);
    });

    it("P8: on a partition with no unfinished job it changes nothing on every dialect: the lease and the epoch stay", async () => {
      const s = seam();
      const [only] = await fill(s, [0]);
      const [h] = (await headClaim(s.backend, [P0])).claimed;
      // Finished outside the partition path: the partition's lease is still held, its head gone.
      await s.backend.jobs.finishMany({ finishes: [{ id: only!, attempt: h!.attempt, outcome: { kind: "success" } }], now: NOW, retentionMs: DAY });
      const rows = async () =>
        (
          await sql<{ partition_no: number | string; epoch: number | string; lease_owner: string | null }>`SELECT partition_no, epoch, lease_owner
            FROM later_partitions WHERE namespace = ${s.backend.namespace} ORDER BY partition_no`.execute(s.raw)
        ).rows.map((r) => ({ partition: Number(r.partition_no), epoch: Number(r.epoch), leaseOwner: r.lease_owner }));
      const before = await rows();
      expect(before[0]).toEqual({ partition: 0, epoch: h!.epoch, leaseOwner: "m1" });
      for (const p of [P0, P1]) expect(await s.backend.partitions.headForceFail({ ...p, reason: "operator", now: NOW, retentionMs: DAY })).toBeNull();
      expect(await rows()).toEqual(before);
      await expectCountersMatch(s);
    });
  });

  describe("historyTruncate", () => {
    it("P8: deletes the partition's terminal jobs but the newest keep (by sequence); unfinished jobs and other partitions stay", async () => {
      const s = seam();
      const ids = await fill(s, [0, 0, 0, 0, 0, 1]);
      let [h] = (await headClaim(s.backend, [P0])).claimed;
      const claimNext = { leaseExpiresAt: LEASE, jobTypes: ["work"] };
      for (let i = 0; i < 4; i++) {
        const outcome = i === 1 ? ({ kind: "fail", error: "x" } as const) : ({ kind: "success" } as const);
        h = (await s.backend.partitions.headFinish({ owner: "m1", claim: claimOf(h!), outcome, now: NOW, retentionMs: DAY, claimNext })).next!;
      }
      const [p1] = (await headClaim(s.backend, [P1])).claimed;
      await s.backend.partitions.headFinish({ owner: "m1", claim: claimOf(p1!), outcome: { kind: "success" }, now: NOW, retentionMs: DAY });
      expect(await s.backend.partitions.historyTruncate({ ...P0, keep: 1 })).toBe(3);
      const left = await s.backend.inspect.jobList({ topic: "orders", limit: 10 });
      expect(left.map((j) => [j.id, j.stage])).toEqual([
        [ids[3], "success"],
        [ids[4], "running"],
        [ids[5], "success"],
      ]);
      await expectCountersMatch(s);
      expect(await s.backend.partitions.historyTruncate({ ...P0, keep: 0 })).toBe(1);
      expect(await s.backend.partitions.historyTruncate({ ...P0, keep: 0 })).toBe(0);
      expect(await s.backend.partitions.historyTruncate({ ...P2, keep: 0 })).toBe(0);
      await expectCountersMatch(s);
    });
  });
});
