#!/usr/bin/env node
/** The `later-gen` command line: `later gen` on its own. See `later-gen --help`. */
import { processIo, type CommandContext } from "./command-context.js";
import { createLaterGenProgram } from "./program.js";
import { runProgram } from "./run-program.js";

const context: CommandContext = { io: processIo, exitCode: 0 };
process.exitCode = await runProgram(createLaterGenProgram(context), context, process.argv.slice(2));
