/**
 * The seam suite of `backend.control` (packages/runtime/src/backend/job-control-store.ts,
 * docs/semantics.md X7): retry and delete from outside, by id and by filter in
 * batches, and the count of a filter, called directly on each backend, with
 * the stage counters and partition depths checked against a GROUP BY after
 * every change (D7). See seam-factory.ts; the coverage guard
 * (seam-coverage.test.ts) fails when a method of the store has no test here.
 */
import { describe, expect, it } from "vitest";
import { BACKENDS, expectCountersMatch, history, jobInsert, NOW, type Seam, storedStages, useSeam } from "./seam-factory.js";

const DAY = 86_400_000;

/**
 * Stores one job per entry of `outcomes` (type `jobType`) and runs each to
 * that end: `success`, `failed`, or left `enqueued`. Returns the ids, in
 * order (ids increase).
 */
async function jobsEndingIn(s: Seam, outcomes: ("success" | "failed" | "enqueued")[], jobType = "work"): Promise<string[]> {
  // The jobs to run are due earlier than the ones left enqueued, so one claim takes exactly them.
  const jobs = outcomes.map((o, i) => jobInsert({ jobType, runAt: o === "enqueued" ? NOW : NOW - 1_000 + i }));
  await s.backend.jobs.insertMany({ jobs, now: NOW });
  const toRun = jobs.filter((_, i) => outcomes[i] !== "enqueued");
  const { jobs: claimed } = await s.backend.jobs.claimReady({ owner: "w", limit: toRun.length, now: NOW, leaseExpiresAt: NOW + 1_000, jobTypes: [jobType] });
  expect(claimed).toHaveLength(toRun.length);
  await s.backend.jobs.finishMany({
    finishes: claimed.map((c) => {
      const failed = outcomes[jobs.findIndex((j) => j.id === c.id)] === "failed";
      return { id: c.id, attempt: c.attempt, outcome: failed ? { kind: "fail", error: `error of ${c.id}` } : { kind: "success" } };
    }),
    now: NOW,
    retentionMs: DAY,
  });
  return jobs.map((j) => j.id);
}

