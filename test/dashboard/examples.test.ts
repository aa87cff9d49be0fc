/**
 * examples/dashboard on every backend: the same dashboard mounted at /jobs/
 * in plain node:http, in Express and in Hono, each started as a child
 * process (its build in dist/) on a free port. Each serves the page with
 * its CSP, `api/overview` with the job the example enqueued, the
 * application's own route beside it, actions only with the example's
 * `authorize` token (a cross-site one refused even with its cookie); each
 * exits on SIGTERM.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { BACKENDS } from "../conformance/backends.js";
import { waitFor } from "../conformance/harness.js";
import { nodeChild, REPO_ROOT } from "../cli/later-cli.js";
import { freePort } from "../support/free-port.js";

const EXAMPLES = ["node-http", "express", "hono"] as const;
const DIST = join(REPO_ROOT, "examples/dashboard/dist");

describe.each(BACKENDS)("examples/dashboard on $name", (entry) => {
  it.each(EXAMPLES)("%s: serves the page and the API at /jobs/ beside the application", async (example) => {
    if (!existsSync(join(DIST, `${example}.js`))) throw new Error("examples/dashboard is not built: run pnpm build");
    const db = await entry.createDatabase();
    onTestFinished(() => db.dispose());
    const port = await freePort();
    const env: Record<string, string | undefined> = {
      ...process.env,
      PORT: String(port),
      LATER_DATABASE_URL: db.url,
      LATER_SCHEMA: db.schema,
      DASHBOARD_TOKEN: "t0ken",
    };
    if (!db.schema) delete env.LATER_SCHEMA;
    const { child, stdout, stderr, exited } = nodeChild(join(DIST, `${example}.js`), [], { cwd: join(REPO_ROOT, "examples/dashboard"), env });
    await waitFor(() => stdout().includes(`dashboard at http://127.0.0.1:${port}/jobs/`) || child.exitCode !== null, "the example to listen");
    expect(stderr()).toBe("");
    const base = `http://127.0.0.1:${port}`;

    const page = await fetch(`${base}/jobs/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(await page.text()).toMatch(/<html/i);
    const redirect = await fetch(`${base}/jobs`, { redirect: "manual" });
    expect([redirect.status, redirect.headers.get("location")]).toEqual([308, "/jobs/"]);
    expect((await fetch(`${base}/jobs/assets/app.js`)).status).toBe(200);

    // The example enqueued one job; its server runs it.
    await waitFor(async () => {
      const overview = (await (await fetch(`${base}/jobs/api/overview`)).json()) as { counts: Record<string, number> };
      return overview.counts.success === 1;
    }, "the example's job in the overview");
    const jobs = (await (await fetch(`${base}/jobs/api/jobs`)).json()) as { jobs: { id: string; jobType: string }[] };
    expect(jobs.jobs.map((j) => j.jobType)).toEqual(["greet"]);
    const overview = (await (await fetch(`${base}/jobs/api/overview`)).json()) as { readOnly: boolean };
    expect(overview.readOnly).toBe(false); // authorize given: the page draws the actions
    const path = `${base}/jobs/api/jobs/${jobs.jobs[0]!.id}`;
    const crossSite = await fetch(path, { method: "DELETE", headers: { "sec-fetch-site": "cross-site", cookie: "later_dashboard_token=t0ken" } });
    expect(crossSite.status).toBe(403);
    expect((await fetch(path, { method: "DELETE" })).status).toBe(403); // no token
    const deleted = await fetch(path, { method: "DELETE", headers: { authorization: "Bearer t0ken" } });
    expect(deleted.status).toBe(200);
    expect(await (await fetch(`${base}/`)).text()).toBe("the application\n");

    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr()).toBe("");
  });
});
