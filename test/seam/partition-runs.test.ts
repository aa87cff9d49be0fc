/**
 * The seam suite of partition runs (P3, `partitionRunMax`): `headClaim` and
 * `headFinish`'s `claimNext` with `runMax` return each head's followers (read,
 * not written), `headFinish` with `followers` writes the run in one fenced
 * write, a claim that finds a dead owner's run puts its head back unstarted
 * and claims alone until past it, and `leaseRenew` reports a running
 * follower that was cancelled (X3). Counters are checked against a GROUP BY
 * after every change (D7).
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import type { Backend, ClaimedPartitionJob, PartitionClaim, PartitionRef } from "@later/runtime/internal";
import { BACKENDS, expectCountersMatch, history, jobInsert, NOW, type Seam, useSeam } from "./seam-factory.js";

const LEASE = NOW + 30_000;
const DAY = 86_400_000;
const P0: PartitionRef = { topic: "orders", partition: 0 };
const P1: PartitionRef = { topic: "orders", partition: 1 };

/** Registers `orders` (2 partitions) and inserts `n` jobs into `partition`, in sequence order; returns their ids. */
async function fill(s: Seam, partition: number, n: number, extra: Parameters<typeof jobInsert>[0] = {}): Promise<string[]> {
  await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 2 }], now: NOW });
  const jobs = Array.from({ length: n }, () => jobInsert({ topic: "orders", partition, ...extra }));
  await s.backend.jobs.insertMany({ jobs, now: NOW });
  return jobs.map((j) => j.id);
}

function claimRun(backend: Backend, partitions: PartitionRef[], runMax: number, opts: { owner?: string; now?: number; lease?: number } = {}) {
  return backend.partitions.headClaim({
    owner: opts.owner ?? "m1",
    partitions,
    limit: 10,
    now: opts.now ?? NOW,
    leaseExpiresAt: opts.lease ?? LEASE,
    jobTypes: ["work"],
    runMax,
  });
}

const claimOf = (h: PartitionClaim): PartitionClaim => ({ id: h.id, attempt: h.attempt, topic: h.topic, partition: h.partition, epoch: h.epoch });

/** `followers` as a run's outcomes, every one a success kept a day; the i-th started at `startedAt(i)`. */
const succeeded = (followers: readonly PartitionClaim[], startedAt: (i: number) => number) =>
  followers.map((f, i) => ({ id: f.id, attempt: f.attempt, startedAt: startedAt(i), outcome: { kind: "success" as const }, retentionMs: DAY }));

/** The partition row's recorded run (`run_until_seq`, `careful_until_seq`), read raw. */
async function runBounds(s: Seam, p: PartitionRef): Promise<{ runUntil: number | null; careful: number | null }> {
  const rows = await sql<{ run_until_seq: unknown; careful_until_seq: unknown }>`SELECT run_until_seq, careful_until_seq FROM later_partitions
    WHERE namespace = ${s.backend.namespace} AND topic = ${p.topic} AND partition_no = ${p.partition}`.execute(s.raw);
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return { runUntil: n(rows.rows[0]!.run_until_seq), careful: n(rows.rows[0]!.careful_until_seq) };
}

