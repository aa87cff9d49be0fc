import { Command } from "commander";
import { SchemaVersionError } from "@later/runtime";
import { displayDatabaseUrl, type Backend, type DatabaseUrl, type MigrationStatusResult } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { databaseOption, schemaOption } from "./database-option.js";
import { ExitCode } from "./exit-code.js";
import { formatTime } from "./format-time.js";
import { withDatabase } from "./with-database.js";

interface MigrateOptions {
  database: DatabaseUrl;
  schema?: string;
  json?: boolean;
}

/**
 * `later migrate status|up --database URL`: the later schema of a database.
 * Migrations are numbered and forward-only; both commands are idempotent and
 * safe to run from several processes at once.
 *
 * - `status` prints the current and latest version and every pending
 *   migration (exit 0 whether or not the schema is behind; 1 when the
 *   database cannot be read). With `--check` it exits 1 when the schema is
 *   not the latest (pending migrations, listed on stderr too, or a database
 *   ahead of this release), so CI can gate a deploy on it. It never creates
 *   a database: a missing SQLite file is an error.
 * - `up` applies the pending migrations, creating a missing SQLite file,
 *   and prints what it applied (`nothing to apply` when current). A
 *   database ahead of this release is refused (exit 1).
 *
 * `--json` prints the backend's `MigrationStatusResult` / `MigrationUpResult`.
 */
export function migrateCommand(context: CommandContext): Command {
  const migrate = new Command("migrate").description("show or apply the later schema migrations of a database");
  migrate
    .command("status")
    .description("print the schema version of the database and the migrations still to apply")
    .addOption(databaseOption())
    .addOption(schemaOption())
    .option("--json", "print the status as JSON")
    .option("--check", "exit 1 when the schema is not the latest (migrations pending, or ahead of this release): for CI and deploy scripts")
    .action((options: MigrateOptions & { check?: boolean }) =>
      withDatabase({ database: options.database, schema: options.schema, create: false, requireCurrentSchema: false }, async (backend) => {
        const status = await backend.migrations.status();
        if (options.json) context.io.out(JSON.stringify(status, null, 2));
        else printStatus(context, options.database, backend, status);
        if (options.check && (status.pending.length > 0 || status.current > status.latest)) {
          const n = status.pending.length;
          context.io.err(
            status.current > status.latest
              ? `later: the database is at schema version ${status.current}, ahead of this release (${status.latest}): upgrade later`
              : `later: ${n} pending migration${n === 1 ? "" : "s"} (${status.pending.map((m) => `${m.version} ${m.name}`).join(", ")}): run \`${backend.migrateHint}\``,
          );
          context.exitCode = ExitCode.failed;
        }
      }),
    );
  migrate
    .command("up")
    .description("apply every pending migration (creates a missing SQLite file)")
    .addOption(databaseOption())
    .addOption(schemaOption())
    .option("--json", "print what was applied as JSON")
    .action((options: MigrateOptions) =>
      withDatabase({ database: options.database, schema: options.schema, create: true, requireCurrentSchema: false }, async (backend) => {
        const before = await backend.migrations.status();
        if (before.current > before.latest) throw new SchemaVersionError(before.current, before.latest, backend.migrateHint);
        const result = await backend.migrations.up();
        if (options.json) {
          context.io.out(JSON.stringify(result, null, 2));
          return;
        }
        const where = displayDatabaseUrl(options.database);
        if (result.applied.length === 0) {
          context.io.out(`nothing to apply: ${where} is at schema version ${result.current}, the latest`);
          return;
        }
        for (const m of result.applied) context.io.out(`applied migration ${m.version} (${m.name})`);
        context.io.out(`${where} is at schema version ${result.current}, the latest`);
      }),
    );
  return migrate;
}

function printStatus(context: CommandContext, database: DatabaseUrl, backend: Backend, status: MigrationStatusResult): void {
  const out = (line: string) => context.io.out(line);
  out(`database        ${displayDatabaseUrl(database)}`);
  out(`current version ${status.current}`);
  out(`latest version  ${status.latest}`);
  if (status.current > status.latest) {
    out(`state           ahead: this release of later knows up to version ${status.latest}; upgrade later, never downgrade a migrated database`);
  } else if (status.pending.length === 0) {
    out("state           up to date");
  } else {
    out(`state           behind: ${status.pending.length} pending migration${status.pending.length === 1 ? "" : "s"}; run \`${backend.migrateHint}\``);
  }
  if (status.applied.length > 0) {
    out("applied");
    for (const m of status.applied) out(`  ${String(m.version).padStart(4)}  ${m.name.padEnd(24)}  ${formatTime(m.appliedAt)}`.trimEnd());
  }
  if (status.pending.length > 0) {
    out("pending");
    for (const m of status.pending) out(`  ${String(m.version).padStart(4)}  ${m.name}`);
  }
}