describe.each(BACKENDS)("backend.control on $name", (entry) => {
  const seam = useSeam(entry);

  describe("retryMany", () => {
    it("X7: by id, puts failed jobs back to enqueued at now: history kept and appended, expiry cleared, last error and attempt kept; other stages and unknown ids skipped", async () => {
      const s = seam();
      const [failed, done, pending, failed2] = await jobsEndingIn(s, ["failed", "success", "enqueued", "failed"]);
      const unknown = jobInsert().id;
      const r = await s.backend.control.retryMany({ target: { ids: [failed2!, unknown, done!, pending!, failed!] }, now: NOW + 50, limit: 10 });
      expect(r.ids).toEqual([failed, failed2]);
      expect(await s.job(failed!)).toMatchObject({ stage: "enqueued", runAt: NOW + 50, expiresAt: null, attempt: 1, lastError: `error of ${failed}` });
      expect(history(await s.job(failed!))).toEqual(["enqueued", "running", "failed", "enqueued"]);
      expect((await s.job(done!)).stage).toBe("success");
      await expectCountersMatch(s);
      // Claimed again with the next attempt number: attempts never go back (J8).
      const { jobs } = await s.backend.jobs.claimReady({ owner: "w", limit: 10, now: NOW + 50, leaseExpiresAt: NOW + 1_000, jobTypes: ["work"] });
      expect(jobs.filter((j) => j.id === failed).map((j) => j.attempt)).toEqual([2]);
      // Nothing retryable left among them.
      expect((await s.backend.control.retryMany({ target: { ids: [failed!, done!] }, now: NOW, limit: 10 })).ids).toEqual([]);
      await expectCountersMatch(s);
    });

    it("X7: at most limit jobs per call, in id order", async () => {
      const s = seam();
      const ids = await jobsEndingIn(s, ["failed", "failed", "failed"]);
      expect((await s.backend.control.retryMany({ target: { ids: [...ids].reverse() }, now: NOW, limit: 2 })).ids).toEqual(ids.slice(0, 2));
      expect((await s.backend.control.retryMany({ target: { ids }, now: NOW, limit: 2 })).ids).toEqual(ids.slice(2));
      await expectCountersMatch(s);
    });

    it("X7/J5: a continuation that failed because its parent failed, and never ran, is not retried; once its parent succeeded it is", async () => {
      const s = seam();
      const [parent] = await jobsEndingIn(s, ["failed"], "parent");
      const kid = jobInsert({ parentId: parent });
      await s.backend.jobs.insertMany({ jobs: [kid], now: NOW });
      expect((await s.job(kid.id)).stage).toBe("failed");
      expect((await s.backend.control.retryMany({ target: { ids: [kid.id] }, now: NOW, limit: 10 })).ids).toEqual([]);
      expect((await s.backend.control.retryMany({ target: { filter: {} }, now: NOW, limit: 10 })).ids).toEqual([parent]);
      const [claimed] = (await s.backend.jobs.claimReady({ owner: "w", limit: 1, now: NOW, leaseExpiresAt: NOW + 1, jobTypes: ["parent"] })).jobs;
      await s.backend.jobs.finishMany({ finishes: [{ id: claimed!.id, attempt: claimed!.attempt, outcome: { kind: "success" } }], now: NOW, retentionMs: DAY });
      expect((await s.backend.control.retryMany({ target: { ids: [kid.id] }, now: NOW, limit: 10 })).ids).toEqual([kid.id]);
      await expectCountersMatch(s);
    });

    it("X7: a retried partitioned job goes to the end of its partition (its next sequence), in its old relative order", async () => {
      const s = seam();
      await s.backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 2 }], now: NOW });
      const jobs = [0, 0, 0, 1].map((partition) => jobInsert({ topic: "t", partition }));
      await s.backend.jobs.insertMany({ jobs, now: NOW });
      // Heads of both partitions fail, then partition 0's next head fails too.
      const claimNext = { leaseExpiresAt: NOW + 1_000, jobTypes: ["work"] };
      const heads = (
        await s.backend.partitions.headClaim({
          owner: "m",
          partitions: [
            { topic: "t", partition: 0 },
            { topic: "t", partition: 1 },
          ],
          limit: 2,
          now: NOW,
          leaseExpiresAt: NOW + 1_000,
          jobTypes: ["work"],
        })
      ).claimed;
      const h0 = heads.find((h) => h.partition === 0)!;
      const h1 = heads.find((h) => h.partition === 1)!;
      const fail = { kind: "fail", error: "x" } as const;
      const { next } = await s.backend.partitions.headFinish({ owner: "m", claim: h0, outcome: fail, now: NOW, retentionMs: DAY, claimNext });
      await s.backend.partitions.headFinish({ owner: "m", claim: next!, outcome: fail, now: NOW, retentionMs: DAY });
      await s.backend.partitions.headFinish({ owner: "m", claim: h1, outcome: fail, now: NOW, retentionMs: DAY });
      const seqBefore = (await s.job(jobs[2]!.id)).seq!;
      const r = await s.backend.control.retryMany({ target: { filter: {} }, now: NOW + 1, limit: 10 });
      expect(r.ids).toEqual([jobs[0]!.id, jobs[1]!.id, jobs[3]!.id]);
      expect([(await s.job(jobs[0]!.id)).seq, (await s.job(jobs[1]!.id)).seq]).toEqual([seqBefore + 1, seqBefore + 2]);
      expect((await s.job(jobs[3]!.id)).seq).toBe(h1.seq + 1);
      // Partition 0 now runs the untouched job first, then the retried ones in their old order.
      const order: string[] = [];
      let [h] = (
        await s.backend.partitions.headClaim({
          owner: "m",
          partitions: [{ topic: "t", partition: 0 }],
          limit: 1,
          now: NOW + 1,
          leaseExpiresAt: NOW + 2_000,
          jobTypes: ["work"],
        })
      ).claimed;
      while (h) {
        order.push(h.id);
        h =
          (await s.backend.partitions.headFinish({ owner: "m", claim: h, outcome: { kind: "success" }, now: NOW + 1, retentionMs: DAY, claimNext })).next ??
          undefined;
      }
      expect(order).toEqual([jobs[2]!.id, jobs[0]!.id, jobs[1]!.id]);
      await expectCountersMatch(s);
    });

    it("X7: by filter (stage, job type), walked in batches with afterId, each job taken once", async () => {
      const s = seam();
      const work = await jobsEndingIn(s, ["failed", "success", "failed", "failed", "enqueued", "failed", "failed"]);
      const other = await jobsEndingIn(s, ["failed", "failed"], "other");
      const failedWork = work.filter((_, i) => [0, 2, 3, 5, 6].includes(i));
      expect((await s.backend.control.retryMany({ target: { filter: { stage: "success" } }, now: NOW, limit: 10 })).ids).toEqual([]);
      const taken: string[] = [];
      let afterId: string | undefined;
      for (;;) {
        const { ids } = await s.backend.control.retryMany({ target: { filter: { jobType: "work", stage: "failed", afterId } }, now: NOW, limit: 2 });
        if (ids.length === 0) break;
        expect(ids.length).toBeLessThanOrEqual(2);
        taken.push(...ids);
        afterId = ids.at(-1);
        await expectCountersMatch(s);
      }
      expect(taken).toEqual(failedWork);
      expect(
        Object.entries(await storedStages(s))
          .filter(([, stage]) => stage === "failed")
          .map(([id]) => id),
      ).toEqual(other);
      await expectCountersMatch(s);
    });
  });

  describe("deleteMany", () => {
    it("X7: by id, deletes terminal jobs (success, failed) only, at most limit, in id order; other stages and unknown ids skipped", async () => {
      const s = seam();
      const [done, failed, pending, done2] = await jobsEndingIn(s, ["success", "failed", "enqueued", "success"]);
      const ids = [done2!, pending!, jobInsert().id, failed!, done!];
      expect((await s.backend.control.deleteMany({ target: { ids }, limit: 2 })).ids).toEqual([done, failed]);
      await expectCountersMatch(s);
      expect((await s.backend.control.deleteMany({ target: { ids }, limit: 10 })).ids).toEqual([done2]);
      expect(await storedStages(s)).toEqual({ [pending!]: "enqueued" });
      await expectCountersMatch(s);
    });

    it("X7: by filter, in batches with afterId; partitioned jobs' depth counters follow", async () => {
      const s = seam();
      const work = await jobsEndingIn(s, ["success", "failed", "success", "enqueued", "success", "failed"]);
      await jobsEndingIn(s, ["success"], "other");
      await s.backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 1 }], now: NOW });
      const part = [jobInsert({ topic: "t", partition: 0, jobType: "work" }), jobInsert({ topic: "t", partition: 0, jobType: "work" })];
      await s.backend.jobs.insertMany({ jobs: part, now: NOW });
      const [h] = (
        await s.backend.partitions.headClaim({
          owner: "m",
          partitions: [{ topic: "t", partition: 0 }],
          limit: 1,
          now: NOW,
          leaseExpiresAt: NOW + 1,
          jobTypes: ["work"],
        })
      ).claimed;
      await s.backend.partitions.headFinish({ owner: "m", claim: h!, outcome: { kind: "success" }, now: NOW, retentionMs: DAY });
      const gone: string[] = [];
      let afterId: string | undefined;
      for (;;) {
        const { ids } = await s.backend.control.deleteMany({ target: { filter: { stage: "success", jobType: "work", afterId } }, limit: 2 });
        if (ids.length === 0) break;
        gone.push(...ids);
        afterId = ids.at(-1);
        await expectCountersMatch(s);
      }
      expect(gone).toEqual([work[0], work[2], work[4], part[0]!.id]);
      expect((await s.backend.control.deleteMany({ target: { filter: {} }, limit: 10 })).ids.length).toBe(3); // the failed ones and other's success
      expect(Object.values(await storedStages(s)).sort()).toEqual(["enqueued", "enqueued"]);
      await expectCountersMatch(s);
    });
  });

  describe("countMatching", () => {
    it("X7: counts what a filter form would take now (retryable failed jobs, or terminal jobs), ignoring afterId", async () => {
      const s = seam();
      const ids = await jobsEndingIn(s, ["failed", "success", "failed", "enqueued"]);
      await jobsEndingIn(s, ["failed", "success"], "other");
      // A continuation failed with its parent (the cascade of the parent's failure): terminal, not retryable.
      const parent = jobInsert({ jobType: "parent" });
      await s.backend.jobs.insertMany({ jobs: [parent], now: NOW });
      await s.backend.jobs.insertMany({ jobs: [jobInsert({ parentId: parent.id })], now: NOW });
      await s.backend.jobs.claimReady({ owner: "w", limit: 1, now: NOW, leaseExpiresAt: NOW + 1, jobTypes: ["parent"] });
      await s.backend.jobs.finishMany({ finishes: [{ id: parent.id, attempt: 1, outcome: { kind: "fail", error: "x" } }], now: NOW, retentionMs: DAY });
      const count = (action: "retry" | "delete", filter = {}) => s.backend.control.countMatching({ action, filter });
      expect(await count("retry")).toBe(4);
      expect(await count("retry", { jobType: "work" })).toBe(2);
      expect(await count("retry", { jobType: "work", afterId: ids[2] })).toBe(2);
      expect(await count("retry", { stage: "success" })).toBe(0);
      expect(await count("delete")).toBe(7);
      expect(await count("delete", { stage: "success" })).toBe(2);
      expect(await count("delete", { stage: "enqueued" })).toBe(0);
      expect(await count("delete", { stage: "failed", jobType: "other" })).toBe(1);
      const other = await s.other(`${s.backend.namespace}-other`);
      expect(await other.control.countMatching({ action: "delete", filter: {} })).toBe(0);
    });
  });

  describe("pauseSet", () => {
    it("X4: pauses and resumes a job type or a topic; true when it changed something, false when it already was; scoped to the namespace; no job row touched", async () => {
      const s = seam();
      const [job] = await jobsEndingIn(s, ["enqueued"]);
      expect(await s.backend.control.pauseSet({ kind: "type", name: "work", paused: true, now: NOW })).toBe(true);
      expect(await s.backend.control.pauseSet({ kind: "type", name: "work", paused: true, now: NOW + 5 })).toBe(false);
      expect(await s.backend.control.pauseSet({ kind: "topic", name: "work", paused: true, now: NOW + 1 })).toBe(true);
      expect(await s.backend.control.pausedList()).toEqual([
        { kind: "topic", name: "work", pausedAt: NOW + 1 },
        { kind: "type", name: "work", pausedAt: NOW },
      ]);
      const other = await s.other(`${s.backend.namespace}-other`);
      expect(await other.control.pausedList()).toEqual([]);
      expect(await other.control.pauseSet({ kind: "type", name: "work", paused: false, now: NOW })).toBe(false);
      expect(await s.backend.control.pauseSet({ kind: "type", name: "work", paused: false, now: NOW })).toBe(true);
      expect(await s.backend.control.pauseSet({ kind: "type", name: "work", paused: false, now: NOW })).toBe(false);
      expect(await s.backend.control.pausedList()).toEqual([{ kind: "topic", name: "work", pausedAt: NOW + 1 }]);
      expect((await s.job(job!)).stage).toBe("enqueued");
      await expectCountersMatch(s);
    });
  });

  describe("pausedList", () => {
    it("X4: the namespace's paused set by kind then name, empty when nothing is paused", async () => {
      const s = seam();
      expect(await s.backend.control.pausedList()).toEqual([]);
      for (const name of ["b", "a"]) await s.backend.control.pauseSet({ kind: "type", name, paused: true, now: NOW });
      await s.backend.control.pauseSet({ kind: "topic", name: "t", paused: true, now: NOW });
      expect((await s.backend.control.pausedList()).map((p) => `${p.kind}:${p.name}`)).toEqual(["topic:t", "type:a", "type:b"]);
    });
  });

  describe("pauseTargetKnown", () => {
    it("X4: a topic is known once registered; a job type once a server row lists it, a schedule or a job of it is stored; both per namespace", async () => {
      const s = seam();
      const known = (kind: "type" | "topic", name: string, b = s.backend) => b.control.pauseTargetKnown({ kind, name });
      expect(await known("topic", "t")).toBe(false);
      await s.backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 1 }], now: NOW });
      expect(await known("topic", "t")).toBe(true);
      expect(await known("type", "t")).toBe(false);
      expect(await known("type", "stored")).toBe(false);
      await jobsEndingIn(s, ["success"], "stored");
      expect(await known("type", "stored")).toBe(true);
      expect(await known("type", "handled")).toBe(false);
      await s.backend.activity.serverHeartbeat({
        instanceId: "i",
        host: "h",
        pid: 1,
        workers: 1,
        busy: 0,
        now: NOW,
        expiresAt: NOW + 1,
        jobTypes: ["handled"],
      });
      expect(await known("type", "handled")).toBe(true);
      const other = await s.other(`${s.backend.namespace}-other`);
      expect(await known("type", "stored", other)).toBe(false);
      expect(await known("type", "handled", other)).toBe(false);
      expect(await known("topic", "t", other)).toBe(false);
    });
  });
});
