/**
 * Headless Chromium for the page tests: Debian's `chromium` (`.ci/run`
 * installs it when missing), driven by playwright-core with
 * `executablePath`, so nothing downloads a browser of its own. Each launch
 * gets a fresh profile in a temporary folder, removed on close.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

const EXECUTABLE = "/usr/bin/chromium";

/** Whether Debian's chromium is installed (`apt-get install -y chromium`). */
export const chromiumInstalled = existsSync(EXECUTABLE);

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Launches headless Chromium with a fresh profile; no network beyond what the page asks for (no updates, sync or QUIC). */
export async function launchChromium(viewport = { width: 1280, height: 900 }): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "later-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: EXECUTABLE,
    headless: true,
    viewport,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
