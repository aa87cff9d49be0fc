/** Help, exit codes and usage errors of `later` and `later-gen`, run as child processes. */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hasStackTrace, later, REPO_ROOT, tempDir } from "./later-cli.js";

describe("later usage and exit codes", () => {
  const dir = tempDir();
  const db = ["--database", `sqlite:${join(dir, "never-created.db")}`];

  it("--help lists the commands and documents the exit codes (exit 0)", () => {
    const result = later(["--help"]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^Usage: later \[options\] \[command\]$/m);
    for (const command of ["gen", "migrate", "jobs"]) expect(result.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    expect(result.stdout).toMatch(/^Exit codes:\n {2}0 {2}success\n {2}1 {2}failed: [^\n]+\n[^\n]*\n {2}2 {2}usage error/m);
    expect(result.stdout).toContain("LATER_DATABASE_URL");
    expect(later(["help", "jobs"]).status).toBe(0);
    expect(later(["jobs", "list", "--help"]).stdout).toMatch(/--stage <stage> +only jobs in this stage \(choices: "enqueued", "delayed",/);
    expect(later(["--version"]).stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  const usageErrors: [string, string[], RegExp][] = [
    ["no command", [], /^Usage: later/m],
    ["an unknown command", ["frobnicate"], /^error: unknown command 'frobnicate'$/m],
    ["an unknown subcommand", ["jobs", "purge", ...db], /^error: unknown command 'purge'$/m],
    ["a group without its subcommand", ["migrate"], /^Usage: later migrate/m],
    ["an unknown option", ["jobs", "list", "--colour", ...db], /^error: unknown option '--colour'$/m],
    ["a missing argument", ["jobs", "show", ...db], /^error: missing required argument 'id'$/m],
    ["an extra argument", ["migrate", "status", "extra", ...db], /^error: too many arguments for 'status'/m],
    ["no --database and no LATER_DATABASE_URL", ["jobs", "list"], /^error: required option '--database <url>' not specified$/m],
    ["an option without its value", ["jobs", "list", "--database"], /^error: option '--database <url>' argument missing$/m],
    ["a --limit that is not a positive number", ["jobs", "list", "--limit", "0", ...db], /argument '0' is invalid\. expected a whole number from 1 to 10000$/m],
    [
      "an unknown URL scheme",
      ["migrate", "status", "--database", "mysql://localhost/db"],
      /argument 'mysql:\/\/localhost\/db' is invalid\. not a database URL; expected sqlite:PATH/m,
    ],
    ["a sqlite: URL without a path", ["migrate", "status", "--database", "sqlite:"], /sqlite: needs a file path/m],
    [
      "a sqlite:// URL with a host",
      ["migrate", "status", "--database", "sqlite://later.db"],
      /sqlite:\/\/ URLs take an absolute path .*write sqlite:later\.db/m,
    ],
    ["--schema with a SQLite database", ["migrate", "status", "--schema", "x", ...db], /^error: --schema applies to PostgreSQL databases only$/m],
    ["gen without a schema file", ["gen"], /^error: missing required argument 'schema'$/m],
  ];

  it.each(usageErrors)("%s is a usage error: exit 2, commander's message on stderr", (_what, args, message) => {
    const result = later(args);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(message);
    expect(hasStackTrace(result.stderr)).toBe(false);
  });

  it("a usage error runs nothing: no database file is created", () => {
    later(["migrate", "up", "--bogus", ...db]);
    expect(existsSync(join(dir, "never-created.db"))).toBe(false);
  });

  it("a bad LATER_DATABASE_URL is a usage error too", () => {
    const result = later(["jobs", "list"], { env: { LATER_DATABASE_URL: "later.db" } });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/not a database URL/);
  });

  it("later gen and later-gen: a missing schema file exits non-zero with one line, no stack trace", () => {
    const schema = join(dir, "missing.schema.ts");
    for (const run of [later(["gen", schema, "--out", join(dir, "out.ts")]), later([schema], { bin: "later-gen" })]) {
      expect(run.status).not.toBe(0);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toContain("missing.schema.ts");
      expect(hasStackTrace(run.stderr)).toBe(false);
    }
    const help = later(["--help"], { bin: "later-gen" });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: later-gen \[options\] <schema>$/m);
    expect(help.stdout).toMatch(/^Exit codes:$/m);
    expect(later([], { bin: "later-gen" }).status).toBe(2);
    expect(later([schema, "--bogus"], { bin: "later-gen" }).status).toBe(2);
  });

  it("a launcher whose package is not built says to run pnpm build, in one line, exit 1", () => {
    const pkg = join(dir, "unbuilt");
    mkdirSync(join(pkg, "bin"), { recursive: true });
    for (const [from, bin] of [
      ["packages/cli", "later"],
      ["packages/cli", "later-gen"],
      ["packages/codegen", "later-gen"],
    ] as const) {
      copyFileSync(join(REPO_ROOT, from, "bin", `${bin}.js`), join(pkg, "bin", `${bin}.js`));
      const result = spawnSync(process.execPath, [join(pkg, "bin", `${bin}.js`), "--help"], { encoding: "utf8" });
      expect(result.status).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(new RegExp(`^${bin}: @later/\\w+ is not built \\(no dist/${bin}\\.js\\): run \`pnpm build\` at the repository root\n$`));
    }
  });
});
