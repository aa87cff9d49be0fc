/**
 * A problem in `jobs.schema.ts`, reported to the user as
 * `file:line:col: error: reason` — one line, never a stack trace.
 */
export class SchemaError extends Error {
  constructor(
    /** The file as the user named it (or as it was reached from the schema). */
    readonly file: string,
    /** 1-based. */
    readonly line: number,
    /** 1-based. */
    readonly column: number,
    /** One line saying what is wrong and, where it helps, what to write instead. */
    readonly reason: string,
  ) {
    super(`${file}:${line}:${column}: error: ${reason}`);
    this.name = "SchemaError";
  }
}
