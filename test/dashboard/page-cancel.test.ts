/**
 * The dashboard page's Cancel actions (X3, D4) in headless Chromium: the job
 * detail's Cancel button (confirmed) ends a running job `cancelled` and its
 * handler's signal aborts; "Cancel all matching" on the list, confirmed,
 * cancels every job of the filter; a finished job's Cancel is disabled.
 */
import { describe, expect, it } from "vitest";
import { createDashboard } from "@later/runtime/dashboard";
import { BACKENDS } from "../conformance/backends.js";
import { deferred, useHarness, waitFor } from "../conformance/harness.js";
import { chromiumInstalled } from "../support/chromium.js";
import { chromiumPage, textIs } from "../support/chromium-page.js";

const sqliteEntry = BACKENDS.find((b) => b.name === "sqlite")!;

describe.skipIf(!chromiumInstalled && process.env.CI !== "true")("dashboard page cancel (X3) in headless Chromium", () => {
  const harness = useHarness(sqliteEntry);

  it("Cancel on a running job's detail and Cancel all matching on the list, each confirmed; a finished job's Cancel is disabled", async () => {
    const h = harness();
    const started = deferred();
    let aborted: unknown;
    const server = await h.start({
      handlers: {
        slow: {
          handle: async (ctx) => {
            started.resolve();
            await new Promise((r) => ctx.signal.addEventListener("abort", r));
            aborted = ctx.signal.reason;
          },
        },
        ok: { handle: () => undefined },
      },
    });
    const running = await server.publisher.enqueue("slow", {});
    const delayed = await Promise.all([0, 1].map((i) => server.publisher.enqueue("ok", { i }, { delayMs: 3_600_000 })));
    const done = await server.publisher.enqueue("ok", {});
    await started.promise;
    await waitFor(async () => (await server.backend.inspect.jobGet({ id: done }))?.stage === "success", "the ok job");

    const chromium = await chromiumPage(createDashboard({ backend: server.backend, authorize: () => true }));
    const { base, page, problems, confirmations } = chromium;
    try {
      // A finished job: Cancel drawn, disabled.
      await page.goto(`${base}#/jobs/${done}`);
      await page.waitForSelector(`.job-detail[data-job-id="${done}"] [data-action='cancel']`);
      expect(await page.locator(".job-detail [data-action='cancel']").isDisabled()).toBe(true);

      // The running job: Cancel (confirmed) ends it cancelled; its handler's signal aborts.
      await page.goto(`${base}#/jobs/${running}`);
      await textIs(page, ".job-detail h2 .stage-tag", "running");
      await page.click(".job-detail [data-action='cancel']");
      await textIs(page, ".job-detail h2 .stage-tag", "cancelled");
      expect(await page.locator(".flash").textContent()).toBe(`Job …${running.slice(-6)} cancelled.`);
      expect(await page.locator(".job-detail [data-action='retry']").isDisabled()).toBe(false);
      expect(await page.locator(".job-detail [data-action='cancel']").isDisabled()).toBe(true);
      await waitFor(() => aborted !== undefined, "the handler's signal to abort");
      expect(aborted).toMatchObject({ code: "JOB_CANCELLED" });
      expect((await server.backend.inspect.jobGet({ id: running }))?.stage).toBe("cancelled");

      // The list filtered to delayed jobs: Cancel all matching (confirmed).
      await page.goto(base);
      await page.selectOption("select[name='stage']", "delayed");
      await page.waitForFunction(() => document.querySelectorAll(".job-table tbody tr").length === 2, null, { timeout: 20_000 });
      await page.click("[data-bulk='cancel']");
      await textIs(page, ".flash", "2 jobs cancelled.");
      for (const id of delayed) expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("cancelled");
      await page.selectOption("select[name='stage']", "cancelled");
      await page.waitForFunction(() => document.querySelectorAll(".job-table tbody tr").length === 3, null, { timeout: 20_000 });
      await textIs(page, `.stage-card[data-stage="cancelled"] .stage-count`, "3");
      expect(confirmations).toEqual([
        `Cancel job ${running}? It ends cancelled now; a running attempt is aborted.`,
        "Cancel every unfinished job matching the filter (stage=delayed)?",
      ]);
      expect(problems).toEqual([]);
    } finally {
      await chromium.close();
    }
  });
});
