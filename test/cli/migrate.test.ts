/** `later migrate status|up` against real SQLite files, run as a child process. */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { hasStackTrace, later, REPO_ROOT, tempDir } from "./later-cli.js";

describe("later migrate (sqlite)", () => {
  const dir = tempDir();

  it("status on a fresh file is behind; up applies; status is current; up again has nothing to do", () => {
    const file = join(dir, "fresh.db");
    writeFileSync(file, ""); // an empty file is an empty SQLite database
    const url = `sqlite:${file}`;

    const before = later(["migrate", "status", "--database", url]);
    expect(before.status).toBe(0);
    expect(before.stdout).toMatch(/^current version 0$/m);
    expect(before.stdout).toMatch(/^latest version {2}[1-9]\d*$/m);
    expect(before.stdout).toMatch(/^state +behind: \d+ pending migrations?; run `later migrate up --database sqlite:/m);
    expect(before.stdout).toMatch(/^pending\n {2,}1 {2}jobs$/m);

    const up = later(["migrate", "up", "--database", url]);
    expect(up.status).toBe(0);
    expect(up.stdout).toMatch(/^applied migration 1 \(jobs\)$/m);
    expect(up.stdout).toMatch(/is at schema version \d+, the latest$/m);

    const after = later(["migrate", "status", "--database", url]);
    expect(after.status).toBe(0);
    expect(after.stdout).toMatch(/^state +up to date$/m);
    expect(after.stdout).not.toMatch(/^pending/m);
    expect(after.stdout).toMatch(/^applied\n {2,}1 {2}jobs +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/m);
    const [, current] = /^current version (\d+)$/m.exec(after.stdout)!;
    const [, latest] = /^latest version +(\d+)$/m.exec(after.stdout)!;
    expect(current).toBe(latest);

    const again = later(["migrate", "up", "--database", url]);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/^nothing to apply: .* is at schema version \d+, the latest$/m);
    expect(again.stdout).not.toMatch(/^applied/m);
  });

  it("--json prints the status and the applied migrations", () => {
    const url = `sqlite:${join(dir, "json.db")}`;
    const up = later(["migrate", "up", "--json", "--database", url]);
    expect(up.status).toBe(0);
    const applied = JSON.parse(up.stdout) as { applied: { version: number; name: string }[]; current: number };
    expect(applied.applied[0]).toEqual({ version: 1, name: "jobs" });
    const status = JSON.parse(later(["migrate", "status", "--json", "--database", url]).stdout) as { current: number; latest: number; pending: unknown[] };
    expect(status.current).toBe(status.latest);
    expect(status.pending).toEqual([]);
    expect(JSON.parse(later(["migrate", "up", "--json", "--database", url]).stdout)).toEqual({ applied: [], current: status.current });
  });

  it("up creates a missing file; status never does", () => {
    const file = join(dir, "created-by-up.db");
    const status = later(["migrate", "status", "--database", `sqlite:${file}`]);
    expect(status.status).toBe(1);
    expect(status.stderr.trim()).toBe(
      `later: no SQLite database at ${file}: check the path (relative paths start at the working directory), or create it with \`later migrate up --database sqlite:${file}\``,
    );
    expect(existsSync(file)).toBe(false);

    expect(later(["migrate", "up", "--database", `sqlite:${file}`]).status).toBe(0);
    expect(existsSync(file)).toBe(true);
  });

  it("takes relative paths, sqlite:///absolute URLs and LATER_DATABASE_URL", () => {
    const sub = join(dir, "forms");
    mkdirSync(sub);
    const rel = relative(REPO_ROOT, join(sub, "relative.db"));
    expect(later(["migrate", "up", "--database", `sqlite:${rel}`]).status).toBe(0);
    expect(existsSync(join(sub, "relative.db"))).toBe(true);

    const abs = join(sub, "url form.db");
    expect(later(["migrate", "up", "--database", `sqlite://${encodeURI(abs)}`]).status).toBe(0);
    expect(existsSync(abs)).toBe(true);

    const fromEnv = later(["migrate", "status"], { env: { LATER_DATABASE_URL: `sqlite:${abs}` } });
    expect(fromEnv.status).toBe(0);
    expect(fromEnv.stdout).toMatch(/^state +up to date$/m);
    // An explicit --database wins over the environment.
    const missing = join(sub, "missing.db");
    expect(later(["migrate", "status", "--database", `sqlite:${missing}`], { env: { LATER_DATABASE_URL: `sqlite:${abs}` } }).status).toBe(1);
  });

  it("a folder that does not exist is a one-line database error", () => {
    const result = later(["migrate", "up", "--database", `sqlite:${join(dir, "no", "such", "folder", "x.db")}`]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^later: cannot open SQLite database .*x\.db: .*\n$/);
    expect(hasStackTrace(result.stderr)).toBe(false);
  });

  it("a database ahead of this release: status says so, up and jobs refuse it", () => {
    const file = join(dir, "ahead.db");
    expect(later(["migrate", "up", "--database", `sqlite:${file}`]).status).toBe(0);
    const raw = new Database(file);
    raw.prepare("INSERT INTO later_migrations (version, name, applied_at) VALUES (99, 'from the future', 0)").run();
    raw.close();

    const status = later(["migrate", "status", "--database", `sqlite:${file}`]);
    expect(status.status).toBe(0);
    expect(status.stdout).toMatch(/^current version 99$/m);
    expect(status.stdout).toMatch(/^state +ahead: this release of later knows up to version \d+; upgrade later/m);
    for (const args of [
      ["migrate", "up"],
      ["jobs", "list"],
    ]) {
      const result = later([...args, "--database", `sqlite:${file}`]);
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/^later: the later schema in this database is ahead \(version 99, this release knows up to \d+\): upgrade later[^\n]*\n$/);
    }
  });
});
