/**
 * Stage counters (D7 in docs/semantics.md; docs/storage.md): after a mixed workload touching every
 * statement that changes a stage, the counters the backend reads
 * (`inspect.stageCounts`, `partitionDepth`, `topicDepth`) equal a GROUP BY over
 * the jobs computed here; and every stored stage history walks only the legal
 * transitions of the core table (X13, `core/stage-transition.ts`).
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { JOB_STAGES, type JobStage, newJobId, RetryPolicy, topic } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { illegalStep } from "../../packages/runtime/src/core/stage-transition.js";
import { BACKENDS, type TestDatabase } from "./backends.js";
import { deferred, settled, useHarness, waitFor } from "./harness.js";

interface Recount {
  stages: Record<string, number>;
  partitions: { topic: string; partition: number; unfinished: number }[];
  topics: { topic: string; unfinished: number }[];
}

/** Jobs per stage, and unfinished jobs per partition and per topic, of `namespace`, counted over the jobs. */
async function recount(db: TestDatabase, namespace: string): Promise<Recount> {
  const app = db.appDatabase<Record<string, never>>();
  try {
    const stages = await sql<{ stage: string; n: number }>`SELECT stage, count(*) AS n FROM later_jobs WHERE namespace = ${namespace} GROUP BY stage`.execute(
      app,
    );
    const parts = await sql<{ topic: string; partition_no: number; n: number }>`SELECT topic, partition_no, count(*) AS n FROM later_jobs
      WHERE namespace = ${namespace} AND topic IS NOT NULL AND stage NOT IN ('success', 'failed', 'cancelled') GROUP BY topic, partition_no`.execute(app);
    const partitions = parts.rows.map((r) => ({ topic: r.topic, partition: Number(r.partition_no), unfinished: Number(r.n) }));
    const byTopic = new Map<string, number>();
    for (const p of partitions) byTopic.set(p.topic, (byTopic.get(p.topic) ?? 0) + p.unfinished);
    return {
      stages: Object.fromEntries(JOB_STAGES.map((s) => [s, Number(stages.rows.find((r) => r.stage === s)?.n ?? 0)])),
      partitions,
      topics: [...byTopic].map(([t, unfinished]) => ({ topic: t, unfinished })),
    };
  } finally {
    await app.destroy();
  }
}

interface Counted {
  stages: Record<string, number>;
  partitions: { topic: string; partition: number; unfinished: number }[];
  topics: { topic: string; unfinished: number }[];
}

/** What the backend's counters say, in the recount's shape (partitions and topics without unfinished jobs left out). */
async function counted(backend: Backend): Promise<Counted> {
  const sortKey = (p: { topic: string; partition: number }) => `${p.topic}\0${String(p.partition).padStart(6, "0")}`;
  return {
    stages: (await backend.inspect.stageCounts()).counts,
    partitions: (await backend.inspect.partitionDepth()).partitions
      .filter((p) => p.unfinished !== 0)
      .map(({ topic: t, partition, unfinished }) => ({ topic: t, partition, unfinished }))
      .sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : 1)),
    topics: (await backend.inspect.topicDepth()).topics.filter((t) => t.unfinished !== 0).map(({ topic: t, unfinished }) => ({ topic: t, unfinished })),
  };
}

/**
 * Asserts that the stage history of every stored job (every namespace)
 * walks only legal transitions (X13): its first entry an insert's target,
 * each next entry reachable from the one before by some kind of
 * `STAGE_TRANSITIONS`, and its last entry the job's stage. Returns how many
 * histories were checked.
 */
