// The queue gauges' refresher (metrics/queue-gauge-refresher.ts) never hands over counts older than
// those it already handed over: its read at start and a later read may overlap on a busy server, and
// the one that started first may end last. A real SQLite backend; its first count read is held until
// after a later read has been handed over.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { sqlite } from "@later/runtime/sqlite";
import { ManualClock } from "@later/runtime/testing";
import { QueueGaugeRefresher } from "../../packages/runtime/src/metrics/queue-gauge-refresher.js";
import type { QueueReading, ServerMetrics } from "../../packages/runtime/src/metrics/server-metrics.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `backend` with its first `inspect.stageCounts` answer held until `release()`: read at once, returned later. */
function holdingFirstCount(backend: Backend): { backend: Backend; release: () => void; held: Promise<void> } {
  let release = () => {};
  const gate = new Promise<void>((r) => (release = r));
  let reached = () => {};
  const held = new Promise<void>((r) => (reached = r));
  let first = true;
  const inspect = new Proxy(backend.inspect, {
    get(target, p) {
      const v = Reflect.get(target, p) as unknown;
      if (p !== "stageCounts" || typeof v !== "function") return typeof v === "function" ? v.bind(target) : v;
      return async (...args: unknown[]) => {
        const counts = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (first) {
          first = false;
          reached();
          await gate;
        }
        return counts;
      };
    },
  });
  const wrapped = new Proxy(backend, { get: (target, p) => (p === "inspect" ? inspect : Reflect.get(target, p)) });
  return { backend: wrapped, release, held };
}

it("M2: a read that ends after a later one has is dropped: the gauges never go back to older counts", async () => {
  const dir = mkdtempSync(join(tmpdir(), "later-gauges-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const real = sqlite({ file: join(dir, "jobs.db"), namespace: "gauges" });
  await real.open();
  cleanups.push(() => real.close());
  await real.migrations.up();
  const clock = new ManualClock(1_900_000_000_000);
  const job = () => ({ id: newJobId(clock.now()), jobType: "a", payload: "{}", runAt: clock.now(), retryPolicy: null });
  await real.jobs.insertMany({ jobs: [job()], now: clock.now() });

  const readings: QueueReading[] = [];
  const metrics = { queueRead: (r: QueueReading) => readings.push(r) } as unknown as ServerMetrics;
  const { backend, release, held } = holdingFirstCount(real);
  const errors: unknown[] = [];
  const refresher = new QueueGaugeRefresher({ backend, clock, onEvent: (e) => errors.push(e) }, { metrics, logLag: null });
  cleanups.push(() => refresher.stop());
  refresher.start(); // the read at start: its counts (one job) read, then held
  await held;
  await real.jobs.insertMany({ jobs: [job()], now: clock.now() });
  await refresher.runOnce(); // a later read, handed over first: two jobs
  expect(readings.map((r) => r.stages.enqueued)).toEqual([2]);
  release();
  await refresher.stop(); // awaits the read at start
  expect(
    readings.map((r) => r.stages.enqueued),
    "the read at start, older, is dropped",
  ).toEqual([2]);
  expect(errors).toEqual([]);
});
