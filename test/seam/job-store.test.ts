/**
 * The seam suite of `backend.jobs` (packages/runtime/src/backend/job-store.ts):
 * every method called directly on each backend, asserting what its TSDoc
 * promises, edge cases included, with the stage counters checked against a
 * GROUP BY after every change of stages (D7). See seam-factory.ts; the
 * coverage guard (seam-coverage.test.ts) fails when a method of the store
 * has no test here.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { ParentNotFoundError, UnknownTopicError } from "@later/runtime";
import type { Backend, ClaimKey } from "@later/runtime/internal";
import { BACKENDS, expectCountersMatch, history, jobInsert, NOW, storedStages, useSeam } from "./seam-factory.js";

const LEASE = NOW + 30_000;
const DAY = 86_400_000;

/** Claims up to `limit` ready jobs of `types` for `owner` at `now`. */
function claim(backend: Backend, limit: number, types: string[] = ["work"], owner = "w1", now = NOW, leaseExpiresAt = LEASE) {
  return backend.jobs.claimReady({ owner, limit, now, leaseExpiresAt, jobTypes: types });
}

const key = (j: ClaimKey) => ({ id: j.id, attempt: j.attempt });

describe.each(BACKENDS)("backend.jobs on $name", (entry) => {
  const seam = useSeam(entry);

  describe("insertMany", () => {
    it("stores each job enqueued or delayed by its runAt, with its fields and a one-entry history, in input order", async () => {
      const s = seam();
      const a = jobInsert({ payload: '{"a":1}', retryPolicy: '{"kind":"none"}', timeoutMs: 5_000 });
      const b = jobInsert({ runAt: NOW + 1_000 });
      const c = jobInsert({ jobType: "other", runAt: NOW - 1_000 });
      const { stages } = await s.backend.jobs.insertMany({ jobs: [a, b, c], now: NOW });
      expect(stages).toEqual(["enqueued", "delayed", "enqueued"]);
      const stored = await s.job(a.id);
      expect(stored).toMatchObject({ jobType: "work", payload: '{"a":1}', stage: "enqueued", attempt: 0, runAt: NOW, parentId: null, createdAt: NOW });
      expect(stored.stages).toEqual([{ stage: "enqueued", at: NOW }]);
      expect((await s.job(b.id)).stage).toBe("delayed");
      expect(await s.backend.jobs.insertMany({ jobs: [], now: NOW })).toEqual({ stages: [] });
      await expectCountersMatch(s);
    });

    it("J5: a continuation follows its parent: waiting, enqueued (delayed if not due) after a success, failed with the parent's reason after a failure", async () => {
      const s = seam();
      const ok = jobInsert({ jobType: "parent" });
      const bad = jobInsert({ jobType: "parent" });
      const pending = jobInsert({ jobType: "parent" });
      await s.backend.jobs.insertMany({ jobs: [ok, bad, pending], now: NOW });
      const claimed = await claim(s.backend, 2, ["parent"]);
      expect(claimed.jobs.map((j) => j.id)).toEqual([ok.id, bad.id]);
      await s.backend.jobs.finishMany({
        finishes: [
          { id: ok.id, attempt: 1, outcome: { kind: "success" } },
          { id: bad.id, attempt: 1, outcome: { kind: "fail", error: "boom" } },
        ],
        now: NOW,
        retentionMs: DAY,
      });
      const kids = [
        jobInsert({ parentId: pending.id }),
        jobInsert({ parentId: ok.id }),
        jobInsert({ parentId: ok.id, runAt: NOW + 5_000 }),
        jobInsert({ parentId: bad.id }),
      ];
      const { stages } = await s.backend.jobs.insertMany({ jobs: kids, now: NOW + 1 });
      expect(stages).toEqual(["waiting", "enqueued", "delayed", "failed"]);
      expect((await s.job(kids[3]!.id)).lastError).toBe(`parent job ${bad.id} failed: boom`);
      await expectCountersMatch(s);
    });

    it("X5: a fan-in job (parentIds) follows all its parents: waiting for the unfinished, released at once when all succeeded, failed with the first failed parent's reason", async () => {
      const s = seam();
      const ok = jobInsert({ jobType: "parent" });
      const ok2 = jobInsert({ jobType: "parent" });
      const bad = jobInsert({ jobType: "parent" });
      const pending = jobInsert({ jobType: "parent" });
      await s.backend.jobs.insertMany({ jobs: [ok, ok2, bad, pending], now: NOW });
      const claimed = await claim(s.backend, 3, ["parent"]);
      expect(claimed.jobs.map((j) => j.id)).toEqual([ok.id, ok2.id, bad.id]);
      await s.backend.jobs.finishMany({
        finishes: [
          { id: ok.id, attempt: 1, outcome: { kind: "success" } },
          { id: ok2.id, attempt: 1, outcome: { kind: "success" } },
          { id: bad.id, attempt: 1, outcome: { kind: "fail", error: "boom" } },
        ],
        now: NOW,
        retentionMs: DAY,
      });
      const sorted = (...ids: string[]) => [...ids].sort();
      const kids = [
        jobInsert({ parentIds: sorted(ok.id, pending.id) }),
        jobInsert({ parentIds: sorted(ok.id, ok2.id) }),
        jobInsert({ parentIds: sorted(ok.id, ok2.id), runAt: NOW + 5_000 }),
        jobInsert({ parentIds: sorted(ok.id, bad.id, pending.id) }),
      ];
      const { stages } = await s.backend.jobs.insertMany({ jobs: kids, now: NOW + 1 });
      expect(stages).toEqual(["waiting", "enqueued", "delayed", "failed"]);
      expect((await s.job(kids[3]!.id)).lastError).toBe(`parent job ${bad.id} failed: boom`);
      expect((await s.job(kids[0]!.id)).parentId).toBeNull();
      await expectCountersMatch(s);
      const unknown = jobInsert({ parentIds: sorted(ok.id, jobInsert().id) });
      await expect(s.backend.jobs.insertMany({ jobs: [jobInsert(), unknown], now: NOW })).rejects.toBeInstanceOf(ParentNotFoundError);
      const inBatch = jobInsert();
      await expect(s.backend.jobs.insertMany({ jobs: [inBatch, jobInsert({ parentIds: sorted(ok.id, inBatch.id) })], now: NOW })).rejects.toBeInstanceOf(
        ParentNotFoundError,
      );
      expect(Object.keys(await storedStages(s))).toHaveLength(8);
    });

    it("J5: an unknown parent throws ParentNotFoundError and writes nothing of the batch", async () => {
      const s = seam();
      const fine = jobInsert();
      const orphan = jobInsert({ parentId: jobInsert().id });
      await expect(s.backend.jobs.insertMany({ jobs: [fine, orphan], now: NOW })).rejects.toBeInstanceOf(ParentNotFoundError);
      expect(await storedStages(s)).toEqual({});
      await expectCountersMatch(s);
    });

    it("P3: partitioned jobs take dense sequences per partition, continued by the next batch", async () => {
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 3 }], now: NOW });
      const first = [0, 1, 0, 2, 0].map((partition) => jobInsert({ topic: "orders", partition }));
      await s.backend.jobs.insertMany({ jobs: first, now: NOW });
      const second = [1, 0].map((partition) => jobInsert({ topic: "orders", partition }));
      await s.backend.jobs.insertMany({ jobs: second, now: NOW });
      const seqs: Record<number, number[]> = {};
      for (const j of [...first, ...second]) {
        const r = await s.job(j.id);
        expect(r).toMatchObject({ topic: "orders", partition: j.partition });
        (seqs[j.partition!] ??= []).push(r.seq!);
      }
      // Dense and in input order within each partition, all partitions starting from the same first number.
      const base = seqs[0]![0]!;
      expect(seqs).toEqual({ 0: [base, base + 1, base + 2, base + 3], 1: [base, base + 1], 2: [base] });
      await expectCountersMatch(s);
    });

    it("P1: an unknown topic or partition throws UnknownTopicError and writes nothing of the batch, no sequence taken", async () => {
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 2 }], now: NOW });
      for (const bad of [jobInsert({ topic: "nope", partition: 0 }), jobInsert({ topic: "orders", partition: 2 })]) {
        const batch = [jobInsert(), jobInsert({ topic: "orders", partition: 0 }), bad];
        await expect(s.backend.jobs.insertMany({ jobs: batch, now: NOW })).rejects.toBeInstanceOf(UnknownTopicError);
      }
      expect(await storedStages(s)).toEqual({});
      await expectCountersMatch(s);
      const ok = jobInsert({ topic: "orders", partition: 0 });
      await s.backend.jobs.insertMany({ jobs: [ok], now: NOW });
      const again = jobInsert({ topic: "orders", partition: 0 });
      await s.backend.jobs.insertMany({ jobs: [again], now: NOW });
      expect((await s.job(again.id)).seq).toBe((await s.job(ok.id)).seq! + 1);
    });

    it("J10: writes into the caller's transaction: nothing after a rollback, the jobs after a commit", async () => {
      const s = seam();
      const rolledBack = jobInsert();
      await expect(
        s.raw.transaction().execute(async (trx) => {
          await s.backend.jobs.insertMany({ jobs: [rolledBack], now: NOW, transaction: trx });
          throw new Error("roll back");
        }),
      ).rejects.toThrow("roll back");
      expect(await storedStages(s)).toEqual({});
      await expectCountersMatch(s);
      const committed = jobInsert({ runAt: NOW + 1 });
      const result = await s.raw.transaction().execute((trx) => s.backend.jobs.insertMany({ jobs: [committed], now: NOW, transaction: trx }));
      expect(result.stages).toEqual(["delayed"]);
      expect(await storedStages(s)).toEqual({ [committed.id]: "delayed" });
      await expectCountersMatch(s);
    });

    it("J5: a continuation whose parent is in the same batch is refused (ParentNotFoundError) on every dialect and path, nothing written", async () => {
      // A parent must be stored by an earlier insert (insertMany's TSDoc); enqueueMany cannot name a job of its own batch.
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "orders", partitions: 1 }], now: NOW });
      const before = jobInsert({ topic: "orders", partition: 0 });
      await s.backend.jobs.insertMany({ jobs: [before], now: NOW });
      const parent = jobInsert();
      const child = jobInsert({ parentId: parent.id });
      await expect(s.backend.jobs.insertMany({ jobs: [parent, child], now: NOW })).rejects.toBeInstanceOf(ParentNotFoundError);
      await expect(s.backend.jobs.insertMany({ jobs: [child, parent], now: NOW })).rejects.toBeInstanceOf(ParentNotFoundError);
      const partitioned = [jobInsert({ topic: "orders", partition: 0 })];
      partitioned.push(jobInsert({ topic: "orders", partition: 0, parentId: partitioned[0]!.id }));
      await expect(s.backend.jobs.insertMany({ jobs: partitioned, now: NOW })).rejects.toBeInstanceOf(ParentNotFoundError);
      await expect(
        s.raw.transaction().execute((trx) => s.backend.jobs.insertMany({ jobs: [parent, child], now: NOW, transaction: trx })),
      ).rejects.toBeInstanceOf(ParentNotFoundError);
      expect(await storedStages(s)).toEqual({ [before.id]: "enqueued" });
      await expectCountersMatch(s);
      // Stored first, the same parent is found.
      await s.backend.jobs.insertMany({ jobs: [parent], now: NOW });
      expect(await s.backend.jobs.insertMany({ jobs: [child], now: NOW })).toEqual({ stages: ["waiting"] });
      const next = jobInsert({ topic: "orders", partition: 0 });
      await s.backend.jobs.insertMany({ jobs: [next], now: NOW });
      expect((await s.job(next.id)).seq).toBe((await s.job(before.id)).seq! + 1); // the refused batches took no sequence
      await expectCountersMatch(s);
    });

    it("J11: a job stored terminal at insert (a continuation of a failed parent) expires at now + retentionMs (default one day), in its own and the caller's transaction", async () => {
      const s = seam();
      const parent = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [parent], now: NOW });
      await claim(s.backend, 1);
      await s.backend.jobs.finishMany({ finishes: [{ id: parent.id, attempt: 1, outcome: { kind: "fail", error: "x" } }], now: NOW, retentionMs: DAY });
      const [own, byDefault, inTrx] = [jobInsert({ parentId: parent.id }), jobInsert({ parentId: parent.id }), jobInsert({ parentId: parent.id })];
      const unfinished = jobInsert();
      expect(await s.backend.jobs.insertMany({ jobs: [own, unfinished], now: NOW + 10, retentionMs: 1_000 })).toEqual({ stages: ["failed", "enqueued"] });
      await s.backend.jobs.insertMany({ jobs: [byDefault], now: NOW + 10 });
      await s.raw.transaction().execute((trx) => s.backend.jobs.insertMany({ jobs: [inTrx], now: NOW + 10, retentionMs: 2_000, transaction: trx }));
      expect((await s.job(own.id)).expiresAt).toBe(NOW + 1_010);
      expect((await s.job(byDefault.id)).expiresAt).toBe(NOW + 10 + DAY);
      expect((await s.job(inTrx.id)).expiresAt).toBe(NOW + 2_010);
      expect((await s.job(unfinished.id)).expiresAt).toBeNull();
      expect(await s.backend.jobs.deleteExpired({ now: NOW + 1_011, limit: 10 })).toBe(1);
      expect(await storedStages(s)).toEqual({ [parent.id]: "failed", [byDefault.id]: "failed", [inTrx.id]: "failed", [unfinished.id]: "enqueued" });
      await expectCountersMatch(s);
    });

    it("J11/X7: a continuation stored failed at insert (its parent had failed) is a terminal job like any other: the filter forms count and delete it", async () => {
      const s = seam();
      const parent = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [parent], now: NOW });
      await claim(s.backend, 1);
      await s.backend.jobs.finishMany({ finishes: [{ id: parent.id, attempt: 1, outcome: { kind: "fail", error: "x" } }], now: NOW, retentionMs: DAY });
      const late = jobInsert({ parentId: parent.id });
      await s.backend.jobs.insertMany({ jobs: [late], now: NOW });
      expect((await s.job(late.id)).stage).toBe("failed");
      // With its expiry (see the test above) it is in the expiry index every filter form and the sweep read.
      expect(await s.backend.control.countMatching({ action: "delete", filter: { stage: "failed" } })).toBe(2);
      expect((await s.backend.control.deleteMany({ target: { filter: {} }, limit: 10 })).ids.sort()).toEqual([parent.id, late.id].sort());
      await expectCountersMatch(s);
    });
  });

  describe("insertUniqueMany", () => {
    const unique = async (b: Backend, mode: "keep" | "replace" | "afterActive", overrides: Parameters<typeof jobInsert>[0] = {}, now = NOW) =>
      (await b.jobs.insertUniqueMany({ inserts: [{ job: jobInsert(overrides), uniqueKey: "k", uniqueMode: mode, now }] })).results[0]!;
    const finish = (b: Backend, id: string, kind: "success" | "retry" | "fail" = "success") =>
      b.jobs.finishMany({
        finishes: [
          {
            id,
            attempt: 1,
            outcome: kind === "success" ? { kind } : kind === "retry" ? { kind, runAt: NOW, error: "again" } : { kind: "fail", error: "no" },
          },
        ],
        now: NOW,
        retentionMs: DAY,
      });

    it("X2 keep: one unfinished job per (type, key), pending or active; finished, the key is free again", async () => {
      const s = seam();
      const a = await unique(s.backend, "keep", { payload: '{"n":1}' });
      expect(a).toMatchObject({ outcome: "inserted", stage: "enqueued" });
      expect(await s.job(a.id)).toMatchObject({ uniqueKey: "k", uniqueSlot: "pending" });
      expect(await unique(s.backend, "keep", { payload: '{"n":2}' })).toEqual({ id: a.id, outcome: "existing", stage: "enqueued" });
      // Another job type is another key space.
      expect((await unique(s.backend, "keep", { jobType: "other" })).outcome).toBe("inserted");
      expect((await claim(s.backend, 5)).jobs.map((j) => j.id)).toEqual([a.id]);
      expect((await s.job(a.id)).uniqueSlot).toBe("active");
      expect(await unique(s.backend, "keep")).toEqual({ id: a.id, outcome: "existing", stage: "running" });
      const done = await finish(s.backend, a.id);
      expect(done.freed).toBe(1);
      expect(await s.job(a.id)).toMatchObject({ stage: "success", uniqueKey: "k", uniqueSlot: null });
      const b = await unique(s.backend, "keep", { payload: '{"n":3}' });
      expect(b.outcome).toBe("inserted");
      expect(b.id).not.toBe(a.id);
      expect((await s.job(a.id)).payload).toBe('{"n":1}');
      await expectCountersMatch(s);
    });

    it("X2 replace: a job not started takes the payload and run time (delayed <-> enqueued counted); running, a job is kept to run after it", async () => {
      const s = seam();
      const a = await unique(s.backend, "replace", { payload: '{"n":1}', runAt: NOW + 5_000 });
      expect(a.stage).toBe("delayed");
      const r = await unique(s.backend, "replace", { payload: '{"n":2}' });
      expect(r).toEqual({ id: a.id, outcome: "replaced", stage: "enqueued" });
      expect(await s.job(a.id)).toMatchObject({ payload: '{"n":2}', runAt: NOW, stage: "enqueued" });
      expect(history(await s.job(a.id))).toEqual(["delayed", "enqueued"]);
      expect(await unique(s.backend, "replace", { payload: '{"n":3}' })).toEqual({ id: a.id, outcome: "replaced", stage: "enqueued" });
      expect(history(await s.job(a.id))).toEqual(["delayed", "enqueued"]);
      await expectCountersMatch(s);
      await claim(s.backend, 5);
      const b = await unique(s.backend, "replace", { payload: '{"n":4}' });
      expect(b.outcome).toBe("inserted");
      // The kept job does not start while the key's job runs, and carries no nextRunAt (it is due, only blocked).
      expect((await claim(s.backend, 5)).jobs).toEqual([]);
      await finish(s.backend, a.id);
      expect((await claim(s.backend, 5)).jobs.map((j) => [j.id, j.payload])).toEqual([[b.id, '{"n":4}']]);
      await expectCountersMatch(s);
    });

    it("X2 afterActive: keep before the start; while it runs one more job, its payload replaced by the latest; a retry keeps the active slot", async () => {
      const s = seam();
      const a = await unique(s.backend, "afterActive", { payload: '{"n":1}' });
      expect(await unique(s.backend, "afterActive", { payload: '{"n":2}' })).toEqual({ id: a.id, outcome: "existing", stage: "enqueued" });
      await claim(s.backend, 5);
      const b = await unique(s.backend, "afterActive", { payload: '{"n":3}' });
      expect(b.outcome).toBe("inserted");
      for (let n = 4; n <= 6; n++) {
        expect(await unique(s.backend, "afterActive", { payload: `{"n":${n}}`, runAt: NOW + 1 })).toEqual({ id: b.id, outcome: "replaced", stage: "enqueued" });
      }
      expect(await s.job(b.id)).toMatchObject({ payload: '{"n":6}', runAt: NOW, uniqueSlot: "pending" });
      // The running job is retried: it keeps the active slot and runs again before the kept one.
      await finish(s.backend, a.id, "retry");
      expect(await s.job(a.id)).toMatchObject({ stage: "requeued", uniqueSlot: "active" });
      const again = await claim(s.backend, 5);
      expect(again.jobs.map((j) => j.id)).toEqual([a.id]);
      await s.backend.jobs.finishMany({ finishes: [{ id: a.id, attempt: 2, outcome: { kind: "fail", error: "no" } }], now: NOW, retentionMs: DAY });
      expect((await s.job(a.id)).uniqueSlot).toBeNull();
      expect((await claim(s.backend, 5)).jobs.map((j) => j.id)).toEqual([b.id]);
      await expectCountersMatch(s);
    });

    it("X2: the key's row is found by the unique index; concurrent inserts of one key store one job", async () => {
      const s = seam();
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => unique(s.backend, "keep", { payload: `{"i":${i}}` })));
      expect(results.filter((r) => r.outcome === "inserted")).toHaveLength(1);
      expect(new Set(results.map((r) => r.id)).size).toBe(1);
      await expectCountersMatch(s);
    });

    it("X2: several inserts are one transaction, each seeing the ones before it, results in their order", async () => {
      const s = seam();
      const insert = (key: string, mode: "keep" | "replace" | "afterActive", payload: string, runAt = NOW) => ({
        job: jobInsert({ payload, runAt }),
        uniqueKey: key,
        uniqueMode: mode,
        now: NOW,
      });
      // Keys given out of their order (PostgreSQL writes them sorted), and three of key "b", whose order must hold.
      const { results } = await s.backend.jobs.insertUniqueMany({
        inserts: [
          insert("c", "keep", '{"n":1}'),
          insert("b", "replace", '{"n":2}', NOW + 5_000),
          insert("a", "keep", '{"n":3}'),
          insert("b", "replace", '{"n":4}'),
          insert("b", "keep", '{"n":5}'),
          insert("c", "keep", '{"n":6}'),
        ],
      });
      expect(results.map((r) => r.outcome)).toEqual(["inserted", "inserted", "inserted", "replaced", "existing", "existing"]);
      const [c, b, a] = results;
      expect(results.map((r) => r.id)).toEqual([c!.id, b!.id, a!.id, b!.id, b!.id, c!.id]);
      expect(results.map((r) => r.stage)).toEqual(["enqueued", "delayed", "enqueued", "enqueued", "enqueued", "enqueued"]);
      // The replace in the batch moved b from delayed to enqueued, with its payload; the later keep wrote nothing.
      expect(await s.job(b!.id)).toMatchObject({ payload: '{"n":4}', runAt: NOW, stage: "enqueued", uniqueSlot: "pending" });
      expect(history(await s.job(b!.id))).toEqual(["delayed", "enqueued"]);
      expect((await s.job(c!.id)).payload).toBe('{"n":1}');
      // Distinct keys (on PostgreSQL one statement, autocommit): a held key found, a pending job replaced, new keys inserted.
      const next = await s.backend.jobs.insertUniqueMany({
        inserts: [insert("d", "keep", '{"n":7}'), insert("a", "keep", '{"n":8}'), insert("c", "afterActive", '{"n":9}'), insert("b", "replace", '{"n":10}')],
      });
      expect(next.results.map((r) => [r.outcome, r.id === a!.id || r.id === b!.id || r.id === c!.id])).toEqual([
        ["inserted", false],
        ["existing", true],
        ["existing", true],
        ["replaced", true],
      ]);
      expect((await s.job(b!.id)).payload).toBe('{"n":10}');
      expect((await s.job(next.results[0]!.id)).uniqueSlot).toBe("pending");
      // Started, the keys' jobs hold their `active` slots: keep yields to one, afterActive queues a job behind it.
      expect((await claim(s.backend, 10)).jobs).toHaveLength(4);
      const behind = await s.backend.jobs.insertUniqueMany({
        inserts: [insert("a", "keep", '{"n":11}'), insert("c", "afterActive", '{"n":12}'), insert("e", "keep", '{"n":13}')],
      });
      expect(behind.results.map((r) => [r.outcome, r.stage])).toEqual([
        ["existing", "running"],
        ["inserted", "enqueued"],
        ["inserted", "enqueued"],
      ]);
      expect(behind.results[0]!.id).toBe(a!.id);
      expect((await s.job(behind.results[1]!.id)).payload).toBe('{"n":12}');
      await expectCountersMatch(s);
    });
  });

  describe("claimReady", () => {
    it("X10: a job's meta is stored as given (NULL when none) and comes back with its claim", async () => {
      const s = seam();
      const tagged = jobInsert({ runAt: NOW - 2, meta: '{"traceparent":"00-x"}' });
      const plain = jobInsert({ runAt: NOW - 1 });
      await s.backend.jobs.insertMany({ jobs: [tagged, plain], now: NOW });
      const { rows } = await sql<{ id: string; meta: string | null }>`SELECT id, meta FROM later_jobs`.execute(s.raw);
      const stored = new Map(rows.map((r) => [r.id, r.meta]));
      expect([stored.get(tagged.id), stored.get(plain.id)]).toEqual(['{"traceparent":"00-x"}', null]);
      const claimed = await claim(s.backend, 5);
      expect(claimed.jobs.map((j) => [j.id, j.meta ?? null])).toEqual([
        [tagged.id, '{"traceparent":"00-x"}'],
        [plain.id, null],
      ]);
    });

    it("X1: lowest priority number first, then oldest runAt; across priorities until limit; nextRunAt the earliest later runAt of any priority", async () => {
      const s = seam();
      const low = jobInsert({ runAt: NOW - 10, priority: 5 });
      const high = jobInsert({ runAt: NOW - 1, priority: -3 });
      const plainOld = jobInsert({ runAt: NOW - 30 });
      const plainNew = jobInsert({ runAt: NOW - 20 });
      const highLater = jobInsert({ runAt: NOW + 9_000, priority: -3 });
      const lowSoon = jobInsert({ runAt: NOW + 4_000, priority: 5 });
      await s.backend.jobs.insertMany({ jobs: [low, high, plainOld, plainNew, highLater, lowSoon], now: NOW });
      expect((await s.job(high.id)).priority).toBe(-3);
      expect((await s.job(plainOld.id)).priority).toBe(0);
      const first = await claim(s.backend, 3);
      expect(first.jobs.map((j) => j.id)).toEqual([high.id, plainOld.id, plainNew.id]);
      const rest = await claim(s.backend, 10);
      expect(rest.jobs.map((j) => j.id)).toEqual([low.id]);
      expect(rest.nextRunAt).toBe(NOW + 4_000);
      await expectCountersMatch(s);
    });

    it("a full claim may take fewer than limit, at least three quarters of it, and says full by having no nextRunAt; a short one has it", async () => {
      const s = seam();
      const jobs = Array.from({ length: 40 }, (_, i) => jobInsert({ runAt: NOW - 1_000 + i }));
      await s.backend.jobs.insertMany({ jobs, now: NOW });
      const taken: string[] = [];
      for (const limit of [7, 13, 11]) {
        const r = await claim(s.backend, limit);
        expect(r.jobs.length, `limit ${limit}`).toBeGreaterThanOrEqual(Math.ceil((limit * 3) / 4));
        expect(r.jobs.length, `limit ${limit}`).toBeLessThanOrEqual(limit);
        expect(r.nextRunAt, `limit ${limit}`).toBeUndefined();
        taken.push(...r.jobs.map((j) => j.id));
      }
      // Oldest first across the claims, none twice.
      expect(taken).toEqual(jobs.slice(0, taken.length).map((j) => j.id));
      const last = await claim(s.backend, 100);
      expect(last.jobs.length).toBe(40 - taken.length);
      expect(last.nextRunAt).toBeNull();
      await expectCountersMatch(s);
    });

    it("claims at most limit ready jobs, oldest runAt first: running, attempt + 1, the lease; no nextRunAt when full", async () => {
      const s = seam();
      const jobs = [jobInsert({ runAt: NOW - 10 }), jobInsert({ runAt: NOW - 30, retryPolicy: '{"r":1}', timeoutMs: 700 }), jobInsert({ runAt: NOW - 20 })];
      await s.backend.jobs.insertMany({ jobs, now: NOW });
      const first = await claim(s.backend, 2);
      expect(first.jobs.map((j) => j.id)).toEqual([jobs[1]!.id, jobs[2]!.id]);
      expect(first.jobs[0]).toMatchObject({ jobType: "work", payload: "{}", attempt: 1, retryPolicy: '{"r":1}', timeoutMs: 700, runAt: NOW - 30 });
      expect(first.nextRunAt).toBeUndefined();
      expect(await s.job(jobs[1]!.id)).toMatchObject({ stage: "running", attempt: 1, leaseOwner: "w1", leaseExpiresAt: LEASE });
      expect(history(await s.job(jobs[1]!.id))).toEqual(["enqueued", "running"]);
      await expectCountersMatch(s);
      const rest = await claim(s.backend, 5);
      expect(rest.jobs.map((j) => j.id)).toEqual([jobs[0]!.id]);
      expect(rest.nextRunAt).toBeNull();
      expect(await claim(s.backend, 0)).toEqual({ jobs: [] });
      await expectCountersMatch(s);
    });

    it("takes only the given job types and due jobs; when short, nextRunAt is the earliest later runAt among those types", async () => {
      const s = seam();
      const due = jobInsert();
      const later = jobInsert({ runAt: NOW + 5_000 });
      const soonOther = jobInsert({ jobType: "other", runAt: NOW + 1_000 });
      const dueOther = jobInsert({ jobType: "other" });
      await s.backend.jobs.insertMany({ jobs: [due, later, soonOther, dueOther], now: NOW });
      const r = await claim(s.backend, 10, ["work"]);
      expect(r.jobs.map((j) => j.id)).toEqual([due.id]);
      expect(r.nextRunAt).toBe(NOW + 5_000);
      expect(await claim(s.backend, 10, [])).toEqual({ jobs: [] });
      const both = await claim(s.backend, 10, ["work", "other"]);
      expect(both.jobs.map((j) => j.id)).toEqual([dueOther.id]);
      expect(both.nextRunAt).toBe(NOW + 1_000);
      // Once due, the delayed jobs are claimed.
      const atTime = await claim(s.backend, 10, ["work", "other"], "w1", NOW + 5_000, NOW + 60_000);
      expect(atTime.jobs.map((j) => j.id)).toEqual([soonOther.id, later.id]);
      expect(atTime.nextRunAt).toBeNull();
      await expectCountersMatch(s);
    });

    it("J6: skips other namespaces' jobs, partitioned jobs and waiting continuations", async () => {
      const s = seam();
      const other = await s.other(`${s.backend.namespace}-other`);
      await other.jobs.insertMany({ jobs: [jobInsert()], now: NOW });
      await s.backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 1 }], now: NOW });
      const parent = jobInsert({ jobType: "parent" });
      await s.backend.jobs.insertMany({ jobs: [jobInsert({ topic: "t", partition: 0 }), parent], now: NOW });
      await s.backend.jobs.insertMany({ jobs: [jobInsert({ parentId: parent.id })], now: NOW });
      expect(await claim(s.backend, 10)).toEqual({ jobs: [], nextRunAt: null });
      expect((await claim(other, 10)).jobs).toHaveLength(1);
      await expectCountersMatch(s);
    });

    it("claims a due retry (requeued) with the next attempt number", async () => {
      const s = seam();
      const j = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [j], now: NOW });
      await claim(s.backend, 1);
      await s.backend.jobs.finishMany({
        finishes: [{ id: j.id, attempt: 1, outcome: { kind: "retry", runAt: NOW + 100, error: "again" } }],
        now: NOW,
        retentionMs: DAY,
      });
      expect(await claim(s.backend, 1)).toEqual({ jobs: [], nextRunAt: NOW + 100 });
      const r = await claim(s.backend, 1, ["work"], "w2", NOW + 100);
      expect(r.jobs).toMatchObject([{ id: j.id, attempt: 2, runAt: NOW + 100 }]);
      expect(history(await s.job(j.id))).toEqual(["enqueued", "running", "requeued", "running"]);
      await expectCountersMatch(s);
    });
  });

  describe("limitsSet", () => {
    it("X9: upserts the types with a limit, deletes the rows of the others, returns what was stored before (in type order)", async () => {
      const s = seam();
      const first = await s.backend.jobs.limitsSet({
        jobTypes: ["a", "b"],
        limits: [
          { jobType: "a", concurrency: 2, rateLimit: null, groupConcurrency: null },
          { jobType: "b", concurrency: null, rateLimit: { max: 5, perMs: 1_000 }, groupConcurrency: 3 },
        ],
        now: NOW,
      });
      expect(first).toEqual({ previous: [] });
      const second = await s.backend.jobs.limitsSet({
        jobTypes: ["a", "b"],
        limits: [{ jobType: "b", concurrency: 1, rateLimit: null, groupConcurrency: null }],
        now: NOW,
      });
      expect(second.previous).toEqual([
        { jobType: "a", concurrency: 2, rateLimit: null, groupConcurrency: null },
        { jobType: "b", concurrency: null, rateLimit: { max: 5, perMs: 1_000 }, groupConcurrency: 3 },
      ]);
      // `a` was removed (no limit), `b` replaced; another namespace sees none of them.
      const third = await s.backend.jobs.limitsSet({ jobTypes: ["a", "b"], limits: [], now: NOW });
      expect(third.previous).toEqual([{ jobType: "b", concurrency: 1, rateLimit: null, groupConcurrency: null }]);
      expect((await s.backend.jobs.limitsSet({ jobTypes: ["a", "b"], limits: [], now: NOW })).previous).toEqual([]);
    });
  });

  describe("limitsUngroupedAdopt", () => {
    it("X9: moves the ready jobs stored with no group of group-limited types to their ungrouped group (''), which a group claim reads, and nothing else", async () => {
      const s = seam();
      await s.backend.jobs.limitsSet({
        jobTypes: ["tenant", "plain"],
        limits: [{ jobType: "tenant", concurrency: null, rateLimit: null, groupConcurrency: 2 }],
        now: NOW,
      });
      const stray = jobInsert({ jobType: "tenant" });
      const grouped = jobInsert({ jobType: "tenant", group: "g" });
      const other = jobInsert({ jobType: "plain" });
      const running = jobInsert({ jobType: "tenant" });
      await s.backend.jobs.insertMany({ jobs: [stray, grouped, other, running], now: NOW });
      // As an insert whose snapshot predates the stored limit wrote them (PostgreSQL), or one before any server stored it.
      await sql`UPDATE later_jobs SET group_key = NULL WHERE id IN (${stray.id}, ${running.id})`.execute(s.raw);
      await sql`UPDATE later_jobs SET stage = 'running' WHERE id = ${running.id}`.execute(s.raw);
      const claim = () => s.backend.jobs.claimReady({ owner: "w1", limit: 10, now: NOW, leaseExpiresAt: NOW + 30_000, jobTypes: [], limitedTypes: ["tenant"] });
      // A group claim reads the groups only: not the row stored with no group.
      expect((await claim()).jobs.map((j) => j.id)).toEqual([grouped.id]);
      expect(await s.backend.jobs.limitsUngroupedAdopt()).toEqual({ moved: 1 });
      expect(await s.backend.jobs.limitsUngroupedAdopt()).toEqual({ moved: 0 });
      const { rows } = await sql<{
        id: string;
        group_key: string | null;
      }>`SELECT id, group_key FROM later_jobs WHERE id IN (${stray.id}, ${grouped.id}, ${other.id}, ${running.id})`.execute(s.raw);
      expect(Object.fromEntries(rows.map((r) => [r.id, r.group_key]))).toEqual({
        [stray.id]: "",
        [grouped.id]: "g",
        [other.id]: null,
        [running.id]: null,
      });
      expect((await claim()).jobs.map((j) => j.id)).toEqual([stray.id]);
      // A namespace with no group limit: nothing moved (nothing read).
      await s.backend.jobs.limitsSet({ jobTypes: ["tenant", "plain"], limits: [], now: NOW });
      await sql`UPDATE later_jobs SET group_key = NULL, stage = 'enqueued' WHERE id = ${running.id}`.execute(s.raw);
      expect(await s.backend.jobs.limitsUngroupedAdopt()).toEqual({ moved: 0 });
    });
  });

  describe("claimReady with limitedTypes (X9)", () => {
    it("claims a limited type up to its free slots (concurrency less running, rate window), the plain types with the rest, and says when the window opens", async () => {
      const s = seam();
      await s.backend.jobs.limitsSet({
        jobTypes: ["conc", "rate", "gone"],
        limits: [
          { jobType: "conc", concurrency: 2, rateLimit: null, groupConcurrency: null },
          { jobType: "rate", concurrency: null, rateLimit: { max: 3, perMs: 1_000 }, groupConcurrency: null },
        ],
        now: NOW,
      });
      const jobs = [
        ...Array.from({ length: 4 }, () => jobInsert({ jobType: "conc" })),
        ...Array.from({ length: 5 }, () => jobInsert({ jobType: "rate" })),
        ...Array.from({ length: 2 }, () => jobInsert({ jobType: "gone" })),
        ...Array.from({ length: 2 }, () => jobInsert({ jobType: "work" })),
      ];
      await s.backend.jobs.insertMany({ jobs, now: NOW });
      const limited = (n: number, now = NOW) =>
        s.backend.jobs.claimReady({ owner: "w1", limit: n, now, leaseExpiresAt: now + 30_000, jobTypes: ["work"], limitedTypes: ["rate", "conc", "gone"] });
      const byType = (r: { jobs: { jobType: string }[] }) => {
        const counts: Record<string, number> = {};
        for (const j of r.jobs) counts[j.jobType] = (counts[j.jobType] ?? 0) + 1;
        return counts;
      };
      const first = await limited(20);
      // `gone` has no stored row: claimed unlimited by the limited step.
      expect(byType(first)).toEqual({ conc: 2, rate: 3, gone: 2, work: 2 });
      expect(first.nextRunAt).toBe(NOW + 1_000);
      await expectCountersMatch(s);
      // Nothing frees a slot before the window opens: none claimed, the same next-slot time.
      const blocked = await limited(20, NOW + 999);
      expect(blocked.jobs).toEqual([]);
      expect(blocked.nextRunAt).toBe(NOW + 1_000);
      // One conc job finishes and the window opens: one conc, the last two rate jobs.
      const conc = first.jobs.find((j) => j.jobType === "conc")!;
      await s.backend.jobs.finishMany({ finishes: [{ ...key(conc), outcome: { kind: "success" } }], now: NOW + 1_000, retentionMs: DAY });
      expect(byType(await limited(20, NOW + 1_000))).toEqual({ conc: 1, rate: 2 });
      await expectCountersMatch(s);
    });

    it("X9 groups: at most groupConcurrency running per group (the ungrouped one group), a backlog never ahead of another group's first jobs", async () => {
      const s = seam();
      await s.backend.jobs.limitsSet({ jobTypes: ["g"], limits: [{ jobType: "g", concurrency: null, rateLimit: null, groupConcurrency: 2 }], now: NOW });
      // A's backlog first (older ids), then B's two, two ungrouped, and a delayed group C.
      const jobs = [
        ...Array.from({ length: 30 }, () => jobInsert({ jobType: "g", group: "A" })),
        ...Array.from({ length: 2 }, () => jobInsert({ jobType: "g", group: "B" })),
        ...Array.from({ length: 2 }, () => jobInsert({ jobType: "g" })),
        jobInsert({ jobType: "g", group: "C", runAt: NOW + 5_000 }),
      ];
      await s.backend.jobs.insertMany({ jobs, now: NOW, retentionMs: DAY });
      const groupOf = new Map(jobs.map((j) => [j.id, j.group ?? "-"]));
      const claim = (now = NOW) => s.backend.jobs.claimReady({ owner: "w1", limit: 20, now, leaseExpiresAt: now + 30_000, jobTypes: [], limitedTypes: ["g"] });
      const byGroup = (r: { jobs: { id: string }[] }) => {
        const counts: Record<string, number> = {};
        for (const j of r.jobs) counts[groupOf.get(j.id)!] = (counts[groupOf.get(j.id)!] ?? 0) + 1;
        return counts;
      };
      const first = await claim();
      expect(byGroup(first)).toEqual({ A: 2, B: 2, "-": 2 });
      // C's only job is delayed: the claim says when it comes due.
      expect(first.nextRunAt).toBe(NOW + 5_000);
      await expectCountersMatch(s);
      // Every group at its limit: nothing more.
      expect((await claim()).jobs).toEqual([]);
      // One A finishes: one A more, nothing else.
      const a = first.jobs.find((j) => groupOf.get(j.id) === "A")!;
      await s.backend.jobs.finishMany({ finishes: [{ ...key(a), outcome: { kind: "success" } }], now: NOW + 1, retentionMs: DAY });
      expect(byGroup(await claim(NOW + 1))).toEqual({ A: 1 });
      // C comes due: its job is claimed though A still has a backlog.
      expect(byGroup(await claim(NOW + 5_000))).toEqual({ C: 1 });
      await expectCountersMatch(s);
    });

    it("X9 groups: a group whose jobs are not due yet gives none; a short claim's nextRunAt is the earliest of them", async () => {
      const s = seam();
      await s.backend.jobs.limitsSet({ jobTypes: ["g"], limits: [{ jobType: "g", concurrency: null, rateLimit: null, groupConcurrency: 2 }], now: NOW });
      const jobs = [
        jobInsert({ jobType: "g", group: "A" }),
        jobInsert({ jobType: "g", group: "B", runAt: NOW + 2_000 }),
        jobInsert({ jobType: "g", group: "C", runAt: NOW + 1_000 }),
        jobInsert({ jobType: "g", group: "C", runAt: NOW + 3_000 }),
      ];
      await s.backend.jobs.insertMany({ jobs, now: NOW, retentionMs: DAY });
      const groupOf = new Map(jobs.map((j) => [j.id, j.group!]));
      const claim = (now: number) =>
        s.backend.jobs.claimReady({ owner: "w1", limit: 10, now, leaseExpiresAt: now + 30_000, jobTypes: [], limitedTypes: ["g"] });
      const first = await claim(NOW);
      expect([first.jobs.map((j) => groupOf.get(j.id)), first.nextRunAt]).toEqual([["A"], NOW + 1_000]);
      const second = await claim(NOW + 1_000);
      expect([second.jobs.map((j) => groupOf.get(j.id)), second.nextRunAt]).toEqual([["C"], NOW + 2_000]);
      const third = await claim(NOW + 2_500);
      expect([third.jobs.map((j) => groupOf.get(j.id)), third.nextRunAt]).toEqual([["B"], NOW + 3_000]);
      await expectCountersMatch(s);
    });

    it("X9 groups: claims go round-robin over the groups from where the last claim stopped (the cursor), within the type's concurrency", async () => {
      const s = seam();
      await s.backend.jobs.limitsSet({ jobTypes: ["g"], limits: [{ jobType: "g", concurrency: 3, rateLimit: null, groupConcurrency: 1 }], now: NOW });
      const jobs = ["A", "B", "C", "D"].flatMap((group) => Array.from({ length: 3 }, () => jobInsert({ jobType: "g", group })));
      await s.backend.jobs.insertMany({ jobs, now: NOW, retentionMs: DAY });
      const groupOf = new Map(jobs.map((j) => [j.id, j.group!]));
      const served: string[][] = [];
      for (let i = 0; i < 3; i++) {
        const r = await s.backend.jobs.claimReady({ owner: "w1", limit: 10, now: NOW, leaseExpiresAt: NOW + 30_000, jobTypes: [], limitedTypes: ["g"] });
        served.push(r.jobs.map((j) => groupOf.get(j.id)!).sort());
        await s.backend.jobs.finishMany({ finishes: r.jobs.map((j) => ({ ...key(j), outcome: { kind: "success" as const } })), now: NOW, retentionMs: DAY });
      }
      // Three slots a claim, one job a group: A B C, then D A B (after C), then C D A.
      expect(served).toEqual([
        ["A", "B", "C"],
        ["A", "B", "D"],
        ["A", "C", "D"],
      ]);
      await expectCountersMatch(s);
    });

    it("X9 groups: a claim from the cursor on passes over the groups at their limit, though the groups after them would fill it", async () => {
      const s = seam();
      await s.backend.jobs.limitsSet({ jobTypes: ["g"], limits: [{ jobType: "g", concurrency: null, rateLimit: null, groupConcurrency: 1 }], now: NOW });
      const jobs = ["A", "B", "C", "D", "E"].flatMap((group) => [1, 2].map((n) => jobInsert({ jobType: "g", group, runAt: NOW - 10 + n })));
      await s.backend.jobs.insertMany({ jobs, now: NOW, retentionMs: DAY });
      const name = new Map(jobs.map((j, i) => [j.id, `${j.group}${(i % 2) + 1}`]));
      const claim = async (limit: number) =>
        (await s.backend.jobs.claimReady({ owner: "w1", limit, now: NOW, leaseExpiresAt: NOW + 30_000, jobTypes: [], limitedTypes: ["g"] })).jobs;
      const first = await claim(5);
      expect(first.map((j) => name.get(j.id)).sort()).toEqual(["A1", "B1", "C1", "D1", "E1"]); // the cursor is now E
      // A's and B's first jobs finish: their second ones run next (the walk wraps to A), the cursor moving to B.
      const done = (group: string) => first.find((j) => name.get(j.id) === `${group}1`)!;
      const finish = (groups: string[]) =>
        s.backend.jobs.finishMany({ finishes: groups.map((g) => ({ ...key(done(g)), outcome: { kind: "success" as const } })), now: NOW, retentionMs: DAY });
      await finish(["A", "B"]);
      expect((await claim(2)).map((j) => name.get(j.id)).sort()).toEqual(["A2", "B2"]);
      // D finishes. After B come C (at its limit), D (free), E (at its limit), then A and B (at their limit):
      // D2 alone, never C2 or E2, though C and E have a job ready and would fill the claim of two.
      await finish(["D"]);
      expect((await claim(2)).map((j) => name.get(j.id))).toEqual(["D2"]);
      await expectCountersMatch(s);
    });

    it("X9 groups: a claim that one job per group fills takes each next group's oldest job from the cursor on, wrapping around; a group whose oldest job waits behind its unique key gives its next one", async () => {
      const s = seam();
      await s.backend.jobs.limitsSet({ jobTypes: ["g"], limits: [{ jobType: "g", concurrency: null, rateLimit: null, groupConcurrency: 5 }], now: NOW });
      const claim = async (limit: number) =>
        (await s.backend.jobs.claimReady({ owner: "w1", limit, now: NOW, leaseExpiresAt: NOW + 30_000, jobTypes: [], limitedTypes: ["g"] })).jobs.map(
          (j) => j.id,
        );
      const unique = async (runAt: number) =>
        (
          await s.backend.jobs.insertUniqueMany({
            inserts: [{ job: jobInsert({ jobType: "g", group: "H", runAt }), uniqueKey: "k", uniqueMode: "afterActive", now: NOW }],
          })
        ).results[0]!;
      const u1 = await unique(NOW - 3_000);
      expect(await claim(1)).toEqual([u1.id]); // the cursor is now H
      // U2 waits behind the running U1 (its key's slot); N is H's next job; A to F two each, the first older.
      const u2 = await unique(NOW - 2_000);
      const n = jobInsert({ jobType: "g", group: "H", runAt: NOW - 1_000 });
      const groups = ["A", "B", "C", "D", "E", "F"];
      const firsts = groups.map((group) => jobInsert({ jobType: "g", group, runAt: NOW - 500 }));
      const seconds = groups.map((group) => jobInsert({ jobType: "g", group, runAt: NOW - 400 }));
      await s.backend.jobs.insertMany({ jobs: [n, ...seconds, ...firsts], now: NOW, retentionMs: DAY });
      const name = new Map<string, string>([
        [u2.id, "U2"],
        [n.id, "N"],
        ...firsts.map((j) => [j.id, `${j.group}1`] as const),
        ...seconds.map((j) => [j.id, `${j.group}2`] as const),
      ]);
      const names = (ids: string[]) => ids.map((id) => name.get(id) ?? id).sort();
      // From after H, wrapping to the first group: A B C D, one each, each group's oldest.
      expect(names(await claim(4))).toEqual(["A1", "B1", "C1", "D1"]);
      // Then E F H A: H's oldest job is U2, which waits, so H gives N.
      expect(names(await claim(4))).toEqual(["A2", "E1", "F1", "N"]);
      expect((await s.job(u2.id)).stage).toBe("enqueued");
      await expectCountersMatch(s);
    });
  });

  describe("finishMany", () => {
    it("X9: limited claims racing from three backends of one database take the free slots and no more (concurrency alone, with a rate limit, with a group limit)", async () => {
      const s = seam();
      const others = [await s.other(s.backend.namespace), await s.other(s.backend.namespace)];
      const backends = [s.backend, ...others];
      await s.backend.jobs.limitsSet({
        jobTypes: ["conc", "rated"],
        limits: [
          { jobType: "conc", concurrency: 7, rateLimit: null, groupConcurrency: null },
          { jobType: "rated", concurrency: 4, rateLimit: { max: 100, perMs: 60_000 }, groupConcurrency: null },
          { jobType: "grp", concurrency: 5, rateLimit: null, groupConcurrency: 2 },
        ],
        now: NOW,
      });
      const jobs = [
        ...Array.from({ length: 60 }, () => jobInsert({ jobType: "conc" })),
        ...Array.from({ length: 60 }, () => jobInsert({ jobType: "rated" })),
        ...Array.from({ length: 60 }, (_, i) => jobInsert({ jobType: "grp", group: `G${i % 4}` })),
      ];
      const groupOf = new Map(jobs.map((j) => [j.id, j.group]));
      await s.backend.jobs.insertMany({ jobs, now: NOW });
      // Rounds of 12 claims at once (4 per backend), each wanting 3; between rounds some running jobs finish.
      let running: { jobType: string; id: string; attempt: number }[] = [];
      for (let round = 0; round < 4; round++) {
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            backends[i % 3]!.jobs.claimReady({
              owner: `w${i}`,
              limit: 3,
              now: NOW,
              leaseExpiresAt: LEASE,
              jobTypes: [],
              limitedTypes: ["conc", "grp", "rated"],
            }),
          ),
        );
        running.push(...results.flatMap((r) => r.jobs));
        expect(running.filter((j) => j.jobType === "conc").length, `round ${round}`).toBe(7);
        expect(running.filter((j) => j.jobType === "rated").length, `round ${round}`).toBe(4);
        const grouped = running.filter((j) => j.jobType === "grp");
        expect(grouped.length, `round ${round}`).toBe(5);
        for (const g of ["G0", "G1", "G2", "G3"]) expect(grouped.filter((j) => groupOf.get(j.id) === g).length, `round ${round} ${g}`).toBeLessThanOrEqual(2);
        const done = [
          ...running.filter((j) => j.jobType === "conc").slice(0, 3),
          ...running.filter((j) => j.jobType === "rated").slice(0, 2),
          ...grouped.slice(0, 2),
        ];
        await s.backend.jobs.finishMany({ finishes: done.map((j) => ({ ...key(j), outcome: { kind: "success" } })), now: NOW, retentionMs: DAY });
        running = running.filter((j) => !done.includes(j));
      }
      await expectCountersMatch(s);
    });

    it("X9: wakeOthers wakes the namespace's other backends after the write (PostgreSQL: a NOTIFY; SQLite: the commit)", async () => {
      const s = seam();
      const other = await s.other(s.backend.namespace);
      const job = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [job], now: NOW });
      const [claimed] = (await claim(s.backend, 1)).jobs;
      let wakes = 0;
      const unsubscribe = other.wakeSubscribe(() => void wakes++);
      try {
        const result = await s.backend.jobs.finishMany({
          finishes: [{ ...key(claimed!), outcome: { kind: "success" } }],
          now: NOW,
          retentionMs: DAY,
          wakeOthers: true,
        });
        expect(result.applied).toEqual([key(claimed!)]);
        const deadline = Date.now() + 10_000;
        while (wakes === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        expect(wakes).toBeGreaterThan(0);
      } finally {
        unsubscribe();
      }
    });

    it("stores successes: expiry at now + retention, lease cleared; waiting continuations released (enqueued, or delayed while not due)", async () => {
      const s = seam();
      const parent = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [parent], now: NOW });
      const kids = [jobInsert({ jobType: "kid", parentId: parent.id }), jobInsert({ jobType: "kid", parentId: parent.id, runAt: NOW + 9_000 })] as const;
      const grandchild = jobInsert({ jobType: "kid", parentId: kids[0].id });
      await s.backend.jobs.insertMany({ jobs: [...kids], now: NOW });
      await s.backend.jobs.insertMany({ jobs: [grandchild], now: NOW });
      const [c] = (await claim(s.backend, 1)).jobs;
      const r = await s.backend.jobs.finishMany({ finishes: [{ ...key(c!), outcome: { kind: "success" } }], now: NOW + 10, retentionMs: 1_000 });
      expect(r).toEqual({ applied: [key(c!)], released: 2 });
      expect(await s.job(parent.id)).toMatchObject({ stage: "success", expiresAt: NOW + 1_010, leaseOwner: null, leaseExpiresAt: null });
      expect(history(await s.job(parent.id))).toEqual(["enqueued", "running", "success"]);
      expect(await s.job(kids[0].id)).toMatchObject({ stage: "enqueued", runAt: NOW + 10 });
      expect(await s.job(kids[1].id)).toMatchObject({ stage: "delayed", runAt: NOW + 9_000 });
      expect((await s.job(grandchild.id)).stage).toBe("waiting");
      await expectCountersMatch(s);
    });

    it("stores a retry (requeued at its runAt, the error kept) and a final failure, which fails the waiting continuations down the chain", async () => {
      const s = seam();
      const retried = jobInsert();
      const failed = jobInsert();
      const permanent = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [retried, failed, permanent], now: NOW });
      const child = jobInsert({ parentId: failed.id });
      const grandchild = jobInsert({ parentId: child.id });
      await s.backend.jobs.insertMany({ jobs: [child], now: NOW });
      await s.backend.jobs.insertMany({ jobs: [grandchild], now: NOW });
      await claim(s.backend, 3);
      const r = await s.backend.jobs.finishMany({
        finishes: [
          { id: retried.id, attempt: 1, outcome: { kind: "retry", runAt: NOW + 500, error: "try again" } },
          { id: failed.id, attempt: 1, outcome: { kind: "fail", error: "broken" } },
          { id: permanent.id, attempt: 1, outcome: { kind: "fail", error: "never", permanent: true } },
        ],
        now: NOW + 1,
        retentionMs: 1_000,
      });
      expect(r.applied.map((k) => k.id).sort()).toEqual([retried.id, failed.id, permanent.id].sort());
      expect(r.released).toBe(0);
      expect(await s.job(retried.id)).toMatchObject({ stage: "requeued", runAt: NOW + 500, lastError: "try again", expiresAt: null, leaseOwner: null });
      expect(await s.job(failed.id)).toMatchObject({ stage: "failed", lastError: "broken", expiresAt: NOW + 1_001 });
      // J3/J1: a permanent failure's entry is noted.
      expect(history(await s.job(permanent.id))).toEqual(["enqueued", "running", "failed:permanent"]);
      expect(history(await s.job(failed.id))).toEqual(["enqueued", "running", "failed"]);
      expect(await s.job(child.id)).toMatchObject({ stage: "failed", lastError: `parent job ${failed.id} failed: broken`, expiresAt: NOW + 1_001 });
      expect(await s.job(grandchild.id)).toMatchObject({ stage: "failed", lastError: `parent job ${child.id} failed: parent job ${failed.id} failed: broken` });
      await expectCountersMatch(s);
    });

    it("X5: successes count down fan-in children (two parents of one child in one batch, then the last in another) and release them at 0; a final failure fails them", async () => {
      const s = seam();
      const parents = [jobInsert({ jobType: "parent" }), jobInsert({ jobType: "parent" }), jobInsert({ jobType: "parent" })];
      const doomedParent = jobInsert({ jobType: "parent" });
      await s.backend.jobs.insertMany({ jobs: [...parents, doomedParent], now: NOW });
      const ids = parents.map((p) => p.id).sort();
      const child = jobInsert({ parentIds: ids });
      const doomed = jobInsert({ parentIds: [ids[0]!, doomedParent.id].sort() });
      const grandchild = jobInsert({ parentId: doomed.id });
      await s.backend.jobs.insertMany({ jobs: [child, doomed], now: NOW });
      await s.backend.jobs.insertMany({ jobs: [grandchild], now: NOW });
      const claimed = await claim(s.backend, 4, ["parent"]);
      expect(claimed.jobs).toHaveLength(4);
      const success = (id: string) => ({ id, attempt: 1, outcome: { kind: "success" as const } });
      const first = await s.backend.jobs.finishMany({ finishes: [success(parents[0]!.id), success(parents[1]!.id)], now: NOW + 1, retentionMs: DAY });
      expect(first.released).toBe(0);
      expect((await s.job(child.id)).stage).toBe("waiting");
      await expectCountersMatch(s);
      const last = await s.backend.jobs.finishMany({ finishes: [success(parents[2]!.id)], now: NOW + 2, retentionMs: DAY });
      expect(last.released).toBe(1);
      expect((await s.job(child.id)).stages.map((x) => x.stage)).toEqual(["waiting", "enqueued"]);
      // Asked again (a finish that is no longer running changes nothing): still released once.
      await s.backend.jobs.finishMany({ finishes: [success(parents[2]!.id)], now: NOW + 3, retentionMs: DAY });
      expect((await s.job(child.id)).stages).toHaveLength(2);
      await s.backend.jobs.finishMany({
        finishes: [{ id: doomedParent.id, attempt: 1, outcome: { kind: "fail", error: "boom" } }],
        now: NOW + 4,
        retentionMs: DAY,
      });
      expect(await s.job(doomed.id)).toMatchObject({ stage: "failed", lastError: `parent job ${doomedParent.id} failed: boom` });
      expect((await s.job(grandchild.id)).stage).toBe("failed");
      await expectCountersMatch(s);
    });

    it("J11: a finish's own retentionMs sets its expiry; a success with 0 is deleted by its write (counted, continuations released, a stale one untouched)", async () => {
      const s = seam();
      const jobs = [jobInsert(), jobInsert(), jobInsert(), jobInsert(), jobInsert()];
      await s.backend.jobs.insertMany({ jobs, now: NOW });
      const kid = jobInsert({ jobType: "kid", parentId: jobs[0]!.id });
      const fanIn = jobInsert({ jobType: "kid", parentIds: [jobs[0]!.id, jobs[1]!.id] });
      await s.backend.jobs.insertMany({ jobs: [kid, fanIn], now: NOW });
      await claim(s.backend, 5);
      const [gone, alsoGone, short, failed, plain] = jobs.map((j) => j.id) as [string, string, string, string, string];
      const r = await s.backend.jobs.finishMany({
        finishes: [
          { id: gone, attempt: 1, outcome: { kind: "success", result: "1" }, retentionMs: 0 },
          { id: alsoGone, attempt: 1, outcome: { kind: "success" }, retentionMs: 0 },
          { id: short, attempt: 1, outcome: { kind: "success" }, retentionMs: 500 },
          { id: failed, attempt: 1, outcome: { kind: "fail", error: "e" }, retentionMs: 7 * DAY },
          { id: plain, attempt: 7, outcome: { kind: "success" }, retentionMs: 0 }, // a stale claim: nothing happens
        ],
        now: NOW + 10,
        retentionMs: DAY,
      });
      expect(r.applied.map((c) => c.id).sort()).toEqual([gone, alsoGone, short, failed].sort());
      expect(r.released).toBe(2);
      expect(await s.backend.inspect.jobGet({ id: gone })).toBeNull();
      expect(await s.backend.inspect.jobGet({ id: alsoGone })).toBeNull();
      expect(await s.job(short)).toMatchObject({ stage: "success", expiresAt: NOW + 510 });
      expect(await s.job(failed)).toMatchObject({ stage: "failed", expiresAt: NOW + 10 + 7 * DAY });
      expect(await s.job(plain)).toMatchObject({ stage: "running", attempt: 1 });
      expect((await s.job(kid.id)).stage).toBe("enqueued");
      expect((await s.job(fanIn.id)).stage).toBe("enqueued");
      await expectCountersMatch(s);
    });

    it("J8: rejects finishes of stale attempts (wrong attempt, a job no longer running) and applies the rest of the batch", async () => {
      const s = seam();
      const a = jobInsert();
      const b = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [a, b], now: NOW });
      await claim(s.backend, 2);
      // a: retried, then claimed again elsewhere (attempt 2): its attempt-1 claim is stale.
      await s.backend.jobs.finishMany({
        finishes: [{ id: a.id, attempt: 1, outcome: { kind: "retry", runAt: NOW, error: "e" } }],
        now: NOW,
        retentionMs: DAY,
      });
      await claim(s.backend, 1, ["work"], "w2"); // a, attempt 2
      for (const outcome of [{ kind: "success" }, { kind: "fail", error: "late" }, { kind: "retry", runAt: NOW, error: "late" }] as const) {
        const r = await s.backend.jobs.finishMany({
          finishes: [
            { id: a.id, attempt: 1, outcome },
            { id: b.id, attempt: 7, outcome },
          ],
          now: NOW,
          retentionMs: DAY,
        });
        expect(r).toEqual({ applied: [], released: 0 });
      }
      expect(await s.job(a.id)).toMatchObject({ stage: "running", attempt: 2, leaseOwner: "w2" });
      expect(await s.job(b.id)).toMatchObject({ stage: "running", attempt: 1 });
      const mixed = await s.backend.jobs.finishMany({
        finishes: [
          { id: a.id, attempt: 1, outcome: { kind: "success" } },
          { id: b.id, attempt: 1, outcome: { kind: "success" } },
        ],
        now: NOW,
        retentionMs: DAY,
      });
      expect(mixed.applied).toEqual([{ id: b.id, attempt: 1 }]);
      // A finished job is not finished again.
      expect(
        (await s.backend.jobs.finishMany({ finishes: [{ id: b.id, attempt: 1, outcome: { kind: "success" } }], now: NOW, retentionMs: DAY })).applied,
      ).toEqual([]);
      expect(await s.backend.jobs.finishMany({ finishes: [], now: NOW, retentionMs: DAY })).toEqual({ applied: [], released: 0 });
      await expectCountersMatch(s);
    });

    it("J7: with leaseExpiredBefore (the stuck-job rescue) finishes only claims whose lease expired before it", async () => {
      const s = seam();
      const expired = jobInsert();
      const live = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [expired, live], now: NOW });
      await claim(s.backend, 1, ["work"], "dead", NOW, NOW + 100);
      await claim(s.backend, 1, ["work"], "alive", NOW, NOW + 60_000);
      for (const outcome of [{ kind: "success" }, { kind: "fail", error: "lease expired" }] as const) {
        const r = await s.backend.jobs.finishMany({
          finishes: [{ id: live.id, attempt: 1, outcome }],
          now: NOW + 200,
          retentionMs: DAY,
          leaseExpiredBefore: NOW + 200,
        });
        expect(r.applied).toEqual([]);
      }
      const r = await s.backend.jobs.finishMany({
        finishes: [
          { id: live.id, attempt: 1, outcome: { kind: "retry", runAt: NOW + 1_000, error: "lease expired" } },
          { id: expired.id, attempt: 1, outcome: { kind: "retry", runAt: NOW + 1_000, error: "lease expired" } },
        ],
        now: NOW + 200,
        retentionMs: DAY,
        leaseExpiredBefore: NOW + 200,
      });
      expect(r.applied).toEqual([{ id: expired.id, attempt: 1 }]);
      expect((await s.job(expired.id)).stage).toBe("requeued");
      expect((await s.job(live.id)).stage).toBe("running");
      await expectCountersMatch(s);
    });
  });

  describe("releaseMany", () => {
    it("J9: puts claims back to their stage before the claim, attempt undone, lease cleared, noted shutdown when asked; stale claims untouched", async () => {
      const s = seam();
      const fresh = jobInsert();
      const retried = jobInsert();
      const gone = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [fresh, retried, gone], now: NOW });
      await claim(s.backend, 3);
      await s.backend.jobs.finishMany({
        finishes: [
          { id: retried.id, attempt: 1, outcome: { kind: "retry", runAt: NOW, error: "e" } },
          { id: gone.id, attempt: 1, outcome: { kind: "success" } },
        ],
        now: NOW,
        retentionMs: DAY,
      });
      await claim(s.backend, 1); // retried, attempt 2
      const r = await s.backend.jobs.releaseMany({
        claims: [
          { id: fresh.id, attempt: 1 },
          { id: retried.id, attempt: 2 },
          { id: gone.id, attempt: 1 },
          { id: fresh.id, attempt: 5 },
        ],
        now: NOW + 5,
        reason: "shutdown",
      });
      expect(r.released.map(key).sort((x, y) => (x.id < y.id ? -1 : 1))).toEqual(
        [
          { id: fresh.id, attempt: 1 },
          { id: retried.id, attempt: 2 },
        ].sort((x, y) => (x.id < y.id ? -1 : 1)),
      );
      expect(await s.job(fresh.id)).toMatchObject({ stage: "enqueued", attempt: 0, leaseOwner: null, leaseExpiresAt: null });
      expect(history(await s.job(fresh.id))).toEqual(["enqueued", "running", "enqueued:shutdown"]);
      expect(await s.job(retried.id)).toMatchObject({ stage: "requeued", attempt: 1 });
      expect((await s.job(gone.id)).stage).toBe("success");
      await expectCountersMatch(s);
      // Ready now: claimed again with the same attempt numbers as before.
      const again = await claim(s.backend, 5, ["work"], "w2", NOW + 5);
      expect(again.jobs.map(key).sort((x, y) => (x.id < y.id ? -1 : 1))).toEqual(
        [
          { id: fresh.id, attempt: 1 },
          { id: retried.id, attempt: 2 },
        ].sort((x, y) => (x.id < y.id ? -1 : 1)),
      );
      // Without a reason the entry is plain.
      await s.backend.jobs.releaseMany({ claims: [{ id: fresh.id, attempt: 1 }], now: NOW + 6 });
      expect(history(await s.job(fresh.id))).toEqual(["enqueued", "running", "enqueued:shutdown", "running", "enqueued"]);
      expect(await s.backend.jobs.releaseMany({ claims: [], now: NOW })).toEqual({ released: [] });
      await expectCountersMatch(s);
    });
  });

  describe("leaseRenew", () => {
    it("J7: extends the leases of claims still held by the owner; lost leases (rescued and taken elsewhere, finished, another owner's) are not renewed", async () => {
      const s = seam();
      const held = jobInsert();
      const lost = jobInsert();
      const done = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [held, lost, done], now: NOW });
      await claim(s.backend, 3, ["work"], "w1", NOW, NOW + 100);
      // lost: its lease expired, the rescue retried it and another server took it.
      await s.backend.jobs.finishMany({
        finishes: [{ id: lost.id, attempt: 1, outcome: { kind: "retry", runAt: NOW, error: "stuck" } }],
        now: NOW + 200,
        retentionMs: DAY,
        leaseExpiredBefore: NOW + 200,
      });
      await claim(s.backend, 1, ["work"], "w2", NOW + 200, NOW + 10_000);
      await s.backend.jobs.finishMany({ finishes: [{ id: done.id, attempt: 1, outcome: { kind: "success" } }], now: NOW + 50, retentionMs: DAY });
      const claims = [
        { id: held.id, attempt: 1 },
        { id: lost.id, attempt: 1 },
        { id: done.id, attempt: 1 },
      ];
      const r = await s.backend.jobs.leaseRenew({ owner: "w1", claims, leaseExpiresAt: NOW + 50_000 });
      expect(r.renewed).toEqual([{ id: held.id, attempt: 1 }]);
      expect((await s.job(held.id)).leaseExpiresAt).toBe(NOW + 50_000);
      expect(await s.job(lost.id)).toMatchObject({ leaseOwner: "w2", leaseExpiresAt: NOW + 10_000 });
      expect((await s.backend.jobs.leaseRenew({ owner: "w2", claims: [{ id: held.id, attempt: 1 }], leaseExpiresAt: NOW + 99_000 })).renewed).toEqual([]);
      expect((await s.job(held.id)).leaseExpiresAt).toBe(NOW + 50_000);
      expect(await s.backend.jobs.leaseRenew({ owner: "w1", claims: [], leaseExpiresAt: NOW })).toEqual({ renewed: [] });
      await expectCountersMatch(s);
    });
  });

  describe("progressSet", () => {
    it("X8: stores progress only under the running claim (owner and attempt); false otherwise; no stage changes", async () => {
      const s = seam();
      const j = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [j], now: NOW });
      expect(await s.backend.jobs.progressSet({ id: j.id, attempt: 0, owner: "w1", progress: '{"p":0}' })).toBe(false);
      await claim(s.backend, 1);
      expect(await s.backend.jobs.progressSet({ id: j.id, attempt: 1, owner: "w1", progress: '{"p":1}' })).toBe(true);
      expect(await s.backend.jobs.progressSet({ id: j.id, attempt: 1, owner: "w2", progress: '{"p":2}' })).toBe(false);
      expect(await s.backend.jobs.progressSet({ id: j.id, attempt: 2, owner: "w1", progress: '{"p":3}' })).toBe(false);
      expect(await s.job(j.id)).toMatchObject({ stage: "running", progress: '{"p":1}' });
      await s.backend.jobs.finishMany({ finishes: [{ id: j.id, attempt: 1, outcome: { kind: "success" } }], now: NOW, retentionMs: DAY });
      expect(await s.backend.jobs.progressSet({ id: j.id, attempt: 1, owner: "w1", progress: '{"p":4}' })).toBe(false);
      expect((await s.job(j.id)).progress).toBe('{"p":1}'); // kept after the job ends
      await expectCountersMatch(s);
    });
  });

  describe("listStuck", () => {
    it("J7: lists running jobs whose lease expired before the time, most overdue first, at most limit; the rescue then retries or fails them", async () => {
      const s = seam();
      const jobs = [jobInsert({ retryPolicy: '{"kind":"x"}' }), jobInsert({ jobType: "other" }), jobInsert(), jobInsert()];
      await s.backend.jobs.insertMany({ jobs, now: NOW });
      await claim(s.backend, 1, ["work"], "w", NOW, NOW + 300);
      await claim(s.backend, 1, ["other"], "w", NOW, NOW + 100);
      await claim(s.backend, 1, ["work"], "w", NOW, NOW + 200);
      await claim(s.backend, 1, ["work"], "w", NOW, NOW + 10_000); // still leased
      // A partitioned head with an expired lease is not a stuck job (its partition lease recovers it), nor is another namespace's.
      await s.backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 1 }], now: NOW });
      await s.backend.jobs.insertMany({ jobs: [jobInsert({ topic: "t", partition: 0 })], now: NOW });
      await s.backend.partitions.headClaim({
        owner: "w",
        partitions: [{ topic: "t", partition: 0 }],
        limit: 1,
        now: NOW,
        leaseExpiresAt: NOW + 1,
        jobTypes: ["work"],
      });
      const other = await s.other(`${s.backend.namespace}-other`);
      await other.jobs.insertMany({ jobs: [jobInsert()], now: NOW });
      await other.jobs.claimReady({ owner: "w", limit: 1, now: NOW, leaseExpiresAt: NOW + 1, jobTypes: ["work"] });

      const stuck = await s.backend.jobs.listStuck({ leaseExpiredBefore: NOW + 1_000, limit: 10 });
      expect(stuck).toEqual([
        { id: jobs[1]!.id, attempt: 1, jobType: "other", retryPolicy: null },
        { id: jobs[2]!.id, attempt: 1, jobType: "work", retryPolicy: null },
        { id: jobs[0]!.id, attempt: 1, jobType: "work", retryPolicy: '{"kind":"x"}' },
      ]);
      expect(await s.backend.jobs.listStuck({ leaseExpiredBefore: NOW + 1_000, limit: 1 })).toHaveLength(1);
      expect(await s.backend.jobs.listStuck({ leaseExpiredBefore: NOW + 150, limit: 10 })).toEqual([stuck[0]]);
      // The rescue: one retried, two failed for good, fenced by the lease guard.
      const r = await s.backend.jobs.finishMany({
        finishes: stuck.map((k, i) => ({
          id: k.id,
          attempt: k.attempt,
          outcome: i === 0 ? { kind: "retry", runAt: NOW + 2_000, error: "stuck" } : { kind: "fail", error: "stuck" },
        })),
        now: NOW + 1_000,
        retentionMs: DAY,
        leaseExpiredBefore: NOW + 1_000,
      });
      expect(r.applied).toHaveLength(3);
      expect(await s.backend.jobs.listStuck({ leaseExpiredBefore: NOW + 1_000, limit: 10 })).toEqual([]);
      await expectCountersMatch(s);
    });
  });

  describe("countReady", () => {
    it("J14: counts the due claimable jobs of the given types: not running, waiting, not-yet-due, partitioned, other types or namespaces", async () => {
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 1 }], now: NOW });
      const parent = jobInsert({ jobType: "parent", runAt: NOW - 20 });
      const retried = jobInsert({ runAt: NOW - 10 });
      const plain = jobInsert();
      await s.backend.jobs.insertMany({
        jobs: [
          parent,
          retried,
          plain,
          jobInsert({ runAt: NOW + 1_000 }),
          jobInsert({ jobType: "other" }),
          jobInsert({ jobType: "third" }),
          jobInsert({ topic: "t", partition: 0 }),
        ],
        now: NOW,
      });
      await s.backend.jobs.insertMany({ jobs: [jobInsert({ parentId: parent.id })], now: NOW });
      expect(await s.backend.jobs.countReady({ now: NOW, jobTypes: ["work"] })).toBe(2);
      await claim(s.backend, 1); // retried
      await s.backend.jobs.finishMany({
        finishes: [{ id: retried.id, attempt: 1, outcome: { kind: "retry", runAt: NOW + 50, error: "e" } }],
        now: NOW,
        retentionMs: DAY,
      });
      expect(await s.backend.jobs.countReady({ now: NOW, jobTypes: ["work"] })).toBe(1); // plain; the retry is not due
      await claim(s.backend, 1); // plain: running
      expect(await s.backend.jobs.countReady({ now: NOW, jobTypes: ["work"] })).toBe(0);
      expect(await s.backend.jobs.countReady({ now: NOW + 50, jobTypes: ["work"] })).toBe(1);
      expect(await s.backend.jobs.countReady({ now: NOW + 1_000, jobTypes: ["work", "other"] })).toBe(3);
      expect(await s.backend.jobs.countReady({ now: NOW + 1_000, jobTypes: [] })).toBe(0);
      const other = await s.other(`${s.backend.namespace}-other`);
      expect(await other.jobs.countReady({ now: NOW + 1_000, jobTypes: ["work", "other", "third"] })).toBe(0);
      await expectCountersMatch(s);
    });
  });

  describe("deleteExpired", () => {
    it("J11: deletes up to limit rows whose expiry passed, returns how many; unexpired and unfinished rows stay; counters follow", async () => {
      const s = seam();
      const jobs = Array.from({ length: 5 }, () => jobInsert());
      await s.backend.jobs.insertMany({ jobs, now: NOW });
      const claimed = (await claim(s.backend, 4)).jobs;
      await s.backend.jobs.finishMany({
        finishes: claimed.slice(0, 3).map((c, i) => ({ ...key(c), outcome: i < 2 ? { kind: "success" } : { kind: "fail", error: "x" } })),
        now: NOW,
        retentionMs: 1_000,
      });
      await s.backend.jobs.finishMany({ finishes: [{ ...key(claimed[3]!), outcome: { kind: "success" } }], now: NOW, retentionMs: DAY });
      expect(await s.backend.jobs.deleteExpired({ now: NOW + 1_000, limit: 10 })).toBe(0); // expires_at < now, strictly
      expect(await s.backend.jobs.deleteExpired({ now: NOW + 1_001, limit: 2 })).toBe(2);
      await expectCountersMatch(s);
      expect(await s.backend.jobs.deleteExpired({ now: NOW + 1_001, limit: 10 })).toBe(1);
      expect(await s.backend.jobs.deleteExpired({ now: NOW + 1_001, limit: 10 })).toBe(0);
      expect(Object.values(await storedStages(s)).sort()).toEqual(["enqueued", "success"]);
      await expectCountersMatch(s);
    });
  });

  describe("readOutcomes", () => {
    it("X6: stage, result and last error of the given ids; unknown ids left out; a success's result stored by finishMany (a plain success, a batch with a failure, a retry)", async () => {
      const s = seam();
      const [a, b, c, d] = Array.from({ length: 4 }, () => jobInsert());
      await s.backend.jobs.insertMany({ jobs: [a!, b!, c!, d!], now: NOW });
      expect(await s.backend.jobs.readOutcomes({ ids: [] })).toEqual([]);
      const claimed = (await claim(s.backend, 4)).jobs;
      expect(claimed).toHaveLength(4);
      // Successes only (the hot statement): one with a result, one without.
      await s.backend.jobs.finishMany({
        finishes: [
          { id: a!.id, attempt: 1, outcome: { kind: "success", result: '{"n":1}' } },
          { id: b!.id, attempt: 1, outcome: { kind: "success" } },
        ],
        now: NOW,
        retentionMs: DAY,
      });
      // The general statement: a success with a result beside a failure and a retry.
      await s.backend.jobs.finishMany({
        finishes: [
          { id: c!.id, attempt: 1, outcome: { kind: "success", result: '"text"' } },
          { id: d!.id, attempt: 1, outcome: { kind: "fail", error: "boom", permanent: true } },
        ],
        now: NOW,
        retentionMs: DAY,
      });
      const rows = await s.backend.jobs.readOutcomes({ ids: [a!.id, b!.id, c!.id, d!.id, "01JNOSUCHJOB0000000000000"], markAwaited: true });
      const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
      expect(Object.keys(byId).sort()).toEqual([a!.id, b!.id, c!.id, d!.id].sort());
      expect(byId[a!.id]).toEqual({ id: a!.id, stage: "success", result: '{"n":1}', error: null });
      expect(byId[b!.id]).toEqual({ id: b!.id, stage: "success", result: null, error: null });
      expect(byId[c!.id]).toEqual({ id: c!.id, stage: "success", result: '"text"', error: null });
      expect(byId[d!.id]).toEqual({ id: d!.id, stage: "failed", result: null, error: "boom" });
      expect((await s.job(a!.id)).result).toBe('{"n":1}');
      // Marking changes no stage, and a plain read returns the same.
      expect(await s.backend.jobs.readOutcomes({ ids: [a!.id] })).toEqual([byId[a!.id]]);
      await expectCountersMatch(s);
    });

    it("X6: an unfinished job reads as its stage, with no result", async () => {
      const s = seam();
      const j = jobInsert();
      await s.backend.jobs.insertMany({ jobs: [j], now: NOW });
      expect(await s.backend.jobs.readOutcomes({ ids: [j.id], markAwaited: true })).toEqual([{ id: j.id, stage: "enqueued", result: null, error: null }]);
      await claim(s.backend, 1);
      await s.backend.jobs.finishMany({
        finishes: [{ id: j.id, attempt: 1, outcome: { kind: "retry", runAt: NOW + 5, error: "again" } }],
        now: NOW,
        retentionMs: DAY,
      });
      expect(await s.backend.jobs.readOutcomes({ ids: [j.id] })).toEqual([{ id: j.id, stage: "requeued", result: null, error: "again" }]);
      await expectCountersMatch(s);
    });
  });
});
