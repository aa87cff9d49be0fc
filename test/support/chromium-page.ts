/**
 * The set-up every dashboard page test shares: the dashboard served over
 * node:http on a free port of 127.0.0.1, headless Chromium (support/chromium.ts)
 * and its first page, which records the console errors and warnings and the
 * page errors it sees (`problems`, which a test expects empty) and accepts
 * every `confirm()` after noting its message (`confirmations`).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { type DashboardHandler, toNodeHandler } from "@later/runtime/dashboard";
import { type Browser, launchChromium } from "./chromium.js";

export interface ServedDashboard {
  /** The dashboard's page: `http://127.0.0.1:<port>` and the base path. */
  base: string;
  close(): Promise<void>;
}

/** Serves `dashboard` (mounted at `basePath`, default "/") on a free port of 127.0.0.1. */
export async function serveDashboard(dashboard: DashboardHandler, basePath = "/"): Promise<ServedDashboard> {
  const http = createServer(toNodeHandler(dashboard));
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${(http.address() as AddressInfo).port}${basePath}`,
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  };
}

export interface ChromiumPageOptions {
  /** The dashboard's base path, as given to `createDashboard`. Default "/". */
  basePath?: string;
  /** A console message to leave out of `problems` (one the test causes on purpose). Default: none. */
  expectedConsole?: (text: string) => boolean;
}

export interface ChromiumPage {
  /** The served dashboard's page URL. */
  base: string;
  browser: Browser;
  /** The browser's first page, not yet navigated. */
  page: Page;
  /** Console errors and warnings and page errors, as `type: text`. */
  problems: string[];
  /** The messages of the confirmations the page asked, each accepted. */
  confirmations: string[];
  /** Closes the browser, then the HTTP server. */
  close(): Promise<void>;
}

/** Serves `dashboard` and opens a watched Chromium page on it (see the file's comment); `close()` in a `finally`. */
export async function chromiumPage(dashboard: DashboardHandler, options: ChromiumPageOptions = {}): Promise<ChromiumPage> {
  const served = await serveDashboard(dashboard, options.basePath);
  let browser: Browser;
  try {
    browser = await launchChromium();
  } catch (error) {
    await served.close();
    throw error;
  }
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const problems: string[] = [];
  const confirmations: string[] = [];
  page.on("console", (m) => {
    if ((m.type() === "error" || m.type() === "warning") && !options.expectedConsole?.(m.text())) problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("dialog", (d) => {
    confirmations.push(d.message());
    void d.accept();
  });
  return {
    base: served.base,
    browser,
    page,
    problems,
    confirmations,
    async close() {
      await browser.close();
      await served.close();
    },
  };
}

/** Resolves when `selector`'s text is `text` (the page redraws on each poll). */
export async function textIs(page: Page, selector: string, text: string): Promise<void> {
  await page.waitForFunction(([s, t]) => document.querySelector(s!)?.textContent === t, [selector, text] as const, { timeout: 20_000 });
}
