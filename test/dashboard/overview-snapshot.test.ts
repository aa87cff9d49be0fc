/**
 * D7 on every backend: one overview is computed at a time and served for a
 * second to every open page. Twenty pages polling at once cost one
 * computation; within the second they cost nothing more; after it, one
 * more. The reads are counted by a wrapper of the real backend's `inspect`
 * and `log` stores (no database mock), on a manual clock.
 */
import { describe, expect, it } from "vitest";
import { createDashboard, type Overview } from "@later/runtime/dashboard";
import type { Backend } from "@later/runtime/internal";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "../conformance/backends.js";
import { useHarness } from "../conformance/harness.js";
import { call } from "./dashboard-client.js";

/** `backend` with every call of its `inspect` and `log` methods counted in `reads` (then passed to the real one). */
function countingReads(backend: Backend): { backend: Backend; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  const counted = (store: "inspect" | "log") =>
    new Proxy(backend[store] as object, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const name = `${store}.${String(prop)}`;
          reads.set(name, (reads.get(name) ?? 0) + 1);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const inspect = counted("inspect");
  const log = counted("log");
  const wrapped = new Proxy(backend, {
    get(target, prop) {
      if (prop === "inspect") return inspect;
      if (prop === "log") return log;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { backend: wrapped, reads };
}

const total = (reads: Map<string, number>) => [...reads.values()].reduce((a, b) => a + b, 0);

describe.each(BACKENDS)("overview snapshot (D7) on $name", (entry) => {
  const harness = useHarness(entry);

  it("20 concurrent pollers cost one computation per second", async () => {
    const h = harness();
    const server = await h.start({ handlers: { ok: { handle: () => undefined } } });
    await server.publisher.enqueue("ok", {});
    const clock = new ManualClock(Date.now());
    const { backend, reads } = countingReads(server.backend);
    const dashboard = createDashboard({ backend, clock });
    const poll = async () => {
      const answers = await Promise.all(Array.from({ length: 20 }, () => call<Overview>(dashboard, "/api/overview")));
      for (const a of answers) expect(a.status).toBe(200);
      return answers.map((a) => a.body);
    };

    const first = await poll();
    expect(reads.get("inspect.stageCounts")).toBe(1);
    const perComputation = total(reads);
    expect(new Set(first.map((o) => JSON.stringify(o))).size).toBe(1);
    expect(first[0]!.at).toBe(clock.now());

    clock.advance(999);
    const within = await poll();
    expect(total(reads)).toBe(perComputation);
    expect(within[0]!.at).toBe(first[0]!.at);

    clock.advance(1);
    const next = await poll();
    expect(reads.get("inspect.stageCounts")).toBe(2);
    expect(total(reads)).toBe(2 * perComputation);
    expect(next[0]!.at).toBe(first[0]!.at + 1_000);

    // Ten seconds of 20 pages polling every 250 ms: one computation a second.
    for (let i = 0; i < 40; i++) {
      clock.advance(250);
      await poll();
    }
    expect(reads.get("inspect.stageCounts")).toBe(12);
    expect(total(reads)).toBe(12 * perComputation);
  });

  it("a failed computation is reported to onError (not to the page) and not served again: the next poll computes anew", async () => {
    const h = harness();
    const server = await h.start({ handlers: { ok: { handle: () => undefined } } });
    const clock = new ManualClock(Date.now());
    let fail = true;
    const inspect = new Proxy(server.backend.inspect, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === "stageCounts" && fail) return () => Promise.reject(new Error("connection reset"));
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const backend = new Proxy(server.backend, {
      get(target, prop) {
        if (prop === "inspect") return inspect;
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const errors: unknown[] = [];
    const dashboard = createDashboard({ backend, clock, onError: (error) => errors.push(error) });
    const failed = await call<{ error: { code: string; message: string } }>(dashboard, "/api/overview");
    expect([failed.status, failed.body.error.code]).toEqual([500, "INTERNAL"]);
    expect(failed.body.error.message).not.toContain("connection reset");
    expect(errors).toEqual([new Error("connection reset")]);
    fail = false;
    expect((await call(dashboard, "/api/overview")).status).toBe(200);
  });
});
