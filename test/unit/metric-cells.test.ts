// The cell-backed prom-client metrics (metrics/metric-cells.ts) export exactly what prom-client's own
// counter, gauge and histogram would for the same observations, so the registry's text is unchanged;
// also in an application's prom-client 15 Registry (the runtime is built on 14), in both of its formats.
import { describe, expect, it } from "vitest";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import {
  Counter as Counter15,
  Gauge as Gauge15,
  Histogram as Histogram15,
  Registry as Registry15,
  type RegistryContentType as Registry15ContentType,
} from "prom-client-15";
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

/** The same observations into prom-client 15's own metrics and into the cells, each in a 15 Registry of `contentType`. */
async function renderedIn15(contentType: Registry15ContentType) {
  const ours = new Registry15<Registry15ContentType>();
  const theirs = new Registry15<Registry15ContentType>();
  for (const r of [ours, theirs]) {
    r.setContentType(contentType);
    r.setDefaultLabels({ instance: "i-1" });
  }
  // The cells are prom-client 14's classes; a user's 15 Registry is the `metricsRegistry` they may give (its type is accepted as 14's).
  const registry: Registry = ours;
  const cellCounter = new CellCounter({ name: "c_total", help: "c", labelNames: ["job_type", "stage"], registry });
  const counter = new Counter15({ name: "c_total", help: "c", labelNames: ["job_type", "stage"], registers: [theirs] });
  const cellHistogram = new CellHistogram({ name: "h_seconds", help: "h", labelNames: ["job_type"], registry }, BOUNDS);
  const histogram = new Histogram15({ name: "h_seconds", help: "h", labelNames: ["job_type"], buckets: BOUNDS, registers: [theirs] });
  const cellGauge = new CellGauge({ name: "g", help: "g", labelNames: ["topic"], registry }, "sum");
  const gauge = new Gauge15({ name: "g", help: "g", labelNames: ["topic"], registers: [theirs] });
  for (const [i, v] of VALUES.entries()) {
    const job_type = i % 3 === 0 ? "a" : "b";
    const stage = i % 2 === 0 ? "success" : "running";
    cellCounter.cell({ job_type, stage }).value++;
    counter.inc({ job_type, stage });
    cellHistogram.cell({ job_type }).observe(v);
    histogram.observe({ job_type }, v);
  }
  cellGauge.addSource(() => [{ labels: { topic: "t" }, value: 2 }]);
  cellGauge.addSource(() => [{ labels: { topic: "t" }, value: 3 }]);
  gauge.set({ topic: "t" }, 5);
  const json = async (r: Registry15<Registry15ContentType>) =>
    (await r.getMetricsAsJSON()).map((m) => ({ name: m.name, type: m.type, values: m.values.map((v) => ({ ...v, exemplar: undefined })) }));
  return { ours: await ours.metrics(), theirs: await theirs.metrics(), oursJson: await json(ours), theirsJson: await json(theirs) };
}

describe("cell metrics in a prom-client 15 Registry (an application's `metricsRegistry`)", () => {
  it("export the same text and JSON as 15's own metrics, in the Prometheus text format", async () => {
    const r = await renderedIn15(Registry15.PROMETHEUS_CONTENT_TYPE);
    expect(r.ours).toBe(r.theirs);
    expect(r.ours).toContain('c_total{job_type="a",stage="success",instance="i-1"} 2');
    expect(r.ours).toContain('h_seconds_bucket{le="+Inf",instance="i-1",job_type="b"} 8');
    expect(r.ours).toContain('g{topic="t",instance="i-1"} 5');
    expect(r.oursJson).toEqual(r.theirsJson);
  });

  it("export the same text as 15's own metrics in OpenMetrics (a counter's name without `_total`, its samples with it)", async () => {
    const r = await renderedIn15(Registry15.OPENMETRICS_CONTENT_TYPE);
    expect(r.ours).toBe(r.theirs);
    expect(r.ours).toContain("# TYPE c counter");
    expect(r.ours).toContain('c_total{job_type="a",stage="success",instance="i-1"} 2');
    expect(r.ours).not.toContain("c_total_total");
    expect(r.ours.endsWith("# EOF\n")).toBe(true);
    expect(r.oursJson).toEqual(r.theirsJson);
  });
});
