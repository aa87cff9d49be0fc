/**
 * X9 on the dashboard page in headless Chromium (SQLite, in this process):
 * the Limits panel shows a limited job type's running jobs against its
 * `concurrency` with an "at limit" badge and the ready jobs held back, and
 * its rate window; a type without a limit has no row, and no limit at all
 * no panel. A type with a `groupConcurrency` lists its busiest groups
 * (running against the per-group limit, waiting), and a job's detail
 * shows its group. The page only reads the overview (its `limits` are checked on
 * both backends in conformance/limit-list.test.ts), so this runs on SQLite only.
 */
import { describe, expect, it } from "vitest";
import { createDashboard } from "@later/runtime/dashboard";
import { BACKENDS } from "../conformance/backends.js";
import { deferred, useHarness, waitFor } from "../conformance/harness.js";
import { chromiumInstalled } from "../support/chromium.js";
import { chromiumPage, textIs } from "../support/chromium-page.js";

const sqliteEntry = BACKENDS.find((b) => b.name === "sqlite")!;

describe.skipIf(!chromiumInstalled && process.env.CI !== "true")("dashboard page: job type limits (X9) in headless Chromium", () => {
  const harness = useHarness(sqliteEntry);

  it("shows running against concurrency, at limit, held back, and the rate window; no row for an unlimited type", async () => {
    const h = harness();
    const gate = deferred();
    let started = 0;
    const server = await h.start({
      workerCount: 4,
      handlers: {
        held: {
          concurrency: 2,
          handle: async () => {
            started++;
            await gate.promise;
          },
        },
        paced: { rateLimit: { max: 100, perMs: 60_000 }, handle: () => undefined },
        free: { handle: () => undefined },
      },
    });
    await server.publisher.enqueueMany("held", [{}, {}, {}, {}, {}]);
    await waitFor(() => started === 2, "two held jobs running");
    const chromium = await chromiumPage(createDashboard({ backend: server.backend }));
    const { base, page, problems } = chromium;
    try {
      await page.goto(base);
      const row = '.panel.limits [data-limit-type="held"]';
      await textIs(page, `${row} .limit-running`, "2 / 2");
      await textIs(page, `${row} .limit-waiting`, "3");
      await textIs(page, `${row} .limit-full`, "at limit");
      await textIs(page, '.panel.limits [data-limit-type="paced"] .limit-rate', "0 / 100 per 1 m 00 s");
      expect(await page.locator('.panel.limits [data-limit-type="paced"] .limit-full').count()).toBe(0);
      expect(await page.locator('.panel.limits [data-limit-type="free"]').count()).toBe(0);
      expect(problems).toEqual([]);
    } finally {
      gate.resolve();
      await chromium.close();
    }
  });

  it("lists a group-limited type's busiest groups, running against the per-group limit and waiting; a job's detail shows its group", async () => {
    const h = harness();
    const gate = deferred();
    let started = 0;
    const server = await h.start({
      workerCount: 8,
      handlers: {
        tenant: {
          groupConcurrency: 2,
          handle: async () => {
            started++;
            await gate.promise;
          },
        },
      },
    });
    const [first] = await server.publisher.enqueueMany("tenant", [{}, {}, {}, {}, {}, {}], { group: "acme" });
    await server.publisher.enqueueMany("tenant", [{}, {}, {}], { group: "globex" });
    await server.publisher.enqueue("tenant", {}, { group: "initech" });
    await waitFor(() => started === 5, "two acme, two globex and the initech job running");
    const chromium = await chromiumPage(createDashboard({ backend: server.backend }));
    const { base, page, problems } = chromium;
    try {
      await page.goto(base);
      const groups = '.panel.limits [data-limit-groups="tenant"]';
      await textIs(page, `${groups} [data-group="acme"]`, "acme 2 / 2 · 4 waiting");
      await textIs(page, `${groups} [data-group="globex"]`, "globex 2 / 2 · 1 waiting");
      await textIs(page, `${groups} [data-group="initech"]`, "initech 1 / 2 · 0 waiting");
      // Busiest first.
      expect(await page.locator(`${groups} [data-group]`).evaluateAll((els) => els.map((e) => e.getAttribute("data-group")))).toEqual([
        "acme",
        "globex",
        "initech",
      ]);
      await page.goto(`${base}#/jobs/${first}`);
      await page.waitForSelector(`.job-detail[data-job-id="${first}"] .facts`);
      await textIs(page, ".job-detail .facts .job-group", "acme");
      expect(problems).toEqual([]);
    } finally {
      gate.resolve();
      await chromium.close();
    }
  });
});
