// Every fixture in bad/ starts with one "// expect: LINE:COL reason" line per error it holds (then, if
// the jobs interface is not `Jobs`, "// interface: NAME"): later-gen must answer it with one
// "file:LINE:COL: error: reason..." line per error, in that order, exit code 1, and no stack trace.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runGen } from "@later/codegen";
import { laterGen, ROOT } from "./codegen-cli.js";

const BAD = readdirSync(join(ROOT, "test/codegen/bad"))
  .filter((f) => f.endsWith(".ts"))
  .sort();

async function gen(schemaPath: string, interfaceName?: string): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const options = { schemaPath, outPath: join(tmpdir(), "later-never-written.ts"), ...(interfaceName ? { interfaceName } : {}) };
  const code = await runGen(options, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}

describe("bad schemas", () => {
  it("has at least eight kinds of mistakes, the basic ones among them (no Jobs interface, bad payloads, bad partition keys, duplicates, syntax)", () => {
    for (const kind of [
      "no-jobs-interface",
      "non-object-payload",
      "function-field",
      "unknown-partition-key",
      "partition-key-type",
      "duplicate-member",
      "syntax-error",
    ]) {
      expect(BAD).toContain(`${kind}.ts`);
    }
    expect(BAD.length).toBeGreaterThanOrEqual(8);
  });

  it.each(BAD)("%s is reported at its line and column with one reason per error", async (file) => {
    const path = `test/codegen/bad/${file}`;
    const lines = readFileSync(join(ROOT, path), "utf8").split("\n");
    const expected = lines.flatMap((l) => {
      const m = /^\/\/ expect: (\d+):(\d+) (.*)$/.exec(l);
      return m ? [`${path}:${m[1]}:${m[2]}: error: ${m[3]}`] : [];
    });
    expect(expected.length, "the fixture says what to expect").toBeGreaterThan(0);
    const interfaceName = lines.map((l) => /^\/\/ interface: (\w+)$/.exec(l)?.[1]).find((n) => n !== undefined);
    const cwd = process.cwd();
    process.chdir(ROOT);
    try {
      const run = await gen(path, interfaceName);
      expect(run.code).toBe(1);
      expect(run.out).toEqual([]);
      expect(run.err).toHaveLength(expected.length);
      run.err.forEach((line, i) => {
        expect(line).toContain(expected[i]);
        expect(line).not.toContain("\n");
      });
    } finally {
      process.chdir(cwd);
    }
  });

  it("answers from the command line with exit code 1 and no stack trace", () => {
    for (const file of ["syntax-error.ts", "function-field.ts", "unknown-partition-key.ts"]) {
      const run = laterGen([`test/codegen/bad/${file}`, "--out", join(tmpdir(), "later-never-written.ts")]);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe("");
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(new RegExp(`^test/codegen/bad/${file.replace(".", "\\.")}:\\d+:\\d+: error: `));
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it("prints every error of a file from the command line, one line each, with exit code 1", () => {
    const run = laterGen(["test/codegen/bad/several-errors.ts", "--out", join(tmpdir(), "later-never-written.ts")]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    const lines = run.stderr.trim().split("\n");
    expect(lines.map((l) => /^test\/codegen\/bad\/several-errors\.ts:(\d+):\d+: error: /.exec(l)?.[1])).toEqual(["12", "16", "17", "21"]);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it("refuses a schema file the generated module could not import its types from (.d.ts, not TypeScript)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "later-gen-"));
    try {
      for (const name of ["jobs.d.ts", "jobs.txt"]) {
        writeFileSync(join(dir, name), "export interface Jobs { sendEmail: { address: string } }\n");
        const run = await gen(join(dir, name));
        expect(run.code).toBe(1);
        expect(run.err).toEqual([
          `${join(dir, name)}:1:1: error: the schema file must be a TypeScript module (.ts, .mts, .cts or .tsx, not a .d.ts), so the generated module can import its types`,
        ]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses to write the module over the schema file", async () => {
    const lines: string[] = [];
    const code = await runGen(
      { schemaPath: join(ROOT, "test/codegen/schemas/shop.schema.ts"), outPath: join(ROOT, "test/codegen/schemas/shop.schema.ts") },
      { out: (l) => lines.push(l), err: (l) => lines.push(l) },
    );
    expect(code).toBe(1);
    expect(lines).toEqual([
      `${join(ROOT, "test/codegen/schemas/shop.schema.ts")}:1:1: error: the generated module would overwrite the schema file; pick another --out`,
    ]);
    expect(readFileSync(join(ROOT, "test/codegen/schemas/shop.schema.ts"), "utf8")).toMatch(/^\/\/ The shop schema/);
  });

  it("reports an unreadable schema file (missing, or a directory)", () => {
    const dir = mkdtempSync(join(tmpdir(), "later-gen-"));
    try {
      const missing = laterGen([join(dir, "nope.schema.ts")]);
      expect(missing.code).toBe(1);
      expect(missing.stderr.trim()).toBe(`${join(dir, "nope.schema.ts")}:1:1: error: cannot read the schema file: no such file`);
      const directory = laterGen([dir, "--out", join(dir, "x.ts")]);
      expect(directory.code).toBe(1);
      expect(directory.stderr.trim()).toBe(`${dir}:1:1: error: cannot read the schema file: is a directory`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
