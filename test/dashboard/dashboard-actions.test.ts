/**
 * D4 actions and the dashboard's security defaults on every backend: retry
 * and delete of one job and of every job matching the list's filter, each
 * with an audit event; refusals change nothing; a dashboard without
 * `authorize` (read-only by default), a read-only one, a cross-site action
 * and an `authorize` that says no are 403; cancel answers 501 until the
 * runtime has it (pause and resume: dashboard-pause.test.ts).
 */
import { describe, expect, it } from "vitest";
import { RetryPolicy } from "@later/runtime";
import { createDashboard, type DashboardActionEvent } from "@later/runtime/dashboard";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "../conformance/backends.js";
import { settled, useHarness, type Harness } from "../conformance/harness.js";
import { act, call } from "./dashboard-client.js";

type ErrorBody = { error: { code: string; message: string } };

describe.each(BACKENDS)("dashboard actions on $name", (entry) => {
  const harness = useHarness(entry);

  /** A server whose "flaky" jobs fail their first run (no retries) and succeed after; three failed, one succeeded. */
  async function seeded(h: Harness) {
    const runs = new Map<string, number>();
    const server = await h.start({
      handlers: {
        flaky: {
          handle: (ctx) => {
            const n = runs.get(ctx.jobId) ?? 0;
            runs.set(ctx.jobId, n + 1);
            if (n === 0) throw new Error("first run fails");
          },
          retry: () => RetryPolicy.noRetries(),
        },
        other: {
          handle: () => {
            throw new Error("always");
          },
          retry: () => RetryPolicy.noRetries(),
        },
        ok: { handle: () => undefined },
      },
    });
    const failed = [await server.publisher.enqueue("flaky", {}), await server.publisher.enqueue("flaky", {})];
    const otherFailed = await server.publisher.enqueue("other", {});
    const succeeded = await server.publisher.enqueue("ok", {});
    for (const id of [...failed, otherFailed, succeeded]) await settled(() => server.backend.inspect.jobGet({ id }), id);
    const stage = async (id: string) => (await server.backend.inspect.jobGet({ id }))?.stage ?? "gone";
    return { server, failed, otherFailed, succeeded, stage };
  }

  it("retry and delete one job: 200 with an audit event; refused (409) and unknown (404) change nothing", async () => {
    const h = harness();
    const { server, failed, succeeded, stage } = await seeded(h);
    const clock = new ManualClock(Date.UTC(2026, 11, 4, 12));
    const events: DashboardActionEvent[] = [];
    const dashboard = createDashboard({ backend: server.backend, clock, authorize: () => true, onAction: (e) => events.push(e) });

    const retried = await act(dashboard, `/api/jobs/${failed[0]}/retry`);
    expect([retried.status, retried.body]).toEqual([200, { action: "retry", jobIds: [failed[0]], count: 1 }]);
    expect((await settled(() => server.backend.inspect.jobGet({ id: failed[0]! }))).stage).toBe("success");

    const refused = await act<ErrorBody>(dashboard, `/api/jobs/${succeeded}/retry`);
    expect([refused.status, refused.body.error.code]).toEqual([409, "JOB_ACTION_REFUSED"]);
    const unknown = await act<ErrorBody>(dashboard, `/api/jobs/${"0".repeat(26)}`, "DELETE");
    expect([unknown.status, unknown.body.error.code]).toEqual([404, "JOB_NOT_FOUND"]);
    expect(await stage(succeeded)).toBe("success");

    const deleted = await act(dashboard, `/api/jobs/${succeeded}`, "DELETE");
    expect([deleted.status, deleted.body]).toEqual([200, { action: "delete", jobIds: [succeeded], count: 1 }]);
    expect(await stage(succeeded)).toBe("gone");
    expect((await call(dashboard, `/api/jobs/${succeeded}`)).status).toBe(404);
    expect(events).toEqual([
      { action: "retry", jobIds: [failed[0]], count: 1, at: clock.now() },
      { action: "delete", jobIds: [succeeded], count: 1, at: clock.now() },
    ]);
  });

  it("retry and delete every job matching the list's filter; topic, partition and q are refused for them", async () => {
    const h = harness();
    const { server, failed, otherFailed, succeeded, stage } = await seeded(h);
    const events: DashboardActionEvent[] = [];
    const dashboard = createDashboard({ backend: server.backend, authorize: () => true, onAction: (e) => events.push(e) });

    const retried = await act(dashboard, "/api/jobs/retry?stage=failed&type=flaky");
    expect([retried.status, retried.body]).toEqual([200, { action: "retry", filter: { stage: "failed", jobType: "flaky" }, count: 2 }]);
    for (const id of failed) expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
    expect(await stage(otherFailed)).toBe("failed");

    for (const query of ["topic=orders", "q=fl", "stage=failed&partition=1"]) {
      const refused = await act<ErrorBody>(dashboard, `/api/jobs/delete?${query}`);
      expect([query, refused.status, refused.body.error.code]).toEqual([query, 400, "INVALID_ARGUMENT"]);
    }
    const badStage = await act<ErrorBody>(dashboard, "/api/jobs/retry?stage=success");
    expect([badStage.status, badStage.body.error.code]).toEqual([400, "INVALID_ARGUMENT"]);

    const deleted = await act(dashboard, "/api/jobs/delete?stage=success");
    expect([deleted.status, deleted.body]).toEqual([200, { action: "delete", filter: { stage: "success" }, count: 3 }]);
    expect(await Promise.all([...failed, succeeded].map(stage))).toEqual(["gone", "gone", "gone"]);
    expect(await stage(otherFailed)).toBe("failed");
    expect(events.map((e) => [e.action, e.count, e.filter])).toEqual([
      ["retry", 2, { stage: "failed", jobType: "flaky" }],
      ["delete", 3, { stage: "success" }],
    ]);
  });

  it("security: read-only without authorize; actions need same-origin (or no browser); read-only refuses them; authorize gates every request", async () => {
    const h = harness();
    const { server, failed, stage } = await seeded(h);
    const path = `/api/jobs/${failed[0]}/retry`;
    // Safe by default: without authorize (and without readOnly: false) every action is READ_ONLY, whoever sends it.
    const byDefault = createDashboard({ backend: server.backend });
    for (const site of ["same-origin", "cross-site", undefined] as const) {
      const refused = await call<ErrorBody>(byDefault, path, { method: "POST", ...(site ? { site } : {}) });
      expect([site, refused.status, refused.body.error.code]).toEqual([site, 403, "READ_ONLY"]);
    }
    expect((await call(byDefault, "/api/jobs")).status).toBe(200);
    // Turned on without authorize (the README's warning): the same-origin rule still holds for browsers.
    const open = createDashboard({ backend: server.backend, readOnly: false });

    for (const site of ["cross-site", "same-site", "none"] as const) {
      const refused = await call<ErrorBody>(open, path, { method: "POST", site });
      expect([site, refused.status, refused.body.error.code]).toEqual([site, 403, "FORBIDDEN"]);
    }
    expect(await stage(failed[0]!)).toBe("failed");

    const readOnly = createDashboard({ backend: server.backend, readOnly: true });
    for (const site of ["same-origin", undefined] as const) {
      const refused = await call<ErrorBody>(readOnly, path, { method: "POST", ...(site ? { site } : {}) });
      expect([refused.status, refused.body.error.code]).toEqual([403, "READ_ONLY"]);
    }
    expect((await call(readOnly, "/api/jobs")).status).toBe(200);
    expect(await stage(failed[0]!)).toBe("failed");

    const seen: string[] = [];
    const guarded = createDashboard({
      backend: server.backend,
      authorize: (request) => {
        seen.push(new URL(request.url).pathname);
        return request.headers.get("authorization") === "Bearer secret";
      },
    });
    for (const p of ["/", "/assets/app.js", "/api/overview", path]) {
      const refused = await call<ErrorBody>(guarded, p, { method: p === path ? "POST" : "GET" });
      expect([p, refused.status, refused.body.error?.code]).toEqual([p, 403, "FORBIDDEN"]);
    }
    expect(seen).toEqual(["/", "/assets/app.js", "/api/overview", path]);
    expect(await stage(failed[0]!)).toBe("failed");
    // Allowed by authorize, a cross-site action (a token in a header, no ambient cookie) goes through.
    const allowed = await call(guarded, path, { method: "POST", site: "cross-site", headers: { authorization: "Bearer secret" } });
    expect(allowed.status).toBe(200);
    // A script (no Sec-Fetch-Site) may act on an open dashboard.
    const script = await call(open, `/api/jobs/${failed[1]}/retry`, { method: "POST" });
    expect(script.status).toBe(200);
  });

  it("cancel answers 501 NOT_IMPLEMENTED (routes present), after the same security checks", async () => {
    const h = harness();
    const { server, failed } = await seeded(h);
    const dashboard = createDashboard({ backend: server.backend, readOnly: false });
    for (const path of [`/api/jobs/${failed[0]}/cancel`, "/api/jobs/cancel?stage=running"]) {
      const answer = await act<ErrorBody>(dashboard, path);
      expect([path, answer.status, answer.body.error.code]).toEqual([path, 501, "NOT_IMPLEMENTED"]);
      expect((await call<ErrorBody>(dashboard, path, { method: "POST", site: "cross-site" })).status).toBe(403);
    }
    const readOnly = createDashboard({ backend: server.backend, readOnly: true, authorize: () => true });
    expect((await act(readOnly, "/api/jobs/cancel?stage=running")).status).toBe(403);
  });
});
