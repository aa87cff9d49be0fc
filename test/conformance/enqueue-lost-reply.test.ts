// A retried enqueue never stores a job twice (PostgreSQL). A proxy between the backend and
// PostgreSQL cuts the connection right after an enqueue committed, before its reply reaches the
// backend (the insert's own reply in autocommit, the COMMIT's in a transaction): the backend runs
// it again on another connection. Every enqueue form then resolves to its ids, each job is stored
// once, no partition sequence is taken twice, and the stage counters equal a GROUP BY of the jobs.
// SQLite has no such retry: a statement there either commits before its call returns or throws
// with nothing stored (SQLITE_BUSY included), so there is nothing to lose between the two.
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_STAGES, topic } from "@later/runtime";
import { postgres } from "@later/runtime/postgres";
import { JobsBuilder, openJobsPublisher, type JobsPublisher } from "../codegen/schemas/shop.generated.js";
import { BACKENDS, type TestDatabase } from "./backends.js";
import { ReplyDroppingProxy } from "../support/reply-dropping-proxy.js";

const entry = BACKENDS.find((b) => b.name === "postgres");

describe.skipIf(!entry)("an enqueue whose commit reply is lost (postgres)", () => {
  let db: TestDatabase;
  let proxy: ReplyDroppingProxy;
  let publisher: JobsPublisher;
  const topics = [topic("orders", 2)];

  beforeAll(async () => {
    db = await entry!.createDatabase();
    // Migrates and registers the topic, directly.
    const server = await new JobsBuilder({ context: {}, backend: db.backend(), autoMigrate: true, topics, workerCount: 1 })
      .withSendEmailHandler(() => undefined)
      .withCreateAccountHandler(() => undefined)
      .withProcessOrderHandler(() => undefined)
      .build();
    await server.shutdown();
    const url = new URL(db.url);
    proxy = await ReplyDroppingProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
    url.host = `127.0.0.1:${proxy.port}`;
    // Unnamed statements: the insert's text goes out with every call, so the proxy can find it.
    const backend = postgres({ connectionString: url.toString(), schema: db.schema!, namespace: "test", listen: false, preparedStatements: false });
    publisher = await openJobsPublisher({ backend, topics });
  });

  afterAll(async () => {
    await publisher?.close();
    await proxy?.close();
    await db?.dispose();
  });

  /** Runs `enqueue` with the connection cut after `statement` committed; resolves to the ids it returned. */
  async function cutOnce(statement: string, enqueue: () => Promise<string | string[]>): Promise<string[]> {
    const before = proxy.dropped;
    proxy.dropReplyTo(statement);
    const ids = [await enqueue()].flat();
    expect(proxy.dropped, "the connection was cut").toBe(before + 1);
    return ids;
  }

  it("every enqueue form resolves to its ids; each job is stored once, each sequence taken once; counters match", async () => {
    const email = { address: "a@example.com", body: "hi" };
    const order = (customerId: number) => ({ customerId, description: "x" });
    const ids: string[] = [];
    // Autocommit: one statement, the runner's retry.
    const INSERT = "json_to_recordset";
    ids.push(...(await cutOnce(INSERT, () => publisher.jobs.sendEmail.enqueue(email))));
    ids.push(...(await cutOnce(INSERT, () => publisher.jobs.sendEmail.enqueueMany([email, email, email]))));
    // X2: a unique enqueue run again finds its own job holding the key: the same id, stored once.
    const unique = await cutOnce("WITH held AS", () => publisher.jobs.sendEmail.enqueue(email, { uniqueKey: "lost-reply" }));
    ids.push(...unique);
    expect(await publisher.jobs.sendEmail.enqueue(email, { uniqueKey: "lost-reply" })).toBe(unique[0]);
    // Two unique enqueues at once: written together in one statement (distinct keys), run again, each finds its own job.
    const pair = await cutOnce("AS i(ord int, k text", () =>
      Promise.all([publisher.jobs.sendEmail.enqueue(email, { uniqueKey: "lost-a" }), publisher.jobs.sendEmail.enqueue(email, { uniqueKey: "lost-b" })]),
    );
    expect(new Set(pair).size).toBe(2);
    ids.push(...pair);
    // Transactions (partitions, continuations): the store's retry.
    const partitioned = await cutOnce("COMMIT", () => publisher.jobs.processOrder.enqueueToPartition(order(1)));
    partitioned.push(...(await cutOnce("COMMIT", () => publisher.jobs.processOrder.enqueueToPartition(order(1)))));
    ids.push(...partitioned);
    const parent = ids[0]!;
    ids.push(...(await cutOnce("COMMIT", () => publisher.jobs.sendEmail.enqueueContinue(parent, email))));
    ids.push(...(await cutOnce("COMMIT", () => publisher.jobs.sendEmail.enqueueMany([email, email], { parentId: parent }))));
    ids.push(...(await cutOnce("COMMIT", () => publisher.jobs.processOrder.enqueueContinueToPartition(parent, order(1)))));

    const app = db.appDatabase<Record<string, never>>();
    try {
      const stored = await sql<{ id: string }>`SELECT id FROM later_jobs ORDER BY id`.execute(app);
      expect(stored.rows.map((r) => r.id)).toEqual([...ids].sort());
      // Customer 1's partition of "orders": three jobs with consecutive sequences, and the next one right after them.
      const seqs = (await sql<{ seq: string }>`SELECT seq FROM later_jobs WHERE topic = 'orders' ORDER BY seq`.execute(app)).rows.map((r) => Number(r.seq));
      expect(seqs).toEqual([seqs[0], seqs[0]! + 1, seqs[0]! + 2]);
      const next = await sql<{ next_seq: string }>`SELECT max(next_seq) AS next_seq FROM later_partitions WHERE topic = 'orders'`.execute(app);
      expect(Number(next.rows[0]!.next_seq)).toBe(seqs[2]! + 1);
      const byStage = await sql<{ stage: string; n: string }>`SELECT stage, count(*) AS n FROM later_jobs GROUP BY stage`.execute(app);
      const recount = Object.fromEntries(JOB_STAGES.map((s) => [s, Number(byStage.rows.find((r) => r.stage === s)?.n ?? 0)]));
      const backend = db.backend();
      await backend.open();
      try {
        expect((await backend.inspect.stageCounts()).counts).toEqual(recount);
        expect(recount.enqueued).toBe(9);
        expect(recount.waiting).toBe(4);
        const depth = (await backend.inspect.partitionDepth()).partitions.filter((p) => p.unfinished > 0);
        expect(depth.map((p) => p.unfinished)).toEqual([3]);
      } finally {
        await backend.close();
      }
    } finally {
      await app.destroy();
    }
  });
});
