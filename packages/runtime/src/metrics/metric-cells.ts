/**
 * prom-client metrics whose values live in plain cells, so that recording
 * on a worker's path is a property increment (a counter) or a bucket search
 * over a short array (a histogram): no label hashing, no validation, no
 * allocation per job. prom-client's own `inc`/`observe` hash and validate
 * the labels on every call, about 0.5 µs and 0.9 µs here, which is several
 * per cent of a job on SQLite (about 20 µs a job); the cells are read only
 * when the registry is scraped (`get()`), where that work is done once per
 * series instead of once per job.
 *
 * Each class is the prom-client class of its type (so a registry, `getSingleMetric`
 * and `instanceof` see an ordinary counter, gauge or histogram), with `get()`
 * answering from its cells; nothing calls its `inc`/`set`/`observe`.
 *
 * The classes are prom-client 14's (the runtime's dependency: 15 requires
 * `@opentelemetry/api` at load), and they render the same in an application's
 * prom-client 15 `Registry` given as `metricsRegistry`: each metric carries
 * its `type` (15's registry reads it from the metric, 14 never set it), the
 * name in an answer is the metric's current `name` (15's OpenMetrics format
 * renames a counter to its name without `_total` before it asks), and a
 * histogram answers `getForPromString()` (which 15 prefers for its text) in
 * 15's shape, the series' labels as `sharedLabels`, so its label order is 15's.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Label values by label name. */
export type Labels = Readonly<Record<string, string>>;

/** One label set's value of a counter or gauge. */
export interface ValueCell {
  readonly labels: Labels;
  value: number;
}

/** One label set of a histogram: observations per bucket (not cumulative; the last is past every bound), their sum and count. */
export class HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** Records one value (seconds). */
  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** Name, help, label names and registry of one metric. */
export interface CellMetricConfig {
  name: string;
  help: string;
  labelNames: readonly string[];
  registry: Registry;
}

type Exported = { labels: Record<string, string | number>; value: number; metricName?: string; sharedLabels?: Labels };
type Answer = { name: string; help: string; type: never; aggregator: never; values: Exported[] };

/** The cells of one metric by label key (the label values joined), made on first use and kept for the process's life. */
class CellMap<T> {
  private readonly cells = new Map<string, T>();
  constructor(private readonly make: (labels: Labels) => T) {}

  /** The cell of `labels`; `labels` is kept as the cell's own when it is new, so give a fresh object. */
  cell(labels: Labels): T {
    const key = Object.values(labels).join("\u0000");
    let c = this.cells.get(key);
    if (c === undefined) {
      c = this.make(labels);
      this.cells.set(key, c);
    }
    return c;
  }

  values(): IterableIterator<T> {
    return this.cells.values();
  }
}

/** A counter whose series are {@link ValueCell}s, incremented in place (`cell.value++`). */
export class CellCounter extends Counter<string> {
  /** Set by prom-client's constructor; a 15 registry may change it (see the module's comment). */
  declare name: string;
  /** What prom-client 15's registry reads from the metric itself. */
  readonly type = "counter";
  private readonly map = new CellMap<ValueCell>((labels) => ({ labels, value: 0 }));

  constructor(private readonly config: CellMetricConfig) {
    super({ name: config.name, help: config.help, labelNames: config.labelNames, registers: [config.registry] });
  }

  cell(labels: Labels): ValueCell {
    return this.map.cell(labels);
  }

  override async get(): Promise<never> {
    const values = [...this.map.values()].map((c) => ({ labels: { ...c.labels }, value: c.value }));
    return { name: this.name, help: this.config.help, type: "counter", aggregator: "sum", values } as Answer as never;
  }
}

/**
 * A gauge read at scrape time from its sources (one per server that
 * registered one), merged by label set with `merge`: `max` for a value read
 * from the shared database (every server reports the same one), `sum` for
 * one that counts this process's own things.
 */
export class CellGauge extends Gauge<string> {
  /** Set by prom-client's constructor. */
  declare name: string;
  /** What prom-client 15's registry reads from the metric itself. */
  readonly type = "gauge";
  private readonly sources = new Set<() => Iterable<ValueCell>>();

  constructor(
    private readonly config: CellMetricConfig,
    private readonly merge: "max" | "sum",
  ) {
    super({ name: config.name, help: config.help, labelNames: config.labelNames, registers: [config.registry] });
  }

  /** Adds a source of series; returns the function that removes it (a stopped server's series disappear). */
  addSource(source: () => Iterable<ValueCell>): () => void {
    this.sources.add(source);
    return () => this.sources.delete(source);
  }

  override async get(): Promise<never> {
    const merged = new Map<string, Exported>();
    for (const source of this.sources) {
      for (const c of source()) {
        const key = Object.values(c.labels).join("\u0000");
        const seen = merged.get(key);
        if (seen === undefined) merged.set(key, { labels: { ...c.labels }, value: c.value });
        else seen.value = this.merge === "max" ? Math.max(seen.value, c.value) : seen.value + c.value;
      }
    }
    return { name: this.name, help: this.config.help, type: "gauge", aggregator: this.merge, values: [...merged.values()] } as Answer as never;
  }
}

/** A histogram whose series are {@link HistogramCell}s; exported with cumulative `le` buckets, `_sum` and `_count` as prom-client does. */
export class CellHistogram extends Histogram<string> {
  /** Set by prom-client's constructor. */
  declare name: string;
  /** What prom-client 15's registry reads from the metric itself. */
  readonly type = "histogram";
  private readonly map: CellMap<HistogramCell>;

  constructor(
    private readonly config: CellMetricConfig,
    readonly bounds: readonly number[],
  ) {
    super({ name: config.name, help: config.help, labelNames: config.labelNames, buckets: [...bounds], registers: [config.registry] });
    this.map = new CellMap((labels) => new HistogramCell(labels, bounds));
  }

  cell(labels: Labels): HistogramCell {
    return this.map.cell(labels);
  }

  /** The series with their labels in each sample (prom-client's `get()` shape, the one 14's registry renders and every registry's JSON holds). */
  override async get(): Promise<never> {
    return this.answer(false);
  }

  /** The series with their labels as `sharedLabels` beside `le` (prom-client 15's shape for its text; 14's registry never asks). */
  async getForPromString(): Promise<never> {
    return this.answer(true);
  }

  private answer(shared: boolean): never {
    const name = this.name;
    const values: Exported[] = [];
    const sample = (labels: Exported["labels"], own: Labels, value: number, metricName: string) =>
      values.push(shared ? { labels, sharedLabels: own, value, metricName } : { labels: { ...labels, ...own }, value, metricName });
    for (const c of this.map.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += c.counts[i]!;
        sample({ le: bound }, c.labels, cumulative, `${name}_bucket`);
      });
      sample({ le: "+Inf" }, c.labels, c.count, `${name}_bucket`);
      sample({}, c.labels, c.sum, `${name}_sum`);
      sample({}, c.labels, c.count, `${name}_count`);
    }
    return { name, help: this.config.help, type: "histogram", aggregator: "sum", values } as Answer as never;
  }
}
