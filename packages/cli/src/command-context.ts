/** Where a `later` command writes, one line at a time. Shaped like `GenIo` of `@later/codegen`, so `runGen` takes it as is. */
export interface CliIo {
  /** A line for stdout (results). */
  out(line: string): void;
  /** A line for stderr (errors, notes). */
  err(line: string): void;
}

/**
 * What every command's action shares: the output, and the exit code an
 * action sets when it ends without throwing (`later gen --check` on a stale
 * file). Errors are not stored here: actions throw them, and `runProgram`
 * prints them and turns them into an exit code.
 */
export interface CommandContext {
  readonly io: CliIo;
  /** Exit code once the action returns; 0 unless the action sets it. */
  exitCode: number;
}

// `later jobs list | head`: a reader that stops early closes the pipe; that
// ends the output, it is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

/** Writes to this process's stdout and stderr. */
export const processIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};
