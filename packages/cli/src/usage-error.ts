/**
 * A usage mistake found after parsing, when commander could not see it
 * (options that do not fit together, such as `--schema` with a SQLite URL).
 * `runProgram` prints it like commander's own usage errors and exits 2;
 * nothing has been run.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
