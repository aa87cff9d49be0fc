#!/usr/bin/env node
/**
 * The `later` command line. See `later --help`; the exit codes are listed
 * there and in `exit-code.ts`.
 */
import { processIo, type CommandContext } from "./command-context.js";
import { createLaterProgram } from "./program.js";
import { runProgram } from "./run-program.js";

const context: CommandContext = { io: processIo, exitCode: 0 };
process.exitCode = await runProgram(createLaterProgram(context), context, process.argv.slice(2));
