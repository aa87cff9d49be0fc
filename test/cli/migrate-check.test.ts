/** `later migrate status --check` (for CI): exit 1 listing the pending migrations, exit 0 once current; on every backend, run as a child process. */
import { writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { BACKENDS, type TestDatabase } from "../conformance/backends.js";
import { later } from "./later-cli.js";

describe.each(BACKENDS)("later migrate status --check on $name", (entry) => {
  const dbs: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(dbs.splice(0).map((d) => d.dispose()));
  });

  it("exits 1 and lists the pending migrations while the schema is behind; 0 once it is current", async () => {
    const db = await entry.createDatabase();
    dbs.push(db);
    if (entry.name === "sqlite") writeFileSync(db.location, ""); // an empty file is an empty SQLite database
    const args = ["--database", db.url, ...(db.schema ? ["--schema", db.schema] : [])];

    const behind = later(["migrate", "status", "--check", ...args]);
    expect(behind.status).toBe(1);
    expect(behind.stdout).toMatch(/^pending\n {2,}1 {2}jobs$/m);
    expect(behind.stderr.trim()).toMatch(/^later: \d+ pending migrations? \(1 jobs(, \d+ [\w-]+)*\): run `later migrate up --database /);
    expect(behind.stderr.trim().split("\n")).toHaveLength(1);
    // Without --check, status only reports.
    expect(later(["migrate", "status", ...args]).status).toBe(0);
    // --json keeps the exit code.
    const json = later(["migrate", "status", "--check", "--json", ...args]);
    expect(json.status).toBe(1);
    expect((JSON.parse(json.stdout) as { pending: unknown[] }).pending.length).toBeGreaterThan(0);

    expect(later(["migrate", "up", ...args]).status).toBe(0);
    const current = later(["migrate", "status", "--check", ...args]);
    expect(current.stderr).toBe("");
    expect(current.status).toBe(0);
    expect(current.stdout).toMatch(/^state +up to date$/m);
  });
});
