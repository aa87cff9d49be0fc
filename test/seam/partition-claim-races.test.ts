/**
 * Head claims racing other writers, at the seam (`backend.partitions`), on
 * each backend (docs/semantics.md P3, P6, X3):
 * - two servers claiming the same partitions at once (each believes it owns
 *   them while membership changes) never claim a head that has finished
 *   meanwhile: every job runs once. On PostgreSQL a claim reads its heads in
 *   the snapshot of the statement that locks their partitions, before the
 *   lock is granted: a partition another server claimed, ran and freed in
 *   between comes back locked, beside a head already `success`.
 * - a head's success that claims the next head does not claim one cancelled
 *   after its snapshot (a cancel of a job not running takes no partition
 *   lock); the partition is left free, not leased to no one.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import type { Backend, PartitionRef } from "@later/runtime/internal";
import { withClient } from "../support/postgres.js";
import { BACKENDS, expectCountersMatch, history, jobInsert, NOW, useSeam } from "./seam-factory.js";

const PARTITIONS = 64;
const JOBS = 300;
const LEASE = NOW + 60_000;

describe.each(BACKENDS)("partition head claims racing on $name", (entry) => {
  const seam = useSeam(entry);

  it("P6: two servers claiming one partition's heads at once, one of them with 63 other partitions in its claim, never claim a head that finished: every job runs once", async () => {
    const s = seam();
    const other = await s.other(s.backend.namespace);
    await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: PARTITIONS }], now: NOW });
    const last: PartitionRef = { topic: "orders", partition: PARTITIONS - 1 };
    const all = Array.from({ length: PARTITIONS }, (_, partition): PartitionRef => ({ topic: "orders", partition }));
    const jobs = Array.from({ length: JOBS }, () => jobInsert({ topic: "orders", partition: last.partition }));
    await s.backend.jobs.insertMany({ jobs, now: NOW });

    const claims: { owner: string; id: string; attempt: number }[] = [];
    let left = JOBS;
    let tick = 0;
    // Each claims what it can and finishes it at once without claiming the next head, so the partition is free
    // between two claims; the one with the long claim locks the last partition well after its snapshot.
    const drive = async (backend: Backend, owner: string, partitions: PartitionRef[]) => {
      while (left > 0) {
        const { claimed } = await backend.partitions.headClaim({ owner, partitions, limit: 4, now: NOW + ++tick, leaseExpiresAt: LEASE, jobTypes: ["work"] });
        for (const h of claimed) {
          claims.push({ owner, id: h.id, attempt: h.attempt });
          const claim = { id: h.id, attempt: h.attempt, topic: h.topic, partition: h.partition, epoch: h.epoch };
          const r = await backend.partitions.headFinish({ owner, claim, outcome: { kind: "success" }, now: NOW + ++tick, retentionMs: 86_400_000 });
          if (r.applied) left--;
        }
      }
    };
    await Promise.all([drive(s.backend, "wide", all), drive(other, "narrow", [last])]);

    expect(
      claims.filter((c) => c.attempt !== 1),
      "heads claimed again after they finished",
    ).toEqual([]);
    expect(claims).toHaveLength(JOBS);
    for (const j of jobs) expect(history(await s.job(j.id))).toEqual(["enqueued", "running", "success"]);
    await expectCountersMatch(s);
  });

  it.runIf(entry.name === "postgres")(
    "P3/X3: a success that claims the next head leaves it alone when it was cancelled after the statement's snapshot (while the statement waited for the partition), and frees the partition",
    async () => {
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 1 }], now: NOW });
      const [first, second, third] = [0, 1, 2].map(() => jobInsert({ topic: "orders", partition: 0 }));
      await s.backend.jobs.insertMany({ jobs: [first!, second!, third!], now: NOW });
      const [h] = (
        await s.backend.partitions.headClaim({
          owner: "m1",
          partitions: [{ topic: "orders", partition: 0 }],
          limit: 1,
          now: NOW,
          leaseExpiresAt: LEASE,
          jobTypes: ["work"],
        })
      ).claimed;
      const schema = s.db.schema!;
      const parts = `${pg.escapeIdentifier(schema)}.later_partitions`;
      await withClient(s.db.url, async (locker) => {
        // The partition row held by another session: the finish takes its snapshot, then waits for it.
        await locker.query("BEGIN");
        await locker.query(`SELECT 1 FROM ${parts} WHERE namespace = $1 AND topic = 'orders' AND partition_no = 0 FOR UPDATE`, [s.backend.namespace]);
        const finishing = s.backend.partitions.headFinish({
          owner: "m1",
          claim: { id: h!.id, attempt: h!.attempt, topic: h!.topic, partition: h!.partition, epoch: h!.epoch },
          outcome: { kind: "success" },
          now: NOW + 1,
          retentionMs: 86_400_000,
          claimNext: { leaseExpiresAt: LEASE, jobTypes: ["work"] },
        });
        await waitForLockWait(s.db.url, schema);
        const cancelled = await s.backend.control.cancelMany({
          target: { ids: [second!.id] },
          reason: null,
          now: NOW + 1,
          expiresAt: NOW + 86_400_000,
          limit: 1,
        });
        expect(cancelled.ids).toEqual([second!.id]);
        await locker.query("COMMIT");
        const r = await finishing;
        expect(r.applied).toBe(true);
        expect(r.next, "the cancelled job is not claimed").toBeNull();
      });
      expect(history(await s.job(second!.id))).toEqual(["enqueued", "cancelled"]);
      expect(
        (await s.backend.inspect.partitionList({ topic: "orders" })).partitions[0],
        "the partition is free at once, its next head the third job",
      ).toMatchObject({
        leaseOwner: null,
        headJobId: third!.id,
      });
      await expectCountersMatch(s);
    },
  );
});

/** Waits (polling, 5 s at most) until a session's statement on `schema`'s partitions waits for a lock. */
async function waitForLockWait(url: string, schema: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  await withClient(url, async (c) => {
    for (;;) {
      const { rows } = await c.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND wait_event_type = 'Lock' AND position($1 in query) > 0 AND position('later_partitions' in query) > 0",
        [schema],
      );
      if (rows[0].n > 0) return;
      if (Date.now() > deadline) throw new Error("the finish never waited for the partition lock");
      await new Promise((r) => setTimeout(r, 10));
    }
  });
}
