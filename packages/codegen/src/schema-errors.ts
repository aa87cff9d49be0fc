import { SchemaError } from "./schema-error.js";

/**
 * Every problem `later-gen` found in one schema file, so that one run shows
 * them all instead of one per run. It is a {@link SchemaError} itself (the
 * first problem's `file`, `line`, `column` and `reason`), so code that
 * handles one error handles it; `errors` holds each problem, in file order,
 * and `message` is their lines, one per problem.
 */
export class SchemaErrors extends SchemaError {
  /** Each problem, sorted by file, line and column; never empty. */
  readonly errors: readonly SchemaError[];

  private constructor(errors: readonly SchemaError[]) {
    const first = errors[0]!;
    super(first.file, first.line, first.column, first.reason);
    this.errors = errors;
    this.message = errors.map((e) => e.message).join("\n");
    this.name = "SchemaErrors";
  }

  /** The problems of `errors` (an aggregate counts as each of its problems), sorted, each once. */
  static of(errors: readonly SchemaError[]): SchemaErrors {
    const flat = errors.flatMap((e) => (e instanceof SchemaErrors ? e.errors : [e]));
    const seen = new Set<string>();
    const unique = flat.filter((e) => !seen.has(e.message) && seen.add(e.message));
    unique.sort((a, b) => (a.file === b.file ? a.line - b.line || a.column - b.column : a.file < b.file ? -1 : 1));
    return new SchemaErrors(unique);
  }

  /** The problems a caught error stands for: its list, or itself. */
  static list(error: SchemaError): readonly SchemaError[] {
    return error instanceof SchemaErrors ? error.errors : [error];
  }
}

/**
 * Collects the problems of one schema: each step reports what it finds and
 * goes on, and {@link throwIfAny} ends the read with all of them.
 */
export class SchemaProblems {
  private readonly found: SchemaError[] = [];

  /** Records `error` (each problem of an aggregate). */
  report(error: SchemaError): void {
    this.found.push(error);
  }

  /** Runs `step`; a `SchemaError` it throws is recorded instead of ending the read. Other errors propagate. */
  attempt<T>(step: () => T): T | undefined {
    try {
      return step();
    } catch (error) {
      if (!(error instanceof SchemaError)) throw error;
      this.report(error);
      return undefined;
    }
  }

  get count(): number {
    return this.found.length;
  }

  /** Throws a {@link SchemaErrors} of everything recorded, if anything was. */
  throwIfAny(): void {
    if (this.found.length > 0) throw SchemaErrors.of(this.found);
  }
}
