import type { Command } from "commander";
import { systemClock, type PausedEntry, type PauseTarget } from "@later/runtime";
import { PauseController, type DatabaseUrl } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { databaseOption, namespaceOption, schemaOption } from "./database-option.js";
import { formatTable } from "./format-table.js";
import { formatTime } from "./format-time.js";
import { UsageError } from "./usage-error.js";
import { withDatabase } from "./with-database.js";

interface PauseOptions {
  database: DatabaseUrl;
  schema?: string;
  namespace?: string;
  type?: string;
  topic?: string;
  json?: boolean;
}

/**
 * `later jobs pause|resume|paused` (docs/semantics.md X4), through the same
 * `PauseController` as `server.pause`/`resume`:
 *
 * - `later jobs pause --type T` / `--topic T`: stores the pause; every
 *   server of the namespace stops starting jobs of it within its poll
 *   interval (running ones finish, enqueue goes on). Already paused: says
 *   so, exit 0 (idempotent). An unknown job type (`JOB_TYPE_NOT_FOUND`) or
 *   topic (`UNKNOWN_TOPIC`) exits 1, nothing written: the CLI handles no
 *   type itself, so a type is known from the servers' rows or its stored
 *   jobs and schedules.
 * - `later jobs resume --type T` / `--topic T`: deletes it; servers wake at
 *   once. Not paused: says so, exit 0.
 * - `later jobs paused`: the paused job types and topics with their times.
 * - `--json`: `{ action, jobType | topic, changed }`, or the list.
 */
export function addJobPauseCommands(jobs: Command, context: CommandContext): void {
  for (const action of ["pause", "resume"] as const) {
    jobs
      .command(action)
      .description(
        action === "pause"
          ? "pause a job type or topic on every server of the namespace (running jobs finish; enqueue goes on)"
          : "resume a paused job type or topic (servers wake at once)",
      )
      .addOption(databaseOption())
      .option("--type <jobType>", `${action} this job type`)
      .option("--topic <topic>", `${action} this topic (every partition)`)
      .addOption(namespaceOption("jobs"))
      .addOption(schemaOption())
      .option("--json", "print the outcome as JSON")
      .action(async (options: PauseOptions) => {
        if ((options.type === undefined) === (options.topic === undefined))
          throw new UsageError(`later jobs ${action}: give exactly one of --type <jobType> and --topic <topic>`);
        const target: PauseTarget = options.type !== undefined ? { jobType: options.type } : { topic: options.topic! };
        await withDatabase(scopeOf(options), async (backend) => {
          const controller = new PauseController(
            backend,
            () => systemClock.now(),
            new Set(),
            () => {},
          );
          const changed = await (action === "pause" ? controller.pause(target) : controller.resume(target));
          if (options.json) {
            context.io.out(JSON.stringify({ action, ...target, changed }));
            return;
          }
          const what = `${"jobType" in target && target.jobType !== undefined ? `job type ${target.jobType}` : `topic ${target.topic}`} in namespace "${backend.namespace}"`;
          if (action === "pause")
            context.io.out(changed ? `paused ${what}: servers start no new job of it within their poll interval` : `${what} was already paused`);
          else context.io.out(changed ? `resumed ${what}: servers wake at once` : `${what} was not paused`);
        });
      });
  }
  jobs
    .command("paused")
    .description("list the paused job types and topics")
    .addOption(databaseOption())
    .addOption(namespaceOption("jobs"))
    .addOption(schemaOption())
    .option("--json", "print a JSON array of { jobType | topic, pausedAt } (ms since the epoch)")
    .action((options: PauseOptions) =>
      withDatabase(scopeOf(options), async (backend) => {
        const list = await new PauseController(
          backend,
          () => systemClock.now(),
          new Set(),
          () => {},
        ).listPaused();
        if (options.json) context.io.out(JSON.stringify(list, null, 2));
        else if (list.length === 0) context.io.out(`nothing is paused in namespace "${backend.namespace}"`);
        else
          for (const line of formatTable<PausedEntry>(
            [
              { title: "KIND", value: (p) => ("jobType" in p ? "type" : "topic") },
              { title: "NAME", value: (p) => ("jobType" in p ? p.jobType : p.topic) },
              { title: "PAUSED AT", value: (p) => formatTime(p.pausedAt) },
            ],
            list,
          ))
            context.io.out(line);
      }),
    );
}

function scopeOf(options: PauseOptions) {
  return { database: options.database, namespace: options.namespace, schema: options.schema, create: false, requireCurrentSchema: true };
}