async function expectHistoriesLegal(db: TestDatabase): Promise<number> {
  const app = db.appDatabase<Record<string, never>>();
  try {
    const rows = await sql<{ id: string; stage: JobStage; stages: string }>`SELECT id, stage, stages FROM later_jobs`.execute(app);
    const illegal = rows.rows.flatMap((r) => {
      const history = (JSON.parse(r.stages) as [JobStage, number, string?][]).map(([stage]) => stage);
      const step = illegalStep(history);
      if (step) return [`${r.id}: ${step.from ?? "(insert)"} -> ${step.to} in ${history.join(" > ")}`];
      return history.at(-1) === r.stage ? [] : [`${r.id}: stage ${r.stage} but history ends ${history.at(-1)}`];
    });
    expect(illegal).toEqual([]);
    return rows.rows.length;
  } finally {
    await app.destroy();
  }
}

/**
 * Asserts that the backend's counters equal the recount. While a server
 * still works the two reads may straddle a commit, so they are compared
 * until they agree (a counter that drifted never would) for up to 10 s.
 */
async function expectCountersMatch(db: TestDatabase, backend: Backend): Promise<Recount> {
  const sortKey = (p: { topic: string; partition: number }) => `${p.topic}\0${String(p.partition).padStart(6, "0")}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const expected = await recount(db, backend.namespace);
    expected.partitions.sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : 1));
    expected.topics.sort((a, b) => (a.topic < b.topic ? -1 : 1));
    const actual = await counted(backend);
    if (JSON.stringify(actual) === JSON.stringify(expected) || Date.now() > deadline) {
      expect(actual).toEqual(expected);
      await expectHistoriesLegal(db);
      return expected;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Asserts that the counters' cumulative `entered` per stage (the dashboard's
 * throughput, migration SQLite 7 / PostgreSQL 8) equals the entries of the
 * jobs' stage histories: every statement that moves a stage counts what it
 * moves in. Only while no job was deleted (a delete keeps what was counted).
 */
async function expectEnteredMatchesHistory(db: TestDatabase, dialect: string, namespace: string): Promise<void> {
  const app = db.appDatabase<Record<string, never>>();
  const byStage = (rows: { stage: string; n: number | string }[]) =>
    Object.fromEntries(rows.filter((r) => Number(r.n) !== 0).map((r) => [r.stage, Number(r.n)]));
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const history =
        dialect === "postgres"
          ? await sql<{ stage: string; n: string }>`SELECT e->>0 AS stage, count(*) AS n FROM later_jobs, jsonb_array_elements(stages::jsonb) e
              WHERE namespace = ${namespace} GROUP BY 1`.execute(app)
          : await sql<{ stage: string; n: number }>`SELECT json_extract(e.value, '$[0]') AS stage, count(*) AS n FROM later_jobs, json_each(later_jobs.stages) e
              WHERE namespace = ${namespace} GROUP BY 1`.execute(app);
      const entered = await sql<{ stage: string; n: number | string }>`SELECT stage, sum(entered) AS n FROM later_stage_counts
        WHERE namespace = ${namespace} GROUP BY stage`.execute(app);
      const [expected, actual] = [byStage(history.rows), byStage(entered.rows)];
      if (JSON.stringify(Object.entries(actual).sort()) === JSON.stringify(Object.entries(expected).sort()) || Date.now() > deadline) {
        expect(actual).toEqual(expected);
        expect(actual).toMatchObject({ enqueued: expect.any(Number), running: expect.any(Number), requeued: expect.any(Number), failed: expect.any(Number) });
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await app.destroy();
  }
}

describe.each(BACKENDS)("stage counters on $name", (entry) => {
  const harness = useHarness(entry);
  const ORDERS = topic("orders", 4);
  const policy = JSON.stringify(RetryPolicy.fixed(2, 0));

  it("D7: after a mixed workload the counters equal a GROUP BY over the jobs, per namespace, stage, topic and partition", async () => {
    const h = harness();
    let flakyRuns = 0;
    const gate = deferred();
    const gated = deferred();
    const server = await h.start({
      topics: [ORDERS],
      workerCount: 4,
      retentionMs: 60_000,
      stuckGraceMs: 0,
      rescueIntervalMs: 1_000_000,
      recurringPollIntervalMs: 1_000_000,
      defaultRetryPolicy: RetryPolicy.fixed(2, 0),
      handlers: {
        ok: { handle: () => undefined },
        flaky: {
          handle: () => {
            if (flakyRuns++ % 2 === 0) throw new Error("first try fails");
          },
        },
        doomed: {
          handle: () => {
            throw new Error("never works");
          },
          retry: () => RetryPolicy.noRetries(),
        },
        order: {
          handle: async (ctx, payload) => {
            if ((payload as { hang?: boolean }).hang) return new Promise((r) => ctx.signal.addEventListener("abort", r));
            if ((payload as { gate?: boolean }).gate) {
              gated.resolve();
              await gate.promise;
            }
            if (ctx.attempt === 1 && (ctx.jobId.charCodeAt(25) & 1) === 1) throw new Error("retry me");
          },
        },
        hang: { handle: (ctx) => new Promise((r) => ctx.signal.addEventListener("abort", r)) },
        later: { handle: () => Promise.reject(new Error("again in an hour")), retry: () => RetryPolicy.fixed(3, 3_600_000) },
      },
    });
    const p = server.publisher;
    // Plain jobs, retries, a delayed job, continuations released and a failed parent cascading down a chain.
    const oks = await p.enqueueMany(
      "ok",
      Array.from({ length: 30 }, (_, i) => ({ i })),
    );
    await p.enqueueMany(
      "flaky",
      Array.from({ length: 10 }, (_, i) => ({ i })),
    );
    await p.enqueue("ok", {}, { delayMs: 3_600_000 });
    await p.enqueue("ok", { child: true }, { parentId: oks[0]! });
    const doomed = await p.enqueue("doomed", {});
    const child = await p.enqueue("ok", { child: 1 }, { parentId: doomed });
    await p.enqueue("ok", { child: 2 }, { parentId: child });
    // Partitioned jobs, some retried, with a continuation inside a partition.
    const orders: string[] = [];
    for (let i = 0; i < 24; i++) orders.push(await p.enqueueToPartition("order", { i }, { topic: "orders", key: `k${i % 6}` }));
    await p.enqueueToPartition("order", { after: true }, { topic: "orders", partition: 3 }, { parentId: orders[0]! });
    // Partition runs (P3): jobs ready behind a running head run as runs, about half of them retried in the middle of a run.
    await p.enqueueToPartition("order", { gate: true }, { topic: "orders", partition: 0 });
    await gated.promise;
    for (let i = 0; i < 16; i++) await p.enqueueToPartition("order", { run: i }, { topic: "orders", partition: 0 });
    gate.resolve();
    // Fan-in (X5): a child released by three parents (one partitioned), one failed by a parent down to its own continuation,
    // one stored failed at enqueue, one in the application's transaction (below) and a partitioned one.
    const fanParents = [oks[1]!, oks[2]!, orders[1]!];
    await p.enqueue("ok", { fanIn: "released" }, { parentId: fanParents });
    await p.enqueueToPartition("order", { fanIn: "partitioned" }, { topic: "orders", partition: 1 }, { parentId: [oks[3]!, orders[2]!] });
    const fanFailed = await p.enqueue("ok", { fanIn: "failed" }, { parentId: [oks[4]!, doomed] });
    await p.enqueue("ok", { fanIn: "grandchild" }, { parentId: fanFailed });
    // A rolled-back and a committed enqueue in the application's transaction.
    const app = h.db.appDatabase<Record<string, never>>();
    await app.transaction().execute(async (trx) => p.enqueueIn(trx, "ok", { committed: true }));
    await app.transaction().execute(async (trx) => p.enqueueIn(trx, "ok", { fanIn: "in transaction" }, { parentId: [oks[5]!, oks[6]!] }));
    await expect(
      app.transaction().execute(async (trx) => {
        await p.enqueueIn(trx, "ok", { rolledBack: true });
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    await app.destroy();
    // X1/X2: priorities, and unique keys in every mode (a replace that moves a delayed job to enqueued is a counted move).
    await p.enqueueMany("ok", [{ p: 1 }, { p: 2 }], { priority: -5 });
    await p.enqueueUnique("ok", { u: 1 }, { uniqueKey: "u", delayMs: 3_600_000 });
    await p.enqueueUnique("ok", { u: 2 }, { uniqueKey: "u", delayMs: 3_600_000 });
    await p.enqueueUnique("ok", { u: 3 }, { uniqueKey: "u", uniqueMode: "afterActive", delayMs: 3_600_000 });
    await p.enqueueUnique("ok", { u: 4 }, { uniqueKey: "u", uniqueMode: "replace", delayMs: 3_600_000 });
    await p.enqueueUnique("ok", { u: 5 }, { uniqueKey: "u", uniqueMode: "replace" });
    await p.enqueueUnique("ok", { v: 1 }, { uniqueKey: "v", uniqueMode: "afterActive" });
    await p.enqueueUnique("ok", { v: 2 }, { uniqueKey: "v", uniqueMode: "afterActive" });
    // Recurring occurrences.
    await p.enqueueRecurring("ok", "every-second", {}, "* * * * * *");
    await waitFor(
      async () => {
        const { counts } = await server.backend.inspect.stageCounts();
        return counts.enqueued + counts.running + counts.requeued === 0 && counts.waiting === 0;
      },
      "the workload to settle",
      20_000,
    );
    await expectCountersMatch(h.db, server.backend);
    await expectEnteredMatchesHistory(h.db, entry.name, server.backend.namespace);
    expect(await expectHistoriesLegal(h.db)).toBeGreaterThan(60);
    // A fan-in child whose parent had already failed is stored failed.
    await p.enqueue("ok", { fanIn: "born failed" }, { parentId: [oks[7]!, doomed] });
    await expectCountersMatch(h.db, server.backend);

    // A partition blocked by a delayed head, with jobs and a continuation behind it: force-failed, then its history truncated.
    const head = await p.enqueueToPartition("order", { head: true }, { topic: "orders", partition: 2 }, { delayMs: 3_600_000 });
    await p.enqueueToPartition("order", { behind: true }, { topic: "orders", partition: 2 }, { parentId: head });
    await p.enqueueToPartition("order", { behind: 2 }, { topic: "orders", partition: 2 });
    await expectCountersMatch(h.db, server.backend);
    expect(await p.forceFailPartitionHead({ topic: "orders", partition: 2 }, "poison")).toBe(head);
    await waitFor(
      async () => (await server.backend.inspect.partitionDepth()).partitions.find((x) => x.partition === 2)?.unfinished === 0,
      "partition 2 drained",
    );
    await expectCountersMatch(h.db, server.backend);
    expect(await p.truncatePartitionHistory({ topic: "orders", partition: 2 }, 1)).toBeGreaterThan(0);
    await expectCountersMatch(h.db, server.backend);

    // A stuck job: claimed by a process that died (its lease already expired), rescued: one retried, one failed for good.
    const ghost = h.db.backend();
    await ghost.open();
    const now = Date.now() + 10;
    await ghost.jobs.insertMany({
      now,
      jobs: [
        { id: newJobId(now), jobType: "ghostly", payload: "{}", runAt: now, retryPolicy: policy },
        { id: newJobId(now + 1), jobType: "ghostly", payload: "{}", runAt: now, retryPolicy: JSON.stringify(RetryPolicy.noRetries()) },
      ],
    });
    expect((await ghost.jobs.claimReady({ owner: "ghost", limit: 2, now, leaseExpiresAt: now - 60_000, jobTypes: ["ghostly"] })).jobs).toHaveLength(2);
    await ghost.close();
    await expectCountersMatch(h.db, server.backend);
    expect(await server.rescueStuckJobs()).toBe(2);
    const afterRescue = await expectCountersMatch(h.db, server.backend);
    expect(afterRescue.stages).toMatchObject({ requeued: 1 });

    // Expiry: a server with no retention finishes jobs that expire at once; the sweep deletes them.
    const sweeper = await h.start({
      retentionMs: 0,
      recurringPollIntervalMs: 1_000_000,
      sweepIntervalMs: 1_000_000,
      handlers: { brief: { handle: () => undefined }, ephemeral: { handle: () => undefined, retention: { successMs: 0 } } },
    });
    const briefs = await sweeper.publisher.enqueueMany(
      "brief",
      Array.from({ length: 12 }, (_, i) => ({ i })),
    );
    await waitFor(async () => (await sweeper.backend.inspect.jobGet({ id: briefs[11]! }))?.stage === "success", "brief jobs done");
    await waitFor(async () => (await sweeper.backend.inspect.stageCounts()).counts.success >= 12 + afterRescue.stages.success!, "brief jobs stored");
    // Retention 0: the rows expire as the clock passes their finish time; sweep until they are gone.
    let swept = 0;
    await waitFor(async () => (swept += await sweeper.sweepExpiredJobs()) >= 12, "the expired brief jobs to be swept");
    await expectCountersMatch(h.db, server.backend);
    // J11 delete-on-success (`discard`): counted into success and out again, so the counters still equal the rows.
    const ephemerals = await sweeper.publisher.enqueueMany(
      "ephemeral",
      Array.from({ length: 9 }, (_, i) => ({ i })),
    );
    for (const id of ephemerals) await waitFor(async () => (await sweeper.backend.inspect.jobGet({ id })) === null, "the ephemeral jobs to be gone");
    await expectCountersMatch(h.db, server.backend);

    // Shutdown with claims buffered: the running handler is aborted and every claimed job goes back.
    const started = deferred();
    const holder = await h.start({
      namespace: "other",
      workerCount: 1,
      pollIntervalMs: 20,
      handlers: {
        hold: {
          handle: async (ctx) => {
            started.resolve();
            await new Promise((r) => ctx.signal.addEventListener("abort", r));
            throw new Error("aborted");
          },
        },
      },
    });
    await holder.publisher.enqueueMany(
      "hold",
      Array.from({ length: 8 }, (_, i) => ({ i })),
    );
    await started.promise;
    await waitFor(async () => (await holder.backend.inspect.stageCounts()).counts.running >= 2, "claims buffered");
    await holder.shutdown({ deadlineMs: 0 });
    const otherBackend = h.db.backend("other");
    await otherBackend.open();
    const other = await expectCountersMatch(h.db, otherBackend);
    // The aborted handler's job stays running, left to lease recovery; the buffered claims went back.
    expect(other.stages.running).toBeLessThanOrEqual(1);
    expect(other.stages.enqueued! + other.stages.running!).toBe(8);
    await otherBackend.close();

    // Retry and delete from outside (X7): a failed partitioned job retried to its partition's end, every
    // failed job retried in batches of 2 (while the server runs them again), finished jobs deleted in batches of 7.
    const beforeControl = await expectCountersMatch(h.db, server.backend);
    const poisoned = await p.enqueueToPartition("doomed", {}, { topic: "orders", partition: 1 });
    await settled(() => server.backend.inspect.jobGet({ id: poisoned }));
    await p.retry(poisoned);
    await expectCountersMatch(h.db, server.backend);
    await settled(() => server.backend.inspect.jobGet({ id: poisoned }));
    // Continuations that failed with their parent are not retryable (J5), so the count is the backend's, not the failed stage's.
    const retryable = await server.backend.control.countMatching({ action: "retry", filter: {} });
    expect(retryable).toBeGreaterThanOrEqual(1);
    expect(retryable).toBeLessThanOrEqual((await server.backend.inspect.stageCounts()).counts.failed ?? 0);
    expect(await p.retryJobs({}, { batchSize: 2 })).toBeGreaterThanOrEqual(retryable);
    await expectCountersMatch(h.db, server.backend);
    expect(await p.deleteJobs({ stage: "success" }, { batchSize: 7 })).toBeGreaterThan(7);
    await expectCountersMatch(h.db, server.backend);
    expect(await p.deleteJobs({ jobType: "doomed" }, { batchSize: 7 })).toBeGreaterThanOrEqual(0);
    await expectCountersMatch(h.db, server.backend);

    // Cancel (X3) of each stage: enqueued (a type nobody here handles), delayed, waiting (under a delayed parent,
    // with its own continuation), requeued, running, a running partition head (its partition goes on), and a filter.
    const stranger = h.db.backend();
    await stranger.open();
    const strangerId = newJobId(Date.now());
    await stranger.jobs.insertMany({ now: Date.now(), jobs: [{ id: strangerId, jobType: "nobody", payload: "{}", runAt: Date.now(), retryPolicy: null }] });
    await stranger.close();
    const parked = await p.enqueue("ok", { parked: true }, { delayMs: 3_600_000 });
    const waiting = await p.enqueue("ok", { waits: true }, { parentId: parked });
    await p.enqueue("ok", { waits: 2 }, { parentId: waiting });
    const requeued = await p.enqueue("later", {});
    const hanging = await p.enqueue("hang", {});
    const hangingHead = await p.enqueueToPartition("order", { hang: true }, { topic: "orders", partition: 0 });
    const afterHead = await p.enqueueToPartition("order", { after: "head" }, { topic: "orders", partition: 0 });
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: requeued }))?.stage === "requeued", "the requeued job");
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: hanging }))?.stage === "running", "the hanging job to run");
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: hangingHead }))?.stage === "running", "the hanging head to run");
    await expectCountersMatch(h.db, server.backend);
    for (const id of [strangerId, waiting, requeued, hanging, hangingHead]) expect(await server.cancel(id, "counted")).toBe(true);
    await expectCountersMatch(h.db, server.backend);
    expect((await settled(() => server.backend.inspect.jobGet({ id: afterHead }))).stage).toBe("success");
    expect(await p.cancelJobs({ stage: "delayed", jobType: "ok" }, { batchSize: 1 })).toBeGreaterThanOrEqual(1);
    expect((await server.backend.inspect.jobGet({ id: parked }))?.stage).toBe("cancelled");
    await expectCountersMatch(h.db, server.backend);

    await server.shutdown({ deadlineMs: 1_000 });
    await sweeper.shutdown({ deadlineMs: 1_000 });
    const mainBackend = h.db.backend();
    await mainBackend.open();
    const final = await expectCountersMatch(h.db, mainBackend);
    // Across namespaces: the namespaces holding jobs, with how many (what `later jobs list` names for an empty one).
    const reader = h.db.appDatabase<Record<string, never>>();
    const perNamespace = await sql<{
      namespace: string;
      n: number;
    }>`SELECT namespace, count(*) AS n FROM later_jobs GROUP BY namespace ORDER BY namespace`.execute(reader);
    await reader.destroy();
    expect(await mainBackend.inspect.namespaceCounts()).toEqual(perNamespace.rows.map((r) => ({ namespace: r.namespace, jobs: Number(r.n) })));
    expect((await mainBackend.inspect.namespaceCounts()).map((c) => c.namespace)).toEqual(["other", "test"]);
    await mainBackend.close();
    expect(beforeControl.stages.failed).toBeGreaterThanOrEqual(4); // doomed, its chain, the poison head and its continuation, the spent ghost
    expect(final.stages.cancelled).toBeGreaterThanOrEqual(7); // X3: one of each stage, the continuation, the delayed ones
  }, 60_000);
});
