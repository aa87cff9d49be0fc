// A finish whose reply is lost is still reported written (PostgreSQL). A proxy between the backend
// and PostgreSQL cuts the connection right after a finish committed, before its reply reaches the
// backend; the runner runs the statement again on another connection, which finds the rows already
// finished and writes nothing. The batch must still report those finishes as written (the server
// sends their events and counts them from that), the rows must be finished once, and the stage
// counters must equal a GROUP BY of the jobs. SQLite has no such retry (see enqueue-lost-reply).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgres } from "@later/runtime/postgres";
import type { Backend } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";
import { ReplyDroppingProxy } from "../support/reply-dropping-proxy.js";
import { expectCountersMatch, freshBackend, jobInsert, NOW, type Seam } from "../seam/seam-factory.js";

const entry = BACKENDS.find((b) => b.name === "postgres");
const DAY = 86_400_000;

/** Text that only the batch-of-successes statement sends (`finishSuccess`). */
const SUCCESS_BATCH = "result = $9::jsonb ->> j.id";
/** Text that only the general finish statement sends (`finish`). */
const GENERAL_FINISH = "run_at = CASE WHEN";

describe.skipIf(!entry)("a finish whose commit reply is lost (postgres)", () => {
  let seam: Seam;
  let proxy: ReplyDroppingProxy;
  let viaProxy: Backend;

  beforeAll(async () => {
    seam = await freshBackend(entry!, "lost-finish");
    const url = new URL(seam.db.url);
    proxy = await ReplyDroppingProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
    url.host = `127.0.0.1:${proxy.port}`;
    // Unnamed statements: each call sends its text, which the proxy looks for.
    viaProxy = postgres({ connectionString: url.toString(), schema: seam.db.schema!, namespace: "lost-finish", listen: false, preparedStatements: false });
    await viaProxy.open();
  });

  afterAll(async () => {
    await viaProxy?.close();
    await proxy?.close();
    await seam?.close();
  });

  it("reports the successes and the retry its statement wrote before the cut, each written once; continuations released; counters match", async () => {
    const jobs = [jobInsert(), jobInsert(), jobInsert()];
    await seam.backend.jobs.insertMany({ jobs, now: NOW });
    const claimed = await viaProxy.jobs.claimReady({ owner: "lost", limit: 3, now: NOW, leaseExpiresAt: NOW + 60_000, jobTypes: ["work"] });
    expect(claimed.jobs).toHaveLength(3);
    const child = jobInsert({ parentId: jobs[0]!.id });
    expect((await seam.backend.jobs.insertMany({ jobs: [child], now: NOW + 1 })).stages).toEqual(["waiting"]);

    let dropped = proxy.dropped;
    proxy.dropReplyTo(SUCCESS_BATCH);
    const successes = await viaProxy.jobs.finishMany({
      finishes: jobs.slice(0, 2).map((j) => ({ id: j.id, attempt: 1, outcome: { kind: "success" as const } })),
      now: NOW + 10,
      retentionMs: DAY,
    });
    expect(proxy.dropped, "the connection was cut after the successes committed").toBe(++dropped);
    expect(successes.applied.map((a) => a.id).sort()).toEqual([jobs[0]!.id, jobs[1]!.id].sort());
    for (const j of jobs.slice(0, 2)) {
      const record = await seam.job(j.id);
      expect(record.stage).toBe("success");
      expect(record.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "success"]);
    }
    expect((await seam.job(child.id)).stage).toBe("enqueued");

    proxy.dropReplyTo(GENERAL_FINISH);
    const retried = await viaProxy.jobs.finishMany({
      finishes: [{ id: jobs[2]!.id, attempt: 1, outcome: { kind: "retry", runAt: NOW + 1_000, error: "again" } }],
      now: NOW + 20,
      retentionMs: DAY,
    });
    expect(proxy.dropped, "the connection was cut after the retry committed").toBe(++dropped);
    expect(retried.applied).toEqual([{ id: jobs[2]!.id, attempt: 1 }]);
    const requeued = await seam.job(jobs[2]!.id);
    expect(requeued.stage).toBe("requeued");
    expect(requeued.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "requeued"]);

    // A finish that lost its claim is still reported not written: the read finds its row in another stage.
    const stale = await viaProxy.jobs.finishMany({
      finishes: [{ id: jobs[2]!.id, attempt: 1, outcome: { kind: "success" } }],
      now: NOW + 20,
      retentionMs: DAY,
    });
    expect(stale.applied).toEqual([]);
    await expectCountersMatch(seam);
  });
});
