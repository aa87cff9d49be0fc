/**
 * The dashboard's JSON API D1–D3 and D5 on every backend: the overview's
 * fields (counts, throughput, dispatch wait, live workers, job and log
 * topics with lag, database size), cursor pages of jobs with every filter,
 * the job detail, the queue-length samples; bad parameters are 400 with a
 * JSON error, unknown routes 404, wrong methods 405; the page and its files
 * carry the security headers.
 */
import { describe, expect, it } from "vitest";
import { newJobId, PermanentJobError, RetryPolicy, topic, type BackgroundJobServer } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { createDashboard, type DashboardJobDetail, type DashboardJobListEntry, type Overview } from "@later/runtime/dashboard";
import { BACKENDS } from "../conformance/backends.js";
import { settled, useHarness, waitFor, type Harness } from "../conformance/harness.js";
import { call } from "./dashboard-client.js";

const HOUR = 3_600_000;

describe.each(BACKENDS)("dashboard API on $name", (entry) => {
  const harness = useHarness(entry);

  /** A server with jobs in several stages: 2 success, 1 failed (with a continuation failed with it), 3 delayed of which 1 partitioned. */
  async function seeded(h: Harness) {
    const server = await h.start({
      topics: [topic("orders", 2)],
      handlers: {
        ok: { handle: () => undefined },
        boom: {
          handle: () => {
            throw new Error("boom <b>");
          },
          retry: () => RetryPolicy.noRetries(),
        },
        idle: { handle: () => undefined },
        order: { handle: () => undefined },
      },
    });
    const p = server.publisher;
    const ok = [await p.enqueue("ok", { n: 1 }), await p.enqueue("ok", { n: 2 })];
    const failed = await p.enqueue("boom", {});
    const child = await p.enqueue("ok", { child: true }, { parentId: failed });
    const order = await p.enqueueToPartition("order", {}, { topic: "orders", partition: 1 });
    for (const id of [...ok, failed, child, order]) await settled(() => server.backend.inspect.jobGet({ id }), id);
    const idle = [await p.enqueue("idle", { a: 1 }, { delayMs: HOUR }), await p.enqueue("idle", { a: 2 }, { delayMs: HOUR })];
    const partitioned = await p.enqueueToPartition("order", { late: true }, { topic: "orders", partition: 0 }, { delayMs: HOUR });
    return { server, ok, failed, child, order, idle, partitioned };
  }

  it("D1 overview: counts, job and log topics with lag, database size", async () => {
    const h = harness();
    const { server } = await seeded(h);
    const log = server.backend.log;
    await log.topicRegister({
      topics: [{ name: "clicks", partitions: 2, retentionMs: null, retainRecords: null, minRetainUntilCommitted: false }],
      now: Date.now(),
    });
    const record = (partition: number) => ({ partition, key: null, value: new Uint8Array([1]), headers: null });
    await log.recordAppendMany({ topic: "clicks", records: [record(0), record(0), record(0), record(1)], now: Date.now() });
    await log.offsetCommit({ topic: "clicks", group: "billing", partition: 0, epoch: 0, offset: 1, now: Date.now() });
    const dashboard = createDashboard({ backend: server.backend });

    const { status, body, headers } = await call<Overview>(dashboard, "/api/overview");
    expect(status).toBe(200);
    expect(headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(body).sort()).toEqual([
      "at",
      "counts",
      "databaseBytes",
      "dispatchWait",
      "limits",
      "limitsComplete",
      "paused",
      "readOnly",
      "throughput",
      "topics",
      "unhandled",
      "unhandledComplete",
      "workers",
    ]);
    expect((body as Overview & { readOnly: boolean }).readOnly).toBe(true); // no authorize: read-only by default
    expect((body as Overview & { paused: unknown[] }).paused).toEqual([]); // X4: nothing paused
    expect(body.counts).toEqual({ enqueued: 0, delayed: 3, waiting: 0, running: 0, requeued: 0, success: 3, failed: 2, cancelled: 0 });
    expect(body.throughput.windowS).toBe(60);
    expect(body.topics).toEqual([
      {
        name: "orders",
        kind: "jobs",
        partitions: 2,
        depth: 1,
        partitionDepths: [
          { partition: 0, depth: 1 },
          { partition: 1, depth: 0 },
        ],
      },
      // 3 + 1 records retained; group "billing" committed 1 of partition 0 and nothing of partition 1: 2 + 1 behind.
      { name: "clicks", kind: "log", partitions: 2, depth: 4, lag: 3, groups: [{ group: "billing", lag: 3 }] },
    ]);
    expect(body.databaseBytes).toBeGreaterThan(0);
  });

  it("D1 overview: throughput, dispatch wait and live workers of the last minute, from the activity the servers write", async () => {
    const db = await entry.createDatabase();
    // A namespace no server runs in: the activity is written here through the backend, as a server writes it.
    const backend = db.backend("quiet");
    try {
      await backend.open();
      await backend.migrations.up();
      const t0 = Math.floor(Date.now() / 1_000) * 1_000 - 30_000;
      const policy = JSON.stringify(RetryPolicy.default());
      const job = (i: number) => ({ id: newJobId(t0 + i), jobType: "quiet", payload: "{}", runAt: t0, retryPolicy: policy });
      await backend.jobs.insertMany({ jobs: [job(0)], now: t0 - 1_000 });
      await backend.activity.enteredSample({ now: t0, staleAfterMs: 60_000 }); // sets the marks
      await backend.jobs.insertMany({ jobs: [1, 2, 3, 4].map(job), now: t0 });
      await backend.activity.enteredSample({ now: t0 + 1_000, staleAfterMs: 60_000 }); // the 4 inserts, in the second t0
      const wait = (claims: number, waitTotalMs: number, waitMaxMs: number) => ({ claims, waitTotalMs, waitMaxMs });
      await backend.activity.dispatchWaitAdd({ at: t0 - 90_000, regular: wait(100, 100_000, 5_000), partitioned: wait(0, 0, 0) }); // outside the window
      await backend.activity.dispatchWaitAdd({ at: t0, regular: wait(3, 30, 20), partitioned: wait(1, 7, 7) });
      await backend.activity.dispatchWaitAdd({ at: t0 + 2_000, regular: wait(1, 10, 10), partitioned: wait(0, 0, 0) });
      const beat = { host: "box-1", pid: 4242, workers: 8, busy: 3, now: t0 + 2_000, jobTypes: ["other"] };
      await backend.activity.serverHeartbeat({ instanceId: "live", ...beat, expiresAt: t0 + 60_000 });
      await backend.activity.serverHeartbeat({ instanceId: "gone", ...beat, expiresAt: t0 + 5_000 });

      const clock = new ManualClock(t0 + 20_000);
      const { body } = await call<Overview>(createDashboard({ backend, clock }), "/api/overview");
      expect(body.at).toBe(t0 + 20_000);
      expect(body.throughput).toEqual({
        windowS: 60,
        byStage: { enqueued: 4, delayed: 0, waiting: 0, running: 0, requeued: 0, success: 0, failed: 0, cancelled: 0 },
      });
      expect(body.dispatchWait).toEqual({ regular: { claims: 4, avgMs: 10, maxMs: 20 }, partitioned: { claims: 1, avgMs: 7, maxMs: 7 } });
      expect(body.workers).toEqual([{ instanceId: "live", host: "box-1", pid: 4242, workers: 8, busy: 3, lastSeenAt: t0 + 2_000, jobTypes: ["other"] }]);
      // The live server handles "other" only: the five due "quiet" jobs have no live handler.
      expect(body.unhandled).toEqual([{ jobType: "quiet", ready: 5 }]);
      expect(body.unhandledComplete).toBe(true);
      expect(body.counts).toMatchObject({ enqueued: 4, delayed: 1 }); // the first job was inserted a second before its runAt
    } finally {
      await backend.close();
      await db.dispose();
    }
  });

  it("D1 overview: a running server shows in workers, and its jobs in throughput and dispatch wait", async () => {
    const h = harness();
    const server = await h.start({ handlers: { ok: { handle: () => undefined } } });
    const dashboard = createDashboard({ backend: server.backend });
    // The server samples the counters once a second, and its first sample only sets the marks: a job a
    // poll keeps the server busy until its transitions are placed in their seconds.
    let polls = 0;
    const overview = await waitFor(
      async () => {
        if (polls++ % 20 === 0) await server.publisher.enqueue("ok", {}); // one job every ~100 ms
        const { body } = await call<Overview>(dashboard, "/api/overview");
        return body.throughput.byStage.success > 0 && body.dispatchWait.regular.claims > 0 ? body : null;
      },
      "the server's activity in the overview",
      30_000,
    ); // a bound, not a timing: a loaded machine may take seconds to place them
    expect(overview.workers).toEqual([
      {
        instanceId: expect.any(String),
        host: expect.any(String),
        pid: process.pid,
        workers: expect.any(Number),
        busy: expect.any(Number),
        lastSeenAt: expect.any(Number),
        jobTypes: ["ok"],
      },
    ]);
    expect(overview.unhandled).toEqual([]);
    expect(overview.throughput.byStage.enqueued).toBeGreaterThan(0);
    expect(overview.dispatchWait.regular.avgMs).toBeGreaterThanOrEqual(0);
    expect(overview.dispatchWait.regular.maxMs!).toBeGreaterThanOrEqual(overview.dispatchWait.regular.avgMs!);
  });

  it("D2 jobs: newest first in cursor pages, no payload, every filter; bad parameters are 400 and read nothing", async () => {
    const h = harness();
    const { server, ok, failed, child, order, idle, partitioned } = await seeded(h);
    const dashboard = createDashboard({ backend: server.backend });
    const all = [...ok, failed, child, order, ...idle, partitioned].sort().reverse();
    type Page = { jobs: DashboardJobListEntry[]; nextCursor: string | null };

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `/api/jobs?limit=3${cursor ? `&cursor=${cursor}` : ""}`;
      const page: Page = (await call<Page>(dashboard, query)).body;
      seen.push(...page.jobs.map((j) => j.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(all);
    expect(pages).toBe(3);

    const first = (await call<Page>(dashboard, "/api/jobs")).body.jobs;
    const job = first.find((j) => j.id === failed)!;
    expect(job).toEqual({ id: failed, jobType: "boom", stage: "failed", attempt: 1, runAt: expect.any(Number), updatedAt: expect.any(Number) });
    expect(first.find((j) => j.id === partitioned)).toMatchObject({ topic: "orders", partition: 0, stage: "delayed" });

    const ids = async (query: string) => (await call<Page>(dashboard, `/api/jobs?${query}`)).body.jobs.map((j) => j.id);
    expect(await ids("stage=failed")).toEqual([child, failed]);
    expect(await ids("type=idle")).toEqual([...idle].reverse());
    expect(await ids("stage=delayed&type=order")).toEqual([partitioned]);
    expect(await ids("topic=orders")).toEqual([partitioned, order]);
    expect(await ids("topic=orders&partition=1")).toEqual([order]);
    expect(await ids(`q=${failed}`)).toEqual([failed]);
    expect(await ids(`q=${failed.slice(0, 10)}`)).toEqual(all.filter((id) => id.startsWith(failed.slice(0, 10))));
    expect(await ids("q=bo")).toEqual([failed]);

    for (const bad of [
      "stage=bogus",
      "limit=0",
      "limit=501",
      "limit=2.5",
      "cursor=nope",
      "partition=1",
      "topic=orders&partition=-1",
      "colour=red",
      "stage=failed&stage=success",
    ]) {
      const answer = await call<{ error: { code: string; message: string } }>(dashboard, `/api/jobs?${bad}`);
      expect({ bad, status: answer.status, code: answer.body.error.code }).toEqual({ bad, status: 400, code: "INVALID_ARGUMENT" });
      expect(answer.body.error.message).not.toBe("");
    }
  });

  it("D3 job detail: history, durations, parent and children, error; an unknown id is 404, a malformed one 400", async () => {
    const h = harness();
    const { server, failed, child } = await seeded(h);
    const dashboard = createDashboard({ backend: server.backend });

    const { status, body } = await call<DashboardJobDetail>(dashboard, `/api/jobs/${failed}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      id: failed,
      jobType: "boom",
      stage: "failed",
      attempt: 1,
      parentIds: [],
      children: [{ id: child, jobType: "ok", stage: "failed" }],
      error: "boom <b>",
      progress: null,
      result: null,
      topic: null,
      partition: null,
      seq: null,
      priority: 0,
      uniqueKey: null,
      uniqueSlot: null,
      group: null,
      meta: null,
    });
    expect(body.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "failed"]);
    const { totalMs, processingMs, waitingMs } = body.durations;
    expect(totalMs).toBe(body.stages.at(-1)!.at - body.createdAt);
    expect(processingMs).toBe(body.stages[2]!.at - body.stages[1]!.at);
    expect(waitingMs).toBe(totalMs - processingMs);
    expect((await call<DashboardJobDetail>(dashboard, `/api/jobs/${child}`)).body).toMatchObject({ parentIds: [failed], children: [] });
    // X1/X2: a job's priority and unique key with the slot it holds; X10: its stored metadata, decoded.
    const keyed = await server.publisher.enqueue("ok", {}, { priority: 7, uniqueKey: "nightly", delayMs: 3_600_000, group: "acme" });
    expect((await call<DashboardJobDetail>(dashboard, `/api/jobs/${keyed}`)).body).toMatchObject({
      priority: 7,
      uniqueKey: "nightly",
      uniqueSlot: "pending",
      group: "acme", // X9
      meta: null,
    });
    const traced = newJobId(Date.now());
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const job = { id: traced, jobType: "idle", payload: "{}", runAt: Date.now() + HOUR, retryPolicy: null, meta: JSON.stringify({ traceparent }) };
    await server.backend.jobs.insertMany({ now: Date.now(), jobs: [job] });
    expect((await call<DashboardJobDetail>(dashboard, `/api/jobs/${traced}`)).body).toMatchObject({ meta: { traceparent }, uniqueKey: null, uniqueSlot: null });

    const unknown = await call<{ error: { code: string } }>(dashboard, `/api/jobs/${"0".repeat(26)}`);
    expect([unknown.status, unknown.body.error.code]).toEqual([404, "JOB_NOT_FOUND"]);
    const malformed = await call<{ error: { code: string } }>(dashboard, "/api/jobs/NOT-AN-ID");
    expect([malformed.status, malformed.body.error.code]).toEqual([400, "INVALID_ARGUMENT"]);
  });

  it("D3 job detail: a noted stage change (J1) carries its note, a plain one has no note key", async () => {
    const h = harness();
    const server = await h.start({
      handlers: {
        perm: {
          handle: () => {
            throw new PermanentJobError("bad input");
          },
        },
      },
    });
    const permanent = await server.publisher.enqueue("perm", {});
    await settled(() => server.backend.inspect.jobGet({ id: permanent }), permanent);
    // A put-back at shutdown (J9), written through the seam: a type no handler claims, claimed and released here.
    const now = Date.now();
    const parked = newJobId(now);
    const jobs = server.backend.jobs;
    await jobs.insertMany({ now, jobs: [{ id: parked, jobType: "parked", payload: "{}", runAt: now, retryPolicy: null }] });
    await jobs.claimReady({ owner: "test", limit: 1, now: now + 1, leaseExpiresAt: now + 60_000, jobTypes: ["parked"] });
    await jobs.releaseMany({ claims: [{ id: parked, attempt: 1 }], now: now + 2, reason: "shutdown" });
    const dashboard = createDashboard({ backend: server.backend });

    const failed = (await call<DashboardJobDetail>(dashboard, `/api/jobs/${permanent}`)).body;
    expect(failed.stages.map((s) => [s.stage, s.note])).toEqual([
      ["enqueued", undefined],
      ["running", undefined],
      ["failed", "permanent"],
    ]);
    expect(failed.stages.slice(0, 2).every((s) => !("note" in s))).toBe(true);
    const back = (await call<DashboardJobDetail>(dashboard, `/api/jobs/${parked}`)).body;
    expect(back.stages).toEqual([
      { stage: "enqueued", at: now },
      { stage: "running", at: now + 1 },
      { stage: "enqueued", at: now + 2, note: "shutdown" },
    ]);
  });

  it("D5 queue-length: per-minute samples; bad since is 400", async () => {
    const h = harness();
    const server = await h.start({ handlers: { ok: { handle: () => undefined } } });
    const dashboard = createDashboard({ backend: server.backend });
    const { status, body } = await call<{ stepS: number; samples: { at: number; ready: number; partitionBacklog: number }[] }>(dashboard, "/api/queue-length");
    expect(status).toBe(200);
    expect(body.stepS).toBe(60);
    expect(Array.isArray(body.samples)).toBe(true);
    for (const s of body.samples) expect(Object.keys(s).sort()).toEqual(["at", "partitionBacklog", "ready"]);
    expect((await call(dashboard, "/api/queue-length?since=yesterday")).status).toBe(400);
    const throughput = await call<{ stepS: number; buckets: unknown[] }>(dashboard, "/api/throughput");
    expect([throughput.status, throughput.body.stepS, Array.isArray(throughput.body.buckets)]).toEqual([200, 1, true]);
  });

  it("routes: the page and its files with a strict CSP, a base path, 404 for unknown routes, 405 with Allow for wrong methods", async () => {
    const h = harness();
    const server: BackgroundJobServer<unknown> = await h.start({ handlers: { ok: { handle: () => undefined } } });
    // Actions on (readOnly: false), so unsafe methods reach the routing and its 405s.
    const dashboard = createDashboard({ backend: server.backend, basePath: "/admin/jobs", readOnly: false });

    const page = await call<string>(dashboard, "/admin/jobs/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.body).toMatch(/<html/i);
    const csp = page.headers.get("content-security-policy")!;
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain("unsafe-inline");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    // No inline script in the page: every script has a src.
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    for (const [name, type] of [
      ["app.js", /^text\/javascript/],
      ["app.css", /^text\/css/],
    ] as const) {
      const file = await call(dashboard, `/admin/jobs/assets/${name}`);
      expect([file.status, file.headers.get("content-type")]).toEqual([200, expect.stringMatching(type)]);
      expect(file.headers.get("x-content-type-options")).toBe("nosniff");
    }
    const redirect = await call(dashboard, "/admin/jobs");
    expect([redirect.status, redirect.headers.get("location")]).toEqual([308, "/admin/jobs/"]);

    const cases: [string, string, number, string][] = [
      ["GET", "/admin/jobs/assets/secret.txt", 404, "NOT_FOUND"],
      ["GET", "/admin/jobs/assets/__proto__", 404, "NOT_FOUND"],
      ["GET", "/admin/jobs/api/nothing", 404, "NOT_FOUND"],
      ["GET", "/elsewhere/api/overview", 404, "NOT_FOUND"],
      ["PUT", "/admin/jobs/api/overview", 405, "METHOD_NOT_ALLOWED"],
      ["GET", `/admin/jobs/api/jobs/${"0".repeat(26)}/retry`, 405, "METHOD_NOT_ALLOWED"],
      ["GET", "/admin/jobs/api/jobs/retry", 405, "METHOD_NOT_ALLOWED"],
      ["POST", "/admin/jobs/assets/app.js", 405, "METHOD_NOT_ALLOWED"],
    ];
    for (const [method, path, status, code] of cases) {
      const answer = await call<{ error: { code: string; message: string } }>(dashboard, path, { method, site: "same-origin" });
      expect({ method, path, status: answer.status, code: answer.body.error?.code }).toEqual({ method, path, status, code });
    }
    const wrong = await call(dashboard, "/admin/jobs/api/overview", { method: "DELETE", site: "same-origin" });
    expect(wrong.headers.get("allow")).toBe("GET");
  });

  it("createDashboard refuses bad options at once", async () => {
    const h = harness();
    const server = await h.start({ handlers: { ok: { handle: () => undefined } } });
    const bad: unknown[] = [
      { backend: {} },
      { backend: server.backend, basePath: "jobs" },
      { backend: server.backend, basePath: "/a//b" },
      { backend: server.backend, readOnly: "yes" },
      { backend: server.backend, authorize: true },
      { backend: server.backend, clock: {} },
    ];
    for (const options of bad) expect(() => createDashboard(options as never)).toThrow(expect.objectContaining({ code: "INVALID_CONFIG" }));
  });
});
