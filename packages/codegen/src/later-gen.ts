#!/usr/bin/env node
import { parseArgs } from "node:util";
import { runGen } from "./run-gen.js";

const USAGE = `usage: later-gen <jobs.schema.ts> [--out FILE] [--check] [--interface NAME]

Writes the typed jobs module for a schema file.
  --out FILE        where to write it (default: jobs.schema.ts -> jobs.generated.ts)
  --check           write nothing; exit 1 when FILE is missing or stale (for CI)
  --interface NAME  the interface whose members are the jobs (default Jobs)

Every error of the schema is printed, one "file:line:col: error: reason" line each.
exit codes: 0 written or current, 1 schema errors or stale file, 2 usage error`;

/** The `later-gen` program; the `later` CLI's \`gen\` command runs the same {@link runGen}. */
async function main(argv: string[]): Promise<number> {
  const config = {
    args: argv,
    allowPositionals: true,
    options: { out: { type: "string" }, check: { type: "boolean" }, interface: { type: "string" }, help: { type: "boolean", short: "h" } },
  } as const;
  let parsed: ReturnType<typeof parseArgs<typeof config>>;
  try {
    parsed = parseArgs(config);
  } catch (error) {
    console.error(`later-gen: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(USAGE);
    return 0;
  }
  const [schemaPath, ...extra] = parsed.positionals;
  if (!schemaPath || extra.length > 0) {
    console.error(`later-gen: ${schemaPath ? `unexpected argument ${extra[0]}` : "missing the schema file"}\n${USAGE}`);
    return 2;
  }
  return runGen(
    {
      schemaPath,
      ...(parsed.values.out ? { outPath: parsed.values.out } : {}),
      check: parsed.values.check ?? false,
      ...(parsed.values.interface ? { interfaceName: parsed.values.interface } : {}),
    },
    { out: (line) => console.log(line), err: (line) => console.error(line) },
  );
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`later-gen: ${(error as Error)?.message ?? String(error)}`);
    process.exitCode = 1;
  },
);
