import { readFileSync } from "node:fs";
import { Command } from "commander";
import type { CommandContext } from "./command-context.js";
import { dashboardCommand } from "./dashboard-command.js";
import { EXIT_CODES_HELP, GEN_EXIT_CODES_HELP, USAGE_HINT } from "./exit-code.js";
import { genCommand } from "./gen-command.js";
import { jobsCommand } from "./jobs-command.js";
import { logCommand } from "./log-command.js";
import { migrateCommand } from "./migrate-command.js";
import { partitionsCommand } from "./partitions-command.js";
import { recurringCommand } from "./recurring-command.js";

/**
 * The `later` program: `gen`, `migrate status|up`, `jobs list|show`, `recurring list`, `partitions list`, `log topics|tail|groups|lag`, `dashboard`. Run it
 * with `runProgram`, which maps its outcome to an exit code; commander
 * never exits the process itself (`exitOverride`), and writes through
 * `context.io`.
 */
export function createLaterProgram(context: CommandContext): Command {
  const program = new Command("later")
    .description("later: background jobs on SQLite and PostgreSQL. Generate the typed jobs module, migrate a database, inspect its jobs.")
    .version(packageVersion(), "-V, --version", "print the version")
    .addHelpText("after", `\n${EXIT_CODES_HELP}`)
    .addCommand(genCommand(context))
    .addCommand(migrateCommand(context))
    .addCommand(jobsCommand(context))
    .addCommand(recurringCommand(context))
    .addCommand(partitionsCommand(context))
    .addCommand(logCommand(context))
    .addCommand(dashboardCommand(context));
  configure(program, context);
  return program;
}

/** The `later-gen` program: `later gen` on its own. */
export function createLaterGenProgram(context: CommandContext): Command {
  const program = genCommand(context, "later-gen")
    .version(packageVersion(), "-V, --version", "print the version")
    .addHelpText("after", `\n${GEN_EXIT_CODES_HELP}`);
  configure(program, context);
  return program;
}

/**
 * Settings every command needs, applied down the whole tree (commands made
 * with `new Command()` inherit nothing): output through `context.io`,
 * errors thrown instead of exiting, a usage hint after a usage error.
 */
function configure(command: Command, context: CommandContext): void {
  command
    .exitOverride()
    .showHelpAfterError(USAGE_HINT)
    .configureOutput({
      writeOut: (text) => writeLines(text, context.io.out),
      writeErr: (text) => writeLines(text, context.io.err),
    });
  for (const sub of command.commands) configure(sub, context);
}

function writeLines(text: string, write: (line: string) => void): void {
  for (const line of text.replace(/\n$/, "").split("\n")) write(line);
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: string };
  return pkg.version ?? "0.0.0";
}
