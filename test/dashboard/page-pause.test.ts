/**
 * X4 on the dashboard page in headless Chromium (SQLite, in this process):
 * the job type's view (the list filtered by type) shows its state with a
 * Pause button; pausing asks first, then the type is badged "paused", the
 * server starts none of its jobs while enqueue goes on, and Resume (after a
 * confirmation) runs them. Without `authorize` the badge shows and no button
 * is drawn. The page only reads the JSON API (checked on both backends in
 * dashboard-pause.test.ts), so this runs on SQLite only.
 */
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { createDashboard } from "@later/runtime/dashboard";
import { BACKENDS } from "../conformance/backends.js";
import { settled, useHarness } from "../conformance/harness.js";
import { chromiumInstalled } from "../support/chromium.js";
import { chromiumPage, serveDashboard } from "../support/chromium-page.js";

const sqliteEntry = BACKENDS.find((b) => b.name === "sqlite")!;

/** Resolves when the pause row of `name` shows `state` ("paused" or "running"). */
async function rowState(page: Page, name: string, state: string): Promise<void> {
  await page.waitForFunction(
    ([n, s]) => {
      const row = document.querySelector(`.panel.paused [data-paused-name="${n}"]`);
      return row?.querySelector(".paused-badge, .badge-state")?.textContent === s;
    },
    [name, state] as const,
    { timeout: 20_000 },
  );
}

describe.skipIf(!chromiumInstalled && process.env.CI !== "true")("dashboard page: pause and resume (X4) in headless Chromium", () => {
  const harness = useHarness(sqliteEntry);

  it("pauses a job type from its view after a confirmation, badges it, holds its jobs; resumes it; read-only shows the badge and no button", async () => {
    const h = harness();
    const server = await h.start({ handlers: { sendEmail: { handle: () => undefined } } });
    const warm = await server.publisher.enqueue("sendEmail", {});
    await settled(() => server.backend.inspect.jobGet({ id: warm }));
    const readOnly = await serveDashboard(createDashboard({ backend: server.backend }));
    const chromium = await chromiumPage(createDashboard({ backend: server.backend, authorize: () => true }));
    const { base, browser, page, problems, confirmations } = chromium;
    try {
      // The job type's view: the list filtered by type.
      await page.goto(`${base}#/?type=sendEmail`);
      await rowState(page, "sendEmail", "running");
      await page.click('.panel.paused [data-pause-action="pause"][data-pause-name="sendEmail"]');
      await rowState(page, "sendEmail", "paused");
      expect(await server.listPaused()).toEqual([{ jobType: "sendEmail", pausedAt: expect.any(Number) }]);
      // Paused: enqueue goes on, nothing starts (another type would run: see the conformance tests).
      const held = await server.publisher.enqueue("sendEmail", {});
      expect((await server.backend.inspect.jobGet({ id: held }))?.stage).toBe("enqueued");

      // Read-only: the badge, and no button.
      const other = await browser.context.newPage();
      await other.goto(readOnly.base);
      await rowState(other, "sendEmail", "paused");
      expect(await other.locator("[data-pause-action]").count()).toBe(0);
      await other.close();

      await page.click('.panel.paused [data-pause-action="resume"][data-pause-name="sendEmail"]');
      await rowState(page, "sendEmail", "running");
      expect((await settled(() => server.backend.inspect.jobGet({ id: held }))).stage).toBe("success");
      expect(confirmations).toEqual([
        "Pause job type sendEmail? No server starts a new job of it until it is resumed; running jobs finish, enqueue goes on.",
        "Resume job type sendEmail? Servers start its jobs again at once.",
      ]);
      expect(problems).toEqual([]);
    } finally {
      await chromium.close();
      await readOnly.close();
    }
  });
});
