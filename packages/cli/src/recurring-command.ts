import { Command } from "commander";
import type { DatabaseUrl, RecurringSchedule } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { databaseOption, namespaceOption, schemaOption } from "./database-option.js";
import { formatTable, type TableColumn } from "./format-table.js";
import { formatTime } from "./format-time.js";
import { withDatabase } from "./with-database.js";

interface RecurringListOptions {
  database: DatabaseUrl;
  schema?: string;
  namespace?: string;
  json?: boolean;
}

/**
 * `later recurring list`: the recurring schedules of one namespace
 * (read-only), ordered by id. Like `later jobs`, it refuses a database whose
 * schema is behind or ahead and never creates a database.
 *
 * The table shows each schedule's id, job type, cron, time zone, mode
 * (`plain`: occurrences may overlap; `sequential`: one at a time, on the
 * partition shown), the next occurrence not yet enqueued (UTC, to the
 * second) and the latest enqueued occurrence's job id. `--json` prints the
 * stored {@link RecurringSchedule} records (times in ms since the epoch,
 * `payload` decoded).
 *
 * ```text
 * ID            TYPE        CRON          TIME ZONE     MODE           NEXT RUN              LAST JOB
 * daily-report  sendReport  0 0 6 * * *   Europe/Paris  sequential/3   2026-01-02T05:00:00Z  01jh2k3m4n5p6q7r8s9t0v1w2x
 * ```
 */
export function recurringCommand(context: CommandContext): Command {
  const recurring = new Command("recurring").description("inspect the recurring schedules stored in a database (read-only)");
  recurring
    .command("list")
    .description("list the recurring schedules with their next run times")
    .addOption(databaseOption())
    .addOption(namespaceOption("schedules"))
    .addOption(schemaOption())
    .option("--json", "print a JSON array of schedules (times in ms since the epoch, payload decoded)")
    .action((options: RecurringListOptions) =>
      withDatabase(
        { database: options.database, namespace: options.namespace, schema: options.schema, create: false, requireCurrentSchema: true },
        async (backend) => {
          const schedules = await backend.recurring.list();
          if (options.json) {
            context.io.out(JSON.stringify(schedules.map(toScheduleJson), null, 2));
            return;
          }
          if (schedules.length === 0) {
            context.io.out(`no recurring schedules in namespace "${backend.namespace}"`);
            return;
          }
          for (const line of formatTable(COLUMNS, schedules)) context.io.out(line);
        },
      ),
    );
  return recurring;
}

const COLUMNS: readonly TableColumn<RecurringSchedule>[] = [
  { title: "ID", value: (s) => s.id },
  { title: "TYPE", value: (s) => s.jobType },
  { title: "CRON", value: (s) => s.cron },
  { title: "TIME ZONE", value: (s) => s.timeZone },
  { title: "MODE", value: (s) => (s.sequential ? `sequential/${s.partition ?? "?"}` : "plain") },
  { title: "NEXT RUN", value: (s) => formatTime(s.nextRunAt) },
  { title: "LAST JOB", value: (s) => s.lastJobId ?? "-" },
];

/** A schedule as `--json` prints it: the stored record with `payload` decoded (left as the stored string when it is not JSON). */
function toScheduleJson(s: RecurringSchedule): Omit<RecurringSchedule, "payload"> & { payload: unknown } {
  try {
    return { ...s, payload: JSON.parse(s.payload) as unknown };
  } catch {
    return s;
  }
}
