/**
 * `later jobs show` prints a job's priority (X1), unique key with the
 * slot it holds (X2) and group (X9), and the stored metadata (X10) when
 * there is; `--json` carries `priority`, `uniqueKey`, `uniqueSlot`, `group` and `meta`. Run as a child process on SQLite.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { JobRecord } from "@later/runtime/internal";
import { sqlite } from "@later/runtime/sqlite";
import { later, SEED_TIME, tempDir } from "./later-cli.js";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe("later jobs show: priority, unique key and meta (sqlite)", () => {
  const dir = tempDir();

  it("shows the priority, the unique key with its slot, the group and the meta; a plain job shows 0 and -", async () => {
    const file = join(dir, "priority.db");
    const args = ["--database", `sqlite:${file}`];
    expect(later(["migrate", "up", ...args]).status).toBe(0);
    const backend = sqlite({ file });
    await backend.open();
    const keyed = newJobId(SEED_TIME);
    const plain = newJobId(SEED_TIME + 1);
    try {
      const job = { id: keyed, jobType: "mail", payload: "{}", runAt: SEED_TIME, retryPolicy: null, priority: -4, group: "acme" };
      await backend.jobs.insertUniqueMany({ inserts: [{ job, uniqueKey: "nightly", uniqueMode: "keep", now: SEED_TIME }] });
      const meta = JSON.stringify({ traceparent: TRACEPARENT });
      await backend.jobs.insertMany({ now: SEED_TIME, jobs: [{ id: plain, jobType: "mail", payload: "{}", runAt: SEED_TIME, retryPolicy: null, meta }] });
    } finally {
      await backend.close();
    }
    const shown = later(["jobs", "show", keyed, ...args]);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(/^priority +-4$/m);
    expect(shown.stdout).toMatch(/^unique key +nightly \(holds pending\)$/m);
    expect(shown.stdout).toMatch(/^group +acme$/m);
    const other = later(["jobs", "show", plain, ...args]).stdout;
    expect(other).toMatch(/^priority +0$/m);
    expect(other).toMatch(/^unique key +-$/m);
    expect(other).toMatch(/^group +-$/m);
    // X10: the stored metadata (a trace context here), pretty JSON; a job without any shows no meta line.
    expect(other).toMatch(/^meta +\{$/m);
    expect(other).toContain(`"traceparent": "${TRACEPARENT}"`);
    expect(shown.stdout).not.toMatch(/^meta /m);
    const json = JSON.parse(later(["jobs", "show", keyed, "--json", ...args]).stdout) as JobRecord;
    expect(json).toMatchObject({ priority: -4, uniqueKey: "nightly", uniqueSlot: "pending", group: "acme", meta: null });
  });
});
