import { createInterface } from "node:readline/promises";
import { type Command, Option } from "commander";
import { isJobId, systemClock, type JobId, type JobStage } from "@later/runtime";
import { JobController, type Backend, type DatabaseUrl } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { databaseOption, namespaceOption, schemaOption } from "./database-option.js";
import { UsageError } from "./usage-error.js";
import { withDatabase } from "./with-database.js";

interface ControlOptions {
  database: DatabaseUrl;
  schema?: string;
  namespace?: string;
  stage?: JobStage;
  type?: string;
  yes?: boolean;
  json?: boolean;
}

/** What each action is called in messages, and the stages its filter form takes. */
const ACTIONS = {
  retry: { done: "retried", stages: ["failed"] as JobStage[], what: "put a failed job back to enqueued, ready now (its history kept)" },
  delete: { done: "deleted", stages: ["success", "failed"] as JobStage[], what: "delete a finished job (success or failed) with its history" },
} as const;

/**
 * `later jobs retry|delete`: retry and delete from outside (docs/semantics.md X7,
 * X12), through the same `JobController` as `server.retry`/`delete`.
 *
 * - `later jobs retry ID` / `later jobs delete ID`: one job; a job in
 *   another stage (`JOB_ACTION_REFUSED`) or an unknown id (`JOB_NOT_FOUND`)
 *   exits 1 with the reason, nothing changed.
 * - `later jobs retry --stage failed [--type T]`, `later jobs delete --stage
 *   success|failed [--type T]`: every matching job, in batches of 1000, each
 *   its own transaction. It first prints how many jobs match, then asks on
 *   a terminal; without one (a script, CI) it needs `--yes`, else exits 2
 *   with the count and nothing changed.
 * - `--json` prints `{ action, id }` or `{ action, matched, count }`.
 */
export function addJobControlCommands(jobs: Command, context: CommandContext): void {
  for (const action of ["retry", "delete"] as const) {
    const a = ACTIONS[action];
    jobs
      .command(action)
      .description(`${a.what}; or, with --stage/--type, every matching job (asks first; --yes without a terminal)`)
      .argument("[id]", "the job id (a 26-character ULID)")
      .addOption(databaseOption())
      .addOption(new Option("--stage <stage>", `every job in this stage (${a.stages.join(", ")})`).choices(a.stages))
      .option("--type <jobType>", "every job of this job type (with --stage, or alone: every stage the action takes)")
      .option("--yes", "do it without asking (needed when stdin is not a terminal)")
      .addOption(namespaceOption("jobs"))
      .addOption(schemaOption())
      .option("--json", "print the outcome as JSON")
      .action(async (id: string | undefined, options: ControlOptions) => {
        const filtered = options.stage !== undefined || options.type !== undefined;
        if (id !== undefined && filtered) throw new UsageError(`later jobs ${action}: give a job id, or --stage/--type for every matching job, not both`);
        if (id === undefined && !filtered) throw new UsageError(`later jobs ${action}: give a job id, or --stage/--type for every matching job`);
        const jobId = id?.trim().toLowerCase();
        if (jobId !== undefined && !isJobId(jobId))
          throw new UsageError(`later jobs ${action}: not a job id: expected a 26-character ULID such as 01jh2k3m4n5p6q7r8s9t0v1w2x`);
        const scope = { database: options.database, namespace: options.namespace, schema: options.schema, create: false, requireCurrentSchema: true };
        await withDatabase(scope, async (backend) => {
          const controller = new JobController(backend, systemClock, () => {});
          if (jobId !== undefined) await byId(context, controller, action, jobId, options);
          else await byFilter(context, backend, controller, action, options);
        });
      });
  }
}

async function byId(context: CommandContext, controller: JobController, action: "retry" | "delete", id: JobId, options: ControlOptions): Promise<void> {
  await (action === "retry" ? controller.retry(id) : controller.delete(id));
  if (options.json) context.io.out(JSON.stringify({ action, id }));
  else context.io.out(action === "retry" ? `retried job ${id}: enqueued, ready now` : `deleted job ${id}`);
}

async function byFilter(
  context: CommandContext,
  backend: Backend,
  controller: JobController,
  action: "retry" | "delete",
  options: ControlOptions,
): Promise<void> {
  const filter = { stage: options.stage, jobType: options.type };
  const matched = await controller.countMatching(action, filter);
  const what = `${matched} job${matched === 1 ? "" : "s"}${options.stage === undefined ? "" : ` in stage ${options.stage}`}${options.type === undefined ? "" : ` of type ${options.type}`} in namespace "${backend.namespace}"`;
  if (matched === 0) {
    if (options.json) context.io.out(JSON.stringify({ action, matched, count: 0 }));
    else context.io.out(`no jobs to ${action}: ${what}`);
    return;
  }
  if (!options.json) context.io.out(`${action} matches ${what}`);
  if (!options.yes) {
    if (!process.stdin.isTTY)
      throw new UsageError(`later jobs ${action} would change ${what}; pass --yes to go ahead (stdin is not a terminal, so it cannot ask)`);
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    const answer = await rl.question(`${action} ${what}? [y/N] `).finally(() => rl.close());
    if (!/^y(es)?$/i.test(answer.trim())) {
      context.io.err("nothing changed");
      context.exitCode = 1;
      return;
    }
  }
  const count = await (action === "retry" ? controller.retryJobs(filter) : controller.deleteJobs(filter));
  if (options.json) context.io.out(JSON.stringify({ action, matched, count }));
  else context.io.out(`${ACTIONS[action].done} ${count} job${count === 1 ? "" : "s"}`);
}