describe.each(BACKENDS)("partition runs on $name", (entry) => {
  const seam = useSeam(entry);

  it("P3: a claim returns the head's followers, the contiguous ready prefix behind it (at most runMax - 1), read and not written", async () => {
    const s = seam();
    const ids = await fill(s, 0, 5);
    const [late] = await fill(s, 0, 1, { runAt: NOW + 500 });
    const [after] = await fill(s, 0, 1);
    const more = await fill(s, 1, 3);
    const { claimed } = await claimRun(s.backend, [P0, P1], 4);
    const h0 = claimed.find((h) => h.partition === 0)!;
    expect(h0.id).toBe(ids[0]);
    expect(h0.followers!.map((f) => f.id)).toEqual(ids.slice(1, 4));
    expect(h0.followers![0]).toMatchObject({ attempt: 1, follower: true, epoch: h0.epoch, topic: "orders", partition: 0 });
    expect(await s.job(ids[1]!)).toMatchObject({ stage: "enqueued", attempt: 0 });
    expect(history(await s.job(ids[1]!))).toEqual(["enqueued"]);
    expect((await runBounds(s, P0)).runUntil).toBe(h0.followers!.at(-1)!.seq);
    const h1 = claimed.find((h) => h.partition === 1)!;
    expect(h1.followers!.map((f) => f.id)).toEqual(more.slice(1));
    // The run stops at the first job not ready (a delayed one not due), whatever the room.
    await s.backend.partitions.headFinish({ owner: "m1", claim: claimOf(h0), outcome: { kind: "success" }, now: NOW, retentionMs: DAY });
    const next = await s.backend.partitions.headFinish({
      owner: "m1",
      claim: claimOf(h1),
      outcome: { kind: "success" },
      now: NOW,
      retentionMs: DAY,
      claimNext: { leaseExpiresAt: LEASE, jobTypes: ["work"], runMax: 10 },
    });
    expect(next.next!.id).toBe(more[1]);
    expect(next.next!.followers!.map((f) => f.id)).toEqual([more[2]]); // a head's success reads the next run's followers too
    expect((await runBounds(s, P1)).runUntil).toBe(next.next!.followers![0]!.seq);
    const [again] = (await claimRun(s.backend, [P0], 10)).claimed;
    expect(again!.id).toBe(ids[1]);
    expect(again!.followers!.map((f) => f.id)).toEqual(ids.slice(2));
    expect(again!.followers!.map((f) => f.id)).not.toContain(late);
    expect(again!.followers!.map((f) => f.id)).not.toContain(after);
    // runMax 1 (and no runMax): no followers.
    const [single] = (await claimRun(s.backend, [P1], 1)).claimed;
    expect(single).toBeUndefined(); // P1 is held by next's claim
    await expectCountersMatch(s);
  });

  it("P3: headFinish writes the run's followers as claimed at their start then finished; a failure keeps its place; claimNext claims the next run", async () => {
    const s = seam();
    const ids = await fill(s, 0, 5);
    const [head] = (await claimRun(s.backend, [P0], 5)).claimed;
    const [f1, f2] = head!.followers!;
    const result = await s.backend.partitions.headFinish({
      owner: "m1",
      claim: claimOf(head!),
      outcome: { kind: "success" },
      now: NOW + 30,
      retentionMs: DAY,
      followers: [
        { id: f1!.id, attempt: f1!.attempt, startedAt: NOW + 10, outcome: { kind: "success" }, retentionMs: DAY },
        { id: f2!.id, attempt: f2!.attempt, startedAt: NOW + 20, outcome: { kind: "retry", runAt: NOW + 30, error: "no" }, retentionMs: DAY },
      ],
      claimNext: { leaseExpiresAt: LEASE, jobTypes: ["work"], runMax: 5 },
    });
    expect(result).toMatchObject({ applied: true, followersApplied: 2 });
    const one = await s.job(ids[1]!);
    expect(one).toMatchObject({ stage: "success", attempt: 1 });
    expect(one.stages.map((c) => [c.stage, c.at])).toEqual([
      ["enqueued", NOW],
      ["running", NOW + 10],
      ["success", NOW + 30],
    ]);
    // The failed follower keeps its place: it is the next head (due at once), claimed again with the rest behind it.
    expect(result.next).toMatchObject({ id: ids[2], attempt: 2 });
    expect(result.next!.followers!.map((f) => f.id)).toEqual(ids.slice(3));
    expect(history(await s.job(ids[2]!))).toEqual(["enqueued", "running", "requeued", "running"]);
    expect(await s.job(ids[3]!)).toMatchObject({ stage: "enqueued", attempt: 0 });
    await expectCountersMatch(s);
  });

  it("P3: a run whose head and followers all succeeded: each follower's history, result and retention are its own, its continuation is released, counters and entered counts agree; a stale epoch writes nothing", async () => {
    const s = seam();
    const ids = await fill(s, 0, 4);
    const child = jobInsert({ parentId: ids[2]! });
    await s.backend.jobs.insertMany({ jobs: [child], now: NOW });
    await s.backend.jobs.readOutcomes({ ids: [ids[3]!], markAwaited: true });
    const [head] = (await claimRun(s.backend, [P0], 4)).claimed;
    const followers = head!.followers!.map((f, i) => ({
      id: f.id,
      attempt: f.attempt,
      startedAt: NOW + 10 + i,
      outcome: { kind: "success" as const, ...(i === 0 ? { result: '{"n":1}' } : {}) },
      retentionMs: DAY + i,
    }));
    const finish = (epoch: number) =>
      s.backend.partitions.headFinish({
        owner: "m1",
        claim: { ...claimOf(head!), epoch },
        outcome: { kind: "success", result: '"head"' },
        now: NOW + 30,
        retentionMs: DAY,
        followers,
      });
    expect(await finish(head!.epoch + 1)).toMatchObject({ applied: false, followersApplied: 0, next: null });
    expect(await s.job(ids[1]!)).toMatchObject({ stage: "enqueued", attempt: 0 });
    const result = await finish(head!.epoch);
    expect(result).toMatchObject({ applied: true, followersApplied: 3, released: 1, next: null });
    for (const [i, id] of ids.slice(1).entries()) {
      const job = await s.job(id);
      expect(job).toMatchObject({ stage: "success", attempt: 1, expiresAt: NOW + 30 + DAY + i, result: i === 0 ? '{"n":1}' : null });
      expect(job.stages.map((c) => [c.stage, c.at])).toEqual([
        ["enqueued", NOW],
        ["running", NOW + 10 + i],
        ["success", NOW + 30],
      ]);
    }
    expect(await s.job(ids[0]!)).toMatchObject({ stage: "success", result: '"head"', expiresAt: NOW + 30 + DAY });
    expect((await s.job(child.id)).stage).toBe("enqueued");
    expect(await s.backend.jobs.readOutcomes({ ids: [ids[3]!] })).toMatchObject([{ stage: "success", result: null }]);
    await expectCountersMatch(s);
    const entered = await sql<{ stage: string; n: number | string }>`SELECT stage, sum(entered) AS n FROM later_stage_counts
      WHERE namespace = ${s.backend.namespace} GROUP BY stage`.execute(s.raw);
    expect(Object.fromEntries(entered.rows.filter((r) => Number(r.n) > 0).map((r) => [r.stage, Number(r.n)]))).toEqual({
      enqueued: 5,
      running: 4,
      success: 4,
      waiting: 1,
    });
  });

  it("P3/J5: an all-success run claims the next run with it; a continuation of a job of the run that is next in the partition is released and claimed as its head", async () => {
    const s = seam();
    const ids = await fill(s, 0, 4);
    const continuation = jobInsert({ topic: "orders", partition: 0, parentId: ids[3]! });
    const after = jobInsert({ topic: "orders", partition: 0 });
    await s.backend.jobs.insertMany({ jobs: [continuation, after], now: NOW });
    const [head] = (await claimRun(s.backend, [P0], 4)).claimed;
    expect(head!.followers!.map((f) => f.id)).toEqual(ids.slice(1));
    const result = await s.backend.partitions.headFinish({
      owner: "m1",
      claim: claimOf(head!),
      outcome: { kind: "success" },
      now: NOW + 30,
      retentionMs: DAY,
      followers: succeeded(head!.followers!, (i) => NOW + 10 + i),
      claimNext: { leaseExpiresAt: LEASE, jobTypes: ["work"], runMax: 4 },
    });
    expect(result).toMatchObject({ applied: true, followersApplied: 3, released: 1 });
    expect(result.next).toMatchObject({ id: continuation.id, attempt: 1, epoch: head!.epoch + 1 });
    expect(result.next!.followers!.map((f) => f.id)).toEqual([after.id]);
    expect(history(await s.job(continuation.id))).toEqual(["waiting", "enqueued", "running"]);
    for (const id of ids) expect((await s.job(id)).stage).toBe("success");
    expect(await runBounds(s, P0)).toMatchObject({ runUntil: Number((await s.job(after.id)).seq) });
    await expectCountersMatch(s);
  });

  it("X3: a follower cancelled meanwhile is skipped and ends the written prefix; the renewal reports it while it runs", async () => {
    const s = seam();
    const ids = await fill(s, 0, 4);
    const [head] = (await claimRun(s.backend, [P0], 4)).claimed;
    const [f1, f2, f3] = head!.followers!;
    await s.backend.control.cancelMany({ target: { ids: [f2!.id] }, reason: "stop", now: NOW + 5, expiresAt: NOW + DAY, limit: 10 });
    const renewal = await s.backend.partitions.leaseRenew({ owner: "m1", claims: [claimOf(f2!)], leaseExpiresAt: LEASE + 1, followers: [claimOf(f2!)] });
    expect(renewal.renewed).toHaveLength(1); // the lease is kept
    expect(renewal.cancelled).toEqual([{ ...claimOf(f2!), reason: "stop" }]);
    const quiet = await s.backend.partitions.leaseRenew({ owner: "m1", claims: [claimOf(f1!)], leaseExpiresAt: LEASE + 2, followers: [claimOf(f1!)] });
    expect(quiet.cancelled ?? []).toEqual([]);
    const result = await s.backend.partitions.headFinish({
      owner: "m1",
      claim: claimOf(head!),
      outcome: { kind: "success" },
      now: NOW + 30,
      retentionMs: DAY,
      followers: succeeded([f1!, f2!, f3!], (i) => NOW + 10 + i),
    });
    expect(result).toMatchObject({ applied: true, followersApplied: 1, next: null });
    expect((await s.job(ids[1]!)).stage).toBe("success");
    expect((await s.job(ids[2]!)).stage).toBe("cancelled");
    expect(await s.job(ids[3]!)).toMatchObject({ stage: "enqueued", attempt: 0 });
    await expectCountersMatch(s);
  });

  it("P6: a stale run (its epoch moved on) writes nothing; the dead run's head goes back unstarted and heads are claimed alone until past it", async () => {
    const s = seam();
    const ids = await fill(s, 0, 5);
    const [head] = (await claimRun(s.backend, [P0], 3, { lease: NOW + 100 })).claimed;
    expect(head!.followers).toHaveLength(2);
    // Another owner claims after the lease expired: the head, still running inside a run, is put back, not lost.
    const [taken] = (await claimRun(s.backend, [P0], 3, { owner: "m2", now: NOW + 101 })).claimed;
    expect(taken).toMatchObject({ id: ids[0], attempt: 1, epoch: head!.epoch + 1 });
    expect(taken!.lostAttempt).toBeUndefined();
    expect(taken!.followers ?? []).toEqual([]); // careful: claimed alone
    expect(history(await s.job(ids[0]!))).toEqual(["enqueued", "running", "enqueued", "running"]);
    expect(await runBounds(s, P0)).toEqual({ runUntil: head!.seq, careful: head!.followers![1]!.seq }); // this claim is a run of one
    const stale = await s.backend.partitions.headFinish({
      owner: "m1",
      claim: claimOf(head!),
      outcome: { kind: "success" },
      now: NOW + 102,
      retentionMs: DAY,
      followers: succeeded(head!.followers!, () => NOW + 50),
    });
    expect(stale).toEqual({ applied: false, released: 0, next: null, followersApplied: 0 });
    expect(await s.job(ids[1]!)).toMatchObject({ stage: "enqueued", attempt: 0 });
    await expectCountersMatch(s);
    // Careful until the dead run's last sequence: each head alone, then runs again.
    let claim: ClaimedPartitionJob = taken!;
    const sizes: number[] = [];
    for (;;) {
      const r = await s.backend.partitions.headFinish({
        owner: "m2",
        claim: claimOf(claim),
        outcome: { kind: "success" },
        now: NOW + 200,
        retentionMs: DAY,
        followers: succeeded(claim.followers ?? [], () => NOW + 150),
        claimNext: { leaseExpiresAt: LEASE, jobTypes: ["work"], runMax: 3 },
      });
      if (!r.next) break;
      claim = r.next;
      sizes.push(1 + (claim.followers?.length ?? 0));
    }
    expect(sizes).toEqual([1, 1, 2]); // ids[1], ids[2] alone (careful), then ids[3] with ids[4]
    for (const id of ids) expect(await s.job(id)).toMatchObject({ stage: "success", attempt: 1 });
    expect((await runBounds(s, P0)).careful).toBeNull();
    await expectCountersMatch(s);
  });

  it("P6: a head running under an expired lease with no run recorded past it is still a lost attempt", async () => {
    const s = seam();
    const ids = await fill(s, 0, 3);
    await claimRun(s.backend, [P0], 1, { lease: NOW + 100 });
    const [taken] = (await claimRun(s.backend, [P0], 3, { owner: "m2", now: NOW + 101 })).claimed;
    expect(taken).toMatchObject({ id: ids[0], attempt: 1, lostAttempt: true });
    expect(taken!.followers).toBeUndefined();
    await expectCountersMatch(s);
  });
});
