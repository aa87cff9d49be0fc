// Type tests: each fixture in type-errors/ misuses the generated module once, on the line marked
// "// error: TSnnnn"; the compiler must report exactly that error there and nothing else. ok.ts,
// the control, uses the same module correctly and must compile cleanly.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT } from "./codegen-cli.js";

const DIR = join(ROOT, "test/codegen/type-errors");
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith(".ts"))
  .sort();

function compile(): Map<string, ts.Diagnostic[]> {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, "test/tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  const program = ts.createProgram(
    FILES.map((f) => join(DIR, f)),
    { ...config.options, noEmit: true },
  );
  const byFile = new Map<string, ts.Diagnostic[]>(FILES.map((f) => [f, []]));
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const name = d.file ? d.file.fileName.slice(DIR.length + 1) : "(global)";
    if (!byFile.has(name)) byFile.set(name, []);
    byFile.get(name)!.push(d);
  }
  return byFile;
}

describe("misuse of a generated module fails to compile", () => {
  const diagnostics = compile();

  it("compiles the control file and nothing outside the fixtures fails", () => {
    const text = (list: ts.Diagnostic[] | undefined) => (list ?? []).map((d) => ts.flattenDiagnosticMessageText(d.messageText, " "));
    expect(text(diagnostics.get("ok.ts"))).toEqual([]);
    expect(text(diagnostics.get("(global)"))).toEqual([]);
    expect(FILES.length).toBeGreaterThanOrEqual(5);
  });

  it.each(FILES.filter((f) => f !== "ok.ts"))("%s", (file) => {
    const lines = readFileSync(join(DIR, file), "utf8").split("\n");
    const marked = lines.findIndex((l) => /\/\/ error: TS\d+$/.test(l));
    expect(marked, "the fixture marks its bad line").toBeGreaterThan(0);
    const code = Number(/TS(\d+)$/.exec(lines[marked]!)![1]);
    const found = (diagnostics.get(file) ?? []).map((d) => ({
      line: d.file!.getLineAndCharacterOfPosition(d.start!).line,
      code: d.code,
      message: ts.flattenDiagnosticMessageText(d.messageText, " "),
    }));
    expect(found.map(({ line, code }) => ({ line, code }))).toEqual([{ line: marked, code }]);
  });
});
