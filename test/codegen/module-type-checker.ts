/**
 * Type-checks schema files and the modules later-gen writes for them, in memory, with one
 * reused compiler host: files outside the given ones (TypeScript's lib, `@later/runtime`'s
 * `.d.ts`) are parsed once, and each program is built from the previous one, so one check
 * costs tens of milliseconds instead of a fresh compiler's second.
 */
import { join } from "node:path";
import ts from "typescript";
import { ROOT } from "./codegen-cli.js";

/** One compiler error, as `file:line:col TSnnnn message (in: the line's text)`. */
export type Problem = string;

/**
 * The test suite's compiler options (`test/tsconfig.json`: `strict`,
 * `noUncheckedIndexedAccess`, `noImplicitOverride`, `verbatimModuleSyntax`,
 * NodeNext) made stricter still where a user's project may be: exact optional
 * property types and no unused locals or parameters. The generated module must
 * compile under all of them.
 */
export class ModuleTypeChecker {
  private readonly options: ts.CompilerOptions;
  private readonly host: ts.CompilerHost;
  private readonly cache = new Map<string, ts.SourceFile>();
  private files = new Map<string, string>();
  private previous: ts.Program | undefined;

  constructor() {
    const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, "test/tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
    this.options = {
      ...config.options,
      noEmit: true,
      types: [],
      exactOptionalPropertyTypes: true,
      noUnusedLocals: true,
      noUnusedParameters: true,
    };
    const base = ts.createCompilerHost(this.options, true);
    this.host = {
      ...base,
      fileExists: (name) => this.files.has(name) || base.fileExists(name),
      directoryExists: (name) => [...this.files.keys()].some((f) => f.startsWith(`${name}/`)) || ts.sys.directoryExists(name),
      readFile: (name) => this.files.get(name) ?? base.readFile(name),
      getSourceFile: (name, language) => {
        const text = this.files.get(name);
        if (text !== undefined) return ts.createSourceFile(name, text, language, true);
        let file = this.cache.get(name);
        if (!file) {
          file = base.getSourceFile(name, language);
          if (file) this.cache.set(name, file);
        }
        return file;
      },
    };
  }

  /**
   * Compiles `files` (absolute path → text; the paths need not exist, but
   * should sit inside the repository so `@later/runtime` resolves) and
   * returns every error in them, or in the program as a whole.
   */
  check(files: ReadonlyMap<string, string>): Problem[] {
    this.files = new Map(files);
    const program = ts.createProgram([...files.keys()], this.options, this.host, this.previous);
    this.previous = program;
    const diagnostics = [
      ...program.getOptionsDiagnostics(),
      ...program.getGlobalDiagnostics(),
      ...[...files.keys()].flatMap((name) => {
        const source = program.getSourceFile(name);
        return source ? [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)] : [];
      }),
    ];
    return diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error).map(describe);
  }
}

function describe(d: ts.Diagnostic): Problem {
  const message = ts.flattenDiagnosticMessageText(d.messageText, " ");
  if (!d.file || d.start === undefined) return `TS${d.code} ${message}`;
  const at = d.file.getLineAndCharacterOfPosition(d.start);
  const line = d.file.text.split("\n")[at.line]!.trim();
  return `${d.file.fileName.slice(ROOT.length)}:${at.line + 1}:${at.character + 1} TS${d.code} ${message} (in: ${line})`;
}
