import { Command } from "commander";
import type { DatabaseUrl, RecurringScheduleListed } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { CommandFailure } from "./command-failure.js";
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
 * `later recurring list|delete`: the recurring schedules of one namespace.
 * Like `later jobs`, both refuse a database whose schema is behind or ahead
 * and never create a database.
 *
 * `list` (read-only) shows each schedule, ordered by id: its id, job type,
 * cron, time zone, mode (`plain`: occurrences may overlap; `sequential`: one
 * at a time, on the partition shown), `ENQUEUED`: the latest occurrence
 * already enqueued, its run time (UTC, to the second) and job id (`-`: none
 * yet; a run time of `-` with `(deleted)`: its job is gone), and `NEXT`: the
 * next occurrence not yet enqueued, which a server's poller enqueues when
 * it is due. A plain schedule's first occurrence is enqueued at
 * registration, so right after it `NEXT` is the second one: the first to
 * run is in `ENQUEUED`. `--json` prints the stored
 * {@link RecurringScheduleListed} records (times in ms since the epoch,
 * `payload` decoded, `lastRunAt` the enqueued occurrence's run time).
 *
 * ```text
 * ID            TYPE        CRON          TIME ZONE     MODE          ENQUEUED                                          NEXT
 * daily-report  sendReport  0 0 6 * * *   Europe/Paris  sequential/3  2026-01-02T05:00:00Z 01jh2k3m4n5p6q7r8s9t0v1w2x  2026-01-03T05:00:00Z
 * ```
 *
 * `delete <id>` deletes one schedule (occurrences already enqueued stay, as
 * `publisher.deleteRecurring`); an id the namespace has no schedule of exits
 * 1 saying so, nothing changed.
 */
export function recurringCommand(context: CommandContext): Command {
  const recurring = new Command("recurring").description("inspect the recurring schedules stored in a database, or delete one");
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
  recurring
    .command("delete")
    .description("delete a recurring schedule (occurrences already enqueued stay)")
    .argument("<id>", "the schedule id given to enqueueRecurring")
    .addOption(databaseOption())
    .addOption(namespaceOption("schedules"))
    .addOption(schemaOption())
    .option("--json", "print { action, id } as JSON")
    .action((id: string, options: RecurringListOptions) =>
      withDatabase(
        { database: options.database, namespace: options.namespace, schema: options.schema, create: false, requireCurrentSchema: true },
        async (backend) => {
          if (!(await backend.recurring.delete({ id }))) {
            throw new CommandFailure(`no recurring schedule "${id}" in namespace "${backend.namespace}" (later recurring list shows them)`);
          }
          if (options.json) context.io.out(JSON.stringify({ action: "delete", id }));
          else context.io.out(`deleted recurring schedule "${id}" (occurrences already enqueued stay)`);
        },
      ),
    );
  return recurring;
}

const COLUMNS: readonly TableColumn<RecurringScheduleListed>[] = [
  { title: "ID", value: (s) => s.id },
  { title: "TYPE", value: (s) => s.jobType },
  { title: "CRON", value: (s) => s.cron },
  { title: "TIME ZONE", value: (s) => s.timeZone },
  { title: "MODE", value: (s) => (s.sequential ? `sequential/${s.partition ?? "?"}` : "plain") },
  { title: "ENQUEUED", value: enqueuedCell },
  { title: "NEXT", value: (s) => formatTime(s.nextRunAt) },
];

/** The occurrence already enqueued: its run time and job id; `-` before any. */
function enqueuedCell(s: RecurringScheduleListed): string {
  if (s.lastJobId === null) return "-";
  return s.lastRunAt === null ? `- ${s.lastJobId} (deleted)` : `${formatTime(s.lastRunAt)} ${s.lastJobId}`;
}

/** A schedule as `--json` prints it: the stored record with `payload` decoded (left as the stored string when it is not JSON). */
function toScheduleJson(s: RecurringScheduleListed): Omit<RecurringScheduleListed, "payload"> & { payload: unknown } {
  try {
    return { ...s, payload: JSON.parse(s.payload) as unknown };
  } catch {
    return s;
  }
}
