/**
 * D6 polling, in headless Chromium on the page's own fake clock
 * (Playwright's `page.clock`, paused: timers fire only when the test moves
 * time): every 1/2/5/10 s or paused, the next poll armed after the last
 * response (a slow answer is never asked again meanwhile), nothing while
 * the tab is hidden and one poll at once when it shows again. Polls are
 * counted in the page (its `fetch` of `api/overview`), so every count is
 * exact when read, with no waiting on wall-clock time.
 */
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { createDashboard } from "@later/runtime/dashboard";
import { BACKENDS } from "../conformance/backends.js";
import { deferred, useHarness } from "../conformance/harness.js";
import { chromiumInstalled } from "../support/chromium.js";
import { chromiumPage } from "../support/chromium-page.js";

const sqliteEntry = BACKENDS.find((b) => b.name === "sqlite")!;
const START = Date.UTC(2026, 0, 5, 9, 0, 0);

/** `api/overview` requests the page has sent. */
const overviewCalls = (page: Page) => page.evaluate(() => (window as unknown as { __overviewCalls: number }).__overviewCalls);

/** Resolves when the page has finished `n` polls (its status's test signal). */
async function pollsDone(page: Page, n: number): Promise<void> {
  await page.waitForFunction((count) => Number(document.querySelector<HTMLElement>(".status")?.dataset.polls ?? 0) >= count, n, { timeout: 20_000 });
}

describe.skipIf(!chromiumInstalled && process.env.CI !== "true")("dashboard page polling (D6) in headless Chromium", () => {
  const harness = useHarness(sqliteEntry);

  it("polls at the chosen interval after the last response, never while paused or hidden", async () => {
    const server = await harness().start({ handlers: { noop: { handle: () => undefined } } });
    const chromium = await chromiumPage(createDashboard({ backend: server.backend }));
    const { base, page } = chromium;
    try {
      await page.addInitScript(() => {
        const w = window as unknown as { __overviewCalls: number };
        w.__overviewCalls = 0;
        const realFetch = window.fetch.bind(window);
        window.fetch = (input, init) => {
          if (String(input).startsWith("api/overview")) w.__overviewCalls++;
          return realFetch(input, init);
        };
        localStorage.setItem("later.dashboard.pollMs", "paused");
      });
      let hold: { promise: Promise<void>; resolve: () => void } | null = null;
      await page.route("**/api/overview", async (route) => {
        await hold?.promise;
        await route.continue();
      });
      await page.clock.install({ time: START });
      await page.goto(base);
      await pollsDone(page, 1);
      await page.clock.pauseAt(START + 60_000);
      expect(await overviewCalls(page)).toBe(1);

      // Every 2 s, from the last response.
      await page.selectOption("select[name='poll']", "2000");
      await page.clock.runFor(1_999);
      expect(await overviewCalls(page)).toBe(1);
      await page.clock.runFor(1);
      expect(await overviewCalls(page)).toBe(2);
      await pollsDone(page, 2);

      // A response that takes long: no poll until it arrives, then the next one 2 s after it.
      hold = deferred();
      await page.clock.runFor(2_000);
      expect(await overviewCalls(page)).toBe(3);
      await page.clock.runFor(30_000);
      expect(await overviewCalls(page)).toBe(3);
      hold.resolve();
      hold = null;
      await pollsDone(page, 3);
      await page.clock.runFor(1_999);
      expect(await overviewCalls(page)).toBe(3);
      await page.clock.runFor(1);
      expect(await overviewCalls(page)).toBe(4);
      await pollsDone(page, 4);

      // Every 10 s.
      await page.selectOption("select[name='poll']", "10000");
      await page.clock.runFor(9_999);
      expect(await overviewCalls(page)).toBe(4);
      await page.clock.runFor(1);
      expect(await overviewCalls(page)).toBe(5);
      await pollsDone(page, 5);

      // Paused: nothing, however long.
      await page.selectOption("select[name='poll']", "paused");
      await page.clock.runFor(600_000);
      expect(await overviewCalls(page)).toBe(5);

      // Every 1 s, then the tab is hidden: nothing; shown again: a poll at once.
      await page.selectOption("select[name='poll']", "1000");
      await page.clock.runFor(1_000);
      expect(await overviewCalls(page)).toBe(6);
      await pollsDone(page, 6);
      const setHidden = (hidden: boolean) =>
        page.evaluate((h) => {
          Object.defineProperty(document, "hidden", { configurable: true, get: () => h });
          document.dispatchEvent(new Event("visibilitychange"));
        }, hidden);
      await setHidden(true);
      await page.clock.runFor(60_000);
      expect(await overviewCalls(page)).toBe(6);
      await setHidden(false);
      expect(await overviewCalls(page)).toBe(7);
      await pollsDone(page, 7);
      await page.clock.runFor(1_000);
      expect(await overviewCalls(page)).toBe(8);
    } finally {
      await chromium.close();
    }
  });
});
