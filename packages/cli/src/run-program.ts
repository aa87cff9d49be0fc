import { CommanderError, type Command } from "commander";
import { LaterError } from "@later/runtime";
import type { CommandContext } from "./command-context.js";
import { CommandFailure } from "./command-failure.js";
import { ExitCode, USAGE_HINT } from "./exit-code.js";
import { UsageError } from "./usage-error.js";

/**
 * Parses `argv` (the arguments after the program name) with `program`, runs
 * the chosen action and resolves to the process exit code (see
 * {@link ExitCode}); it never rejects and never calls `process.exit`.
 *
 * - commander's own errors (unknown command or option, missing argument, a
 *   value an argument parser rejected) were already printed by commander
 *   with a usage hint: exit 2. Help and version: exit 0.
 * - a {@link UsageError} (options that do not fit together): printed like
 *   commander's, exit 2.
 * - a {@link LaterError} or {@link CommandFailure}: `<program>: <message>`
 *   on one line, exit 1. Its message says what to do next, so no stack trace.
 * - anything else: `<program>: <message>`, exit 1; the stack trace only when
 *   `LATER_DEBUG=1`.
 *
 * `program` must have been set up with `exitOverride()` (as
 * `createLaterProgram` does), else commander exits the process itself.
 */
export async function runProgram(program: Command, context: CommandContext, argv: readonly string[]): Promise<number> {
  const name = program.name();
  try {
    await program.parseAsync([...argv], { from: "user" });
    return context.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    if (error instanceof UsageError) {
      context.io.err(`error: ${error.message}`);
      context.io.err(USAGE_HINT);
      return ExitCode.usage;
    }
    if (error instanceof LaterError || error instanceof CommandFailure) {
      context.io.err(`${name}: ${oneLine(error.message)}`);
      return ExitCode.failed;
    }
    if (process.env.LATER_DEBUG === "1") {
      context.io.err(`${name}: ${oneLine(describe(error))}`);
      if (error instanceof Error && error.stack) context.io.err(error.stack);
    } else {
      context.io.err(`${name}: ${oneLine(describe(error))} (unexpected error; LATER_DEBUG=1 prints its stack trace)`);
    }
    return ExitCode.failed;
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, " ").trim();
}
