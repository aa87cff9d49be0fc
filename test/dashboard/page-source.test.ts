/**
 * D6 without a browser: how the page writes ids, durations and sizes, the
 * chart's downsampling, and what its source never does (build
 * DOM from HTML strings, set a style attribute, run inline script), which
 * the page's CSP and escaping depend on. The page itself is checked in
 * Chromium by page.test.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { formatBytes, formatDuration, shortId } from "../../packages/runtime/dashboard-page/src/display-format.js";
import { downsample } from "../../packages/runtime/dashboard-page/src/line-chart.js";

const PAGE = fileURLToPath(new URL("../../packages/runtime/dashboard-page/", import.meta.url));

describe("dashboard page source (D6)", () => {
  it("shows ids by their last 6 characters, durations and sizes in readable units", () => {
    expect(shortId("01jcz7q7d5c3x8y9z0abcdefgh")).toBe("cdefgh");
    expect(shortId("abc")).toBe("abc");
    expect([840, 1_234, 12_345, 245_000, 3 * 3_600_000 + 120_000, 2 * 86_400_000 + 4 * 3_600_000].map(formatDuration)).toEqual([
      "840 ms",
      "1.23 s",
      "12.3 s",
      "4 m 05 s",
      "3 h 02 m",
      "2 d 04 h",
    ]);
    expect(formatDuration(null)).toBe("–");
    expect([0, 1023, 1024, 12_345_678, null].map(formatBytes)).toEqual(["0 B", "1023 B", "1.00 KiB", "11.8 MiB", "–"]);
  });

  it("keeps each slice's peak when downsampling (the axis: axis-ticks.test.ts)", () => {
    const points = Array.from({ length: 100 }, (_, i) => [i * 1_000, i === 37 ? 500 : 1] as const);
    const down = downsample(points, 0, 100_000, 10);
    expect(down).toHaveLength(10);
    expect(down[3]).toEqual([30_000, 500]);
    expect(downsample(points.slice(0, 5), 0, 5_000, 10)).toHaveLength(5);
  });

  it("never builds DOM from HTML strings, sets a style attribute or runs inline script", () => {
    const dir = `${PAGE}src/`;
    for (const file of readdirSync(dir)) {
      const source = readFileSync(`${dir}${file}`, "utf8").replace(/\/\*\*[\s\S]*?\*\//g, "");
      expect(source, file).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment|\beval\(|new Function/);
      expect(source, file).not.toMatch(/setAttribute\(\s*["']style["']|["']style["']\s*:/);
    }
    const html = readFileSync(`${PAGE}index.html`, "utf8");
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).not.toMatch(/\sstyle=|<style/);
    expect(html).not.toMatch(/(src|href)="(\/|https?:)/); // relative URLs only: works under any base path
  });
});
