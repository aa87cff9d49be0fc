/**
 * A small SVG line chart, drawn by hand (no chart library): a few series
 * over a time axis, a zero-based value axis with two to four gridlines at
 * round values (see {@link axisTicks}), a legend,
 * and a hover tooltip per x position (an SVG `<title>`, so its text is text).
 * Colours come from the series' class in app.css.
 */
import { axisTicks } from "./axis-ticks.js";
import { h, svg } from "./element.js";

export interface ChartSeries {
  name: string;
  /** `series-<name>` in app.css gives the stroke. */
  className: string;
  /** [time ms, value], ascending by time. */
  points: readonly (readonly [number, number])[];
}

export interface LineChartOptions {
  /** The time axis, ms. */
  from: number;
  to: number;
  series: readonly ChartSeries[];
  /** Writes a value (axis labels and tooltips). */
  formatValue: (v: number) => string;
  /** Writes a time on the axis and in tooltips. */
  formatTime: (ms: number) => string;
  /** Accessible description of the chart. */
  label: string;
  /** Hover columns: the x positions a tooltip is shown for (default: every point of the first series). */
  columns?: readonly number[];
  /** Height in the chart's units (its width is 600). Default 180. */
  height?: number;
  /** The value axis reaches at least this (an idle chart still reads in whole units). Default 1. */
  minTop?: number;
  /** The values are counts: the axis ticks are distinct integers. Default false. */
  integers?: boolean;
  /** Points further apart than this are not joined (a gap in the data stays a gap). Default: always joined. */
  gapMs?: number;
  /** A dot on every point (for sparse series, whose lone points draw no line). Default false. */
  dots?: boolean;
}

const WIDTH = 600;
const PAD = { left: 44, right: 8, top: 8, bottom: 22 };

/** The chart and its legend, in a `figure`. */
export function lineChart(options: LineChartOptions): HTMLElement {
  const { from, to, series, formatValue } = options;
  const HEIGHT = options.height ?? 180;
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const span = Math.max(1, to - from);
  let max = 0;
  for (const s of series) for (const [, v] of s.points) max = Math.max(max, v);
  const ticks = axisTicks(Math.max(max, options.minTop ?? 1), { integers: options.integers ?? false });
  const top = ticks.at(-1)!;
  const x = (t: number) => PAD.left + ((t - from) / span) * plotW;
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;

  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart", role: "img", "aria-label": options.label });
  for (const value of ticks) {
    chart.append(
      svg("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(value), y2: y(value), class: "grid" }),
      svg("text", { x: PAD.left - 4, y: y(value) + 4, class: "axis axis-y" }, formatValue(value)),
    );
  }
  chart.append(
    svg("text", { x: PAD.left, y: HEIGHT - 6, class: "axis axis-x-start" }, options.formatTime(from)),
    svg("text", { x: WIDTH - PAD.right, y: HEIGHT - 6, class: "axis axis-x-end" }, options.formatTime(to)),
  );
  for (const s of series) {
    if (s.points.length === 0) continue;
    const gap = options.gapMs ?? Number.POSITIVE_INFINITY;
    const d = s.points.map(([t, v], i) => `${i === 0 || t - s.points[i - 1]![0] > gap ? "M" : "L"}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join("");
    chart.append(svg("path", { d, class: `line ${s.className}` }));
    if (options.dots)
      for (const [t, v] of s.points) chart.append(svg("circle", { cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 2.5, class: `dot ${s.className}` }));
  }
  chart.append(hoverColumns(options, x, plotH));

  const legend = h("ul", { className: "legend" }, ...series.map((s) => h("li", null, h("span", { className: `swatch ${s.className}` }), s.name)));
  return h("figure", { className: "chart-figure" }, chart, legend);
}

/** Transparent columns, one per x position, each with a tooltip listing every series' value there. */
function hoverColumns(options: LineChartOptions, x: (t: number) => number, plotH: number): SVGGElement {
  const group = svg("g", { class: "hover" });
  const columns = options.columns ?? options.series[0]?.points.map(([t]) => t) ?? [];
  const values = options.series.map((s) => new Map(s.points.map(([t, v]) => [t, v])));
  columns.forEach((t, i) => {
    const left = i === 0 ? x(t) : (x(columns[i - 1]!) + x(t)) / 2;
    const right = i === columns.length - 1 ? x(t) + 1 : (x(t) + x(columns[i + 1]!)) / 2;
    const text = [options.formatTime(t), ...options.series.map((s, k) => `${s.name}: ${options.formatValue(values[k]!.get(t) ?? 0)}`)].join("\n");
    group.append(svg("rect", { x: left, y: PAD.top, width: Math.max(1, right - left), height: plotH, class: "hover-column" }, svg("title", {}, text)));
  });
  return group;
}

/**
 * At most `buckets` points: the samples grouped into equal time slices, the
 * largest value of each slice kept (a backlog's peaks stay visible).
 */
export function downsample(points: readonly (readonly [number, number])[], from: number, to: number, buckets: number): [number, number][] {
  if (points.length <= buckets) return points.map(([t, v]) => [t, v]);
  const width = Math.max(1, (to - from) / buckets);
  const out: [number, number][] = [];
  for (const [t, v] of points) {
    const slice = from + Math.floor((t - from) / width) * width;
    const last = out.at(-1);
    if (last && last[0] === slice) last[1] = Math.max(last[1], v);
    else out.push([slice, v]);
  }
  return out;
}
