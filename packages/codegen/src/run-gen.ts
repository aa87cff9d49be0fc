import { readFileSync, writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { writeJobsModule } from "./jobs-module-writer.js";
import { readJobsSchema } from "./schema-reader.js";
import { SchemaError } from "./schema-error.js";
import { SchemaErrors } from "./schema-errors.js";

/** What `later-gen` is asked to do. */
export interface GenOptions {
  /** The schema file (`jobs.schema.ts`). */
  schemaPath: string;
  /** Where the module goes. Default: next to the schema, `jobs.schema.ts` → `jobs.generated.ts`. */
  outPath?: string;
  /** Compare with the file on disk instead of writing it. */
  check?: boolean;
  /** The interface whose members are the jobs. Default `Jobs`. */
  interfaceName?: string;
}

/** Where `later-gen` writes its lines. */
export interface GenIo {
  out(line: string): void;
  err(line: string): void;
}

/**
 * Runs `later-gen`; resolves to the process exit code: 0 written or current,
 * 1 schema errors (every one the file has, each printed as
 * `file:line:col: error: reason` on a line of its own; also when
 * the output path is the schema file itself) or, with `check`, a stale or
 * missing file.
 */
export async function runGen(options: GenOptions, io: GenIo): Promise<number> {
  const outPath = options.outPath ?? defaultOutPath(options.schemaPath);
  if (resolve(outPath) === resolve(options.schemaPath)) {
    io.err(`${options.schemaPath}:1:1: error: the generated module would overwrite the schema file; pick another --out`);
    return 1;
  }
  let text: string;
  try {
    const schema = readJobsSchema(options.schemaPath, options.interfaceName ?? "Jobs");
    text = writeJobsModule(schema, { outFile: resolve(outPath) });
  } catch (error) {
    if (error instanceof SchemaError) {
      for (const problem of SchemaErrors.list(error)) io.err(problem.message);
      return 1;
    }
    throw error;
  }
  const shown = relative(process.cwd(), resolve(outPath)) || outPath;
  if (options.check) {
    const current = readIfExists(outPath);
    if (current === text) {
      io.out(`${shown} is current`);
      return 0;
    }
    io.err(`${shown} is ${current === null ? "missing" : "stale"}: run later-gen ${options.schemaPath} --out ${outPath}`);
    return 1;
  }
  if (readIfExists(outPath) !== text) writeFileSync(outPath, text);
  io.out(`wrote ${shown}`);
  return 0;
}

/** `jobs.schema.ts` → `jobs.generated.ts`; any other `x.ts` → `x.generated.ts`. */
export function defaultOutPath(schemaPath: string): string {
  return `${schemaPath.replace(/(\.schema)?\.(m|c)?tsx?$/, "")}.generated.ts`;
}

function readIfExists(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}
