/** What `later-gen` is asked to do. */
export interface GenOptions {
  /** The schema file (`jobs.schema.ts`). */
  schemaPath: string;
  /** Where the module goes. Default: the schema's name with `.generated.ts`. */
  outPath?: string;
  /** Compare with the file on disk instead of writing it. */
  check?: boolean;
}

/** Where `later-gen` writes its lines. */
export interface GenIo {
  out(line: string): void;
  err(line: string): void;
}

/** Runs `later-gen`; resolves to the process exit code (0 ok, 1 schema error or stale file, 2 usage). */
export async function runGen(options: GenOptions, io: GenIo): Promise<number> {
  io.err(`later-gen: not built yet (${options.schemaPath})`);
  return 2;
}
