import { createInterface } from "node:readline/promises";
import { type Command, Option } from "commander";
import { isJobId, systemClock, type JobId, type JobStage } from "@later/runtime";
import { CANCELLABLE_STAGES, JobController, RETRYABLE_STAGES, TERMINAL_STAGES, type Backend, type DatabaseUrl } from "@later/runtime/internal";
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
  reason?: string;
}

type Action = "retry" | "delete" | "cancel";

/** What each action is called in messages, and the stages its filter form takes. */
const ACTIONS = {
  retry: { done: "retried", stages: RETRYABLE_STAGES, what: "put a failed or cancelled job back to enqueued, ready now (its history kept)" },
  delete: { done: "deleted", stages: TERMINAL_STAGES, what: "delete a finished job (success, failed or cancelled) with its history" },
  cancel: {
    done: "cancelled",
    stages: CANCELLABLE_STAGES,
    what: "cancel an unfinished job: it ends cancelled at once (a running one's signal aborts within a lease renewal)",
  },
} as const;

/**
 * `later jobs retry|delete|cancel`: retry, delete (docs/semantics.md X7,
 * X12) and cancel (X3) from outside, through the same `JobController` as
 * `server.retry`/`delete`/`cancel`.
 *
 * - `later jobs retry ID` / `later jobs delete ID`: one job; a job in
 *   another stage (`JOB_ACTION_REFUSED`) or an unknown id (`JOB_NOT_FOUND`)
 *   exits 1 with the reason, nothing changed.
 * - `later jobs retry --stage failed [--type T]`, `later jobs delete --stage
 *   success|failed [--type T]`: every matching job, in batches of 1000, each
 *   its own transaction. It first prints how many jobs match, then asks on
 *   a terminal; without one (a script, CI) it needs `--yes`, else exits 2
 *   with the count and nothing changed.
 * - `later jobs cancel ID [--reason R]`: one unfinished job ends
 *   `cancelled` (its waiting continuations with it); a finished one exits 1,
 *   nothing changed; `--reason` is noted in its history. With `--stage
 *   S`/`--type T`: every matching unfinished job, asked first as above.
 * - `--json` prints `{ action, id }` (cancel: with `cancelled`) or `{ action, matched, count }`.
 */
export function addJobControlCommands(jobs: Command, context: CommandContext): void {
  for (const action of ["retry", "delete", "cancel"] as const) {
    const a = ACTIONS[action];
    const command = jobs
      .command(action)
      .description(`${a.what}; or, with --stage/--type, every matching job (asks first; --yes without a terminal)`)
      .argument("[id]", "the job id (a 26-character ULID)")
      .addOption(databaseOption())
      .addOption(new Option("--stage <stage>", `every job in this stage (${a.stages.join(", ")})`).choices(a.stages))
      .option("--type <jobType>", "every job of this job type (with --stage, or alone: every stage the action takes)")
      .option("--yes", "do it without asking (needed when stdin is not a terminal)")
      .addOption(namespaceOption("jobs"))
      .addOption(schemaOption())
      .option("--json", "print the outcome as JSON");
    if (action === "cancel") command.option("--reason <reason>", "why: noted in each cancelled job's history (at most 1000 characters)");
    command.action(async (id: string | undefined, options: ControlOptions) => {
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

async function byId(context: CommandContext, controller: JobController, action: Action, id: JobId, options: ControlOptions): Promise<void> {
  if (action === "cancel") {
    const cancelled = await controller.cancel(id, options.reason);
    if (options.json) context.io.out(JSON.stringify({ action, id, cancelled }));
    else if (cancelled) context.io.out(`cancelled job ${id}`);
    else context.io.err(`job ${id} has finished already (success, failed or cancelled): nothing changed`);
    if (!cancelled) context.exitCode = 1;
    return;
  }
  await (action === "retry" ? controller.retry(id) : controller.delete(id));
  if (options.json) context.io.out(JSON.stringify({ action, id }));
  else context.io.out(action === "retry" ? `retried job ${id}: enqueued, ready now` : `deleted job ${id}`);
}

async function byFilter(context: CommandContext, backend: Backend, controller: JobController, action: Action, options: ControlOptions): Promise<void> {
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
  const count = await (action === "retry"
    ? controller.retryJobs(filter)
    : action === "delete"
      ? controller.deleteJobs(filter)
      : controller.cancelJobs(filter, { reason: options.reason }));
  if (options.json) context.io.out(JSON.stringify({ action, matched, count }));
  else context.io.out(`${ACTIONS[action].done} ${count} job${count === 1 ? "" : "s"}`);
}
