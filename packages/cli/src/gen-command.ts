import { Command } from "commander";
import type { CommandContext } from "./command-context.js";

interface GenCommandOptions {
  out?: string;
  check?: boolean;
}

/**
 * `later gen <schema> [--out FILE] [--check]`, also the whole of the
 * `later-gen` program (`name` = `"later-gen"`): both hand the work to
 * `runGen` of `@later/codegen` and exit with the code it resolves to.
 * Codegen (ts-morph) is loaded only when this command runs: it takes most
 * of a second, which `later jobs list` should not pay.
 */
export function genCommand(context: CommandContext, name = "gen"): Command {
  return new Command(name)
    .description(`write the typed jobs module for a jobs.schema.ts file${name === "gen" ? " (the same as later-gen)" : ""}`)
    .argument("<schema>", "the schema file, e.g. jobs.schema.ts")
    .option("--out <file>", "where to write the module (default: jobs.schema.ts -> jobs.generated.ts, next to the schema)")
    .option("--check", "write nothing; exit 1 when the file is missing or stale (for CI)")
    .action(async (schemaPath: string, options: GenCommandOptions) => {
      const { runGen } = await import("@later/codegen");
      context.exitCode = await runGen({ schemaPath, outPath: options.out, check: options.check ?? false }, context.io);
    });
}
