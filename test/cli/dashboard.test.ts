/**
 * `later dashboard` on every backend, run as a child process: it binds to
 * 127.0.0.1 on the port asked for (0: a free one), prints its URL, serves
 * the page and the JSON API, read-only unless --allow-actions (then it
 * still refuses cross-site actions, and says on stderr that whoever reaches
 * the port may act), refuses requests for another Host (DNS rebinding), and
 * exits 0 on SIGINT. A database it cannot serve exits 1 with one line.
 */
import { request } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { newJobId, RetryPolicy } from "@later/runtime";
import { BACKENDS, type TestDatabase } from "../conformance/backends.js";
import { waitFor } from "../conformance/harness.js";
import { hasStackTrace, later, laterChild, tempDir } from "./later-cli.js";

/** The status of `GET /api/jobs` sent to 127.0.0.1:port with this Host header (fetch cannot set Host). */
function statusFor(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/api/jobs", headers: { host } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode));
    });
    req.on("error", reject);
    req.end();
  });
}

describe.each(BACKENDS)("later dashboard on $name", (entry) => {
  /** A migrated database whose namespace "default" holds one enqueued job. */
  async function seeded(): Promise<{ db: TestDatabase; jobId: string; args: string[] }> {
    const db = await entry.createDatabase();
    const backend = db.backend("default");
    await backend.open();
    await backend.migrations.up();
    const now = Date.now();
    const jobId = newJobId(now);
    await backend.jobs.insertMany({
      jobs: [{ id: jobId, jobType: "sendEmail", payload: "{}", runAt: now, retryPolicy: JSON.stringify(RetryPolicy.default()) }],
      now,
    });
    await backend.close();
    return { db, jobId, args: ["--database", db.url, ...(db.schema ? ["--schema", db.schema] : [])] };
  }

  /** Starts `later dashboard ARGS --port 0` and resolves to its URL once it prints it. */
  async function serve(args: string[]) {
    const child = laterChild(["dashboard", ...args, "--port", "0"]);
    const line = await waitFor(
      () => /^later dashboard: (http:\/\/\S+) \((.*)\)$/m.exec(child.stdout()) ?? (child.child.exitCode !== null ? [child.stderr()] : null),
      "the URL line",
    );
    if (!line[1]) throw new Error(`later dashboard exited: ${line[0]}`);
    return { ...child, url: line[1], notes: line[2]! };
  }

  it("serves the page and the API on 127.0.0.1; with --allow-actions refuses a cross-site action only; exits 0 on SIGINT", async () => {
    const { db, jobId, args } = await seeded();
    try {
      const dashboard = await serve([...args, "--allow-actions"]);
      expect(dashboard.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      expect(dashboard.notes).toContain("namespace default");
      expect(dashboard.notes).toContain("actions allowed");
      await waitFor(() => dashboard.stderr().includes("whoever reaches this port can retry and delete jobs"), "the warning on stderr");

      const page = await fetch(dashboard.url);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(await page.text()).toMatch(/<html/i);

      const overview = await fetch(new URL("api/overview", dashboard.url));
      expect(overview.status).toBe(200);
      const overviewBody = (await overview.json()) as { counts: { enqueued: number }; readOnly: boolean };
      expect([overviewBody.counts.enqueued, overviewBody.readOnly]).toEqual([1, false]);
      const jobs = (await (await fetch(new URL("api/jobs", dashboard.url))).json()) as { jobs: { id: string }[] };
      expect(jobs.jobs.map((j) => j.id)).toEqual([jobId]);

      const crossSite = await fetch(new URL(`api/jobs/${jobId}`, dashboard.url), { method: "DELETE", headers: { "sec-fetch-site": "cross-site" } });
      expect(crossSite.status).toBe(403);
      const refused = await fetch(new URL(`api/jobs/${jobId}`, dashboard.url), { method: "DELETE", headers: { "sec-fetch-site": "same-origin" } });
      expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([409, "JOB_ACTION_REFUSED"]);

      // A page whose name was pointed at 127.0.0.1 (DNS rebinding) sends its own Host: refused.
      const port = Number(new URL(dashboard.url).port);
      expect(await statusFor(port, "evil.example")).toBe(403);
      expect(await statusFor(port, `localhost:${port}`)).toBe(200);

      dashboard.child.kill("SIGINT");
      expect(await dashboard.exited).toBe(0);
      expect(dashboard.stderr().trim().split("\n")).toEqual([
        "later dashboard: --allow-actions: whoever reaches this port can retry and delete jobs (the dashboard has no login)",
      ]);
    } finally {
      await db.dispose();
    }
  });

  it("read-only by default (and with --read-only): every action is 403 READ_ONLY, the overview says readOnly", async () => {
    const { db, jobId, args } = await seeded();
    try {
      const dashboard = await serve(args);
      expect(dashboard.notes).toContain("read-only");
      const overview = (await (await fetch(new URL("api/overview", dashboard.url))).json()) as { readOnly: boolean; unhandled: unknown };
      // No server runs: the enqueued sendEmail job has no live handler.
      expect([overview.readOnly, overview.unhandled]).toEqual([true, [{ jobType: "sendEmail", ready: 1 }]]);
      const refused = await fetch(new URL(`api/jobs/${jobId}/retry`, dashboard.url), { method: "POST", headers: { "sec-fetch-site": "same-origin" } });
      expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([403, "READ_ONLY"]);
      expect((await fetch(new URL("api/jobs", dashboard.url))).status).toBe(200);
      dashboard.child.kill("SIGTERM");
      expect(await dashboard.exited).toBe(0);
      expect(dashboard.stderr()).toBe("");
      const explicit = await serve([...args, "--read-only"]);
      expect(explicit.notes).toContain("read-only");
      const again = await fetch(new URL(`api/jobs/${jobId}`, explicit.url), { method: "DELETE" });
      expect(again.status).toBe(403);
      explicit.child.kill("SIGTERM");
      expect(await explicit.exited).toBe(0);
      const both = later(["dashboard", ...args, "--read-only", "--allow-actions", "--port", "0"]);
      expect(both.status).not.toBe(0);
      expect(both.stderr).toContain("cannot be used with");
    } finally {
      await db.dispose();
    }
  });

  it.runIf(entry.name === "sqlite")("a missing SQLite file exits 1 with one line and creates nothing", () => {
    const file = join(tempDir(), "missing.db");
    const result = later(["dashboard", "--database", `sqlite:${file}`, "--port", "0"]);
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^later: no SQLite database at /);
    expect(hasStackTrace(result.stderr)).toBe(false);
  });
});
