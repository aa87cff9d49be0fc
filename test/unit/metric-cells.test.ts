// The cell-backed prom-client metrics (metrics/metric-cells.ts) export exactly what prom-client's own
// counter, gauge and histogram would for the same observations, so the registry's text is unchanged.
import { describe, expect, it } from "vitest";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { CellCounter, CellGauge, CellHistogram } from "../../packages/runtime/src/metrics/metric-cells.js";

const BOUNDS = [0.01, 0.1, 1, 10, 3600];
const VALUES = [0, 0.005, 0.01, 0.02, 0.1, 0.5, 1, 9.99, 10, 42, 3600, 7200];

describe("cell metrics", () => {
  it("export the same text as prom-client's counter, gauge and histogram", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const cellCounter = new CellCounter({ name: "c_total", help: "c", labelNames: ["job_type", "stage"], registry: ours });
    const counter = new Counter({ name: "c_total", help: "c", labelNames: ["job_type", "stage"], registers: [theirs] });
    const cellHistogram = new CellHistogram({ name: "h_seconds", help: "h", labelNames: ["job_type"], registry: ours }, BOUNDS);
    const histogram = new Histogram({ name: "h_seconds", help: "h", labelNames: ["job_type"], buckets: BOUNDS, registers: [theirs] });
    const cellGauge = new CellGauge({ name: "g", help: "g", labelNames: ["topic"], registry: ours }, "max");
    const gauge = new Gauge({ name: "g", help: "g", labelNames: ["topic"], registers: [theirs] });
    for (const [i, v] of VALUES.entries()) {
      const job_type = i % 3 === 0 ? "a" : "b";
      const stage = i % 2 === 0 ? "success" : "running";
      cellCounter.cell({ job_type, stage }).value++;
      counter.inc({ job_type, stage });
      cellHistogram.cell({ job_type }).observe(v);
      histogram.observe({ job_type }, v);
    }
    // Two sources of one gauge series (two servers reading the shared database): merged with max.
    cellGauge.addSource(() => [{ labels: { topic: "t" }, value: 3 }]);
    const remove = cellGauge.addSource(() => [
      { labels: { topic: "t" }, value: 5 },
      { labels: { topic: "u" }, value: 1 },
    ]);
    gauge.set({ topic: "t" }, 5);
    gauge.set({ topic: "u" }, 1);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    const json = async (r: Registry) =>
      (await r.getMetricsAsJSON()).map((m) => ({ name: m.name, type: m.type, values: m.values.map((v) => ({ ...v, exemplar: undefined })) }));
    expect(await json(ours)).toEqual(await json(theirs));
    // A removed source's series leave.
    remove();
    gauge.reset();
    gauge.set({ topic: "t" }, 3);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
