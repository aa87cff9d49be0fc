/**
 * X4 through the dashboard's API on every backend: pause and resume of a
 * job type and a topic, each with an audit event, the overview's `paused`
 * list, unknown names 404 with nothing written, and the security defaults
 * (read-only without `authorize`, cross-site refused).
 */
import { describe, expect, it } from "vitest";
import { topic } from "@later/runtime";
import { createDashboard, type DashboardActionEvent } from "@later/runtime/dashboard";
import { BACKENDS } from "../conformance/backends.js";
import { useHarness } from "../conformance/harness.js";
import { act, call } from "./dashboard-client.js";

type ErrorBody = { error: { code: string; message: string } };

describe.each(BACKENDS)("dashboard pause and resume on $name", (entry) => {
  const harness = useHarness(entry);

  it("X4: pause and resume a job type and a topic: 200 with changed and an audit event; the overview lists them; unknown 404; read-only and cross-site 403", async () => {
    const h = harness();
    const server = await h.start({ topics: [topic("ledger", 2)], handlers: { flaky: { handle: () => undefined } } });
    // The dashboard handles nothing: the type is known from the server's row (its start-up heartbeat).
    await server.publisher.enqueue("flaky", {});
    const events: DashboardActionEvent[] = [];
    const dashboard = createDashboard({ backend: server.backend, authorize: () => true, onAction: (e) => events.push(e) });
    const paused = await act(dashboard, "/api/queues/flaky/pause");
    expect([paused.status, paused.body]).toEqual([200, { action: "pause", jobType: "flaky", changed: true }]);
    expect((await act(dashboard, "/api/queues/flaky/pause")).body).toEqual({ action: "pause", jobType: "flaky", changed: false });
    expect((await act(dashboard, "/api/topics/ledger/pause")).body).toEqual({ action: "pause", topic: "ledger", changed: true });
    const overview = await call<{ paused: unknown[] }>(dashboard, "/api/overview");
    expect(overview.body.paused).toEqual([
      { jobType: "flaky", pausedAt: expect.any(Number) },
      { topic: "ledger", pausedAt: expect.any(Number) },
    ]);
    expect(await server.listPaused()).toHaveLength(2);
    expect(events.map((e) => [e.action, e.target, e.count])).toEqual([
      ["pause", { jobType: "flaky" }, 1],
      ["pause", { jobType: "flaky" }, 0],
      ["pause", { topic: "ledger" }, 1],
    ]);
    const unknown = await act<ErrorBody>(dashboard, "/api/queues/nope/pause");
    expect([unknown.status, unknown.body.error.code]).toEqual([404, "JOB_TYPE_NOT_FOUND"]);
    expect((await act<ErrorBody>(dashboard, "/api/topics/nope/resume")).body.error.code).toBe("UNKNOWN_TOPIC");
    // Without authorize the dashboard is read-only; a cross-site action is refused.
    const readOnly = createDashboard({ backend: server.backend });
    expect((await act<ErrorBody>(readOnly, "/api/queues/flaky/resume")).status).toBe(403);
    const open = createDashboard({ backend: server.backend, readOnly: false });
    expect((await call(open, "/api/queues/flaky/resume", { method: "POST", site: "cross-site" })).status).toBe(403);
    expect((await act(dashboard, "/api/queues/flaky/resume")).body).toEqual({ action: "resume", jobType: "flaky", changed: true });
    expect((await act(dashboard, "/api/topics/ledger/resume")).body).toEqual({ action: "resume", topic: "ledger", changed: true });
    expect(await server.listPaused()).toEqual([]);
  });
});
