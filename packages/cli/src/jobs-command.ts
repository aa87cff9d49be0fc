import { Command, InvalidArgumentError, Option } from "commander";
import { isJobId, JOB_STAGES, type JobId, type JobStage } from "@later/runtime";
import type { Backend, DatabaseUrl } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { CommandFailure } from "./command-failure.js";
import { databaseOption, namespaceOption, schemaOption } from "./database-option.js";
import { addJobControlCommands } from "./jobs-control-command.js";
import { addJobPauseCommands } from "./jobs-pause-command.js";
import { formatJobDetail } from "./job-detail.js";
import { toJobJson } from "./job-json.js";
import { formatJobTable } from "./job-table.js";
import { withDatabase } from "./with-database.js";

/** Default and largest `--limit` of `later jobs list`. */
export const JOB_LIST_LIMIT = { default: 50, max: 10_000 } as const;

interface JobsOptions {
  database: DatabaseUrl;
  schema?: string;
  namespace?: string;
  json?: boolean;
}

interface JobsListOptions extends JobsOptions {
  stage?: JobStage;
  type?: string;
  limit: number;
}

/**
 * `later jobs list|show`: read-only inspection of the jobs of one namespace
 * (`retry` and `delete` are in `jobs-control-command.ts`).
 * Both refuse a database whose schema is behind or ahead (the
 * `SchemaVersionError` message says what to run) and never create a
 * database (a missing SQLite file is an error).
 *
 * - `list` prints the newest jobs first, as an aligned table (see
 *   `formatJobTable`) followed by the namespace's count per stage and a
 *   `warning:` line per job type whose ready jobs no live server handles
 *   (e.g. `warning: 3 ready deletePhoto jobs have no live handler`), or with
 *   `--json` a JSON array of jobs (see `toJobJson`). `--stage` takes one
 *   of the job stages; any other value is a usage error that lists them.
 * - `show ID` prints every field, the payload, the last error and the
 *   stage history with times; an id the namespace does not hold exits 1.
 */
export function jobsCommand(context: CommandContext): Command {
  const jobs = new Command("jobs").description("inspect the jobs stored in a database; retry or delete them");
  jobs
    .command("list")
    .description("list jobs, newest first")
    .addOption(databaseOption())
    .addOption(new Option("--stage <stage>", "only jobs in this stage").choices(JOB_STAGES))
    .option("--type <jobType>", "only jobs of this job type")
    .addOption(new Option("--limit <n>", `at most this many jobs (1-${JOB_LIST_LIMIT.max})`).argParser(parseLimit).default(JOB_LIST_LIMIT.default))
    .addOption(namespaceOption("jobs"))
    .addOption(schemaOption())
    .option("--json", "print a JSON array of jobs (times in ms since the epoch, payload decoded)")
    .action((options: JobsListOptions) =>
      withDatabase({ ...scopeOf(options), create: false, requireCurrentSchema: true }, async (backend) => {
        const list = await backend.inspect.jobList({ stage: options.stage, jobType: options.type, order: "desc", limit: options.limit });
        if (options.json) {
          context.io.out(JSON.stringify(list.map(toJobJson), null, 2));
          return;
        }
        if (list.length === 0) context.io.out(`no jobs${describeFilter(options)} in namespace "${backend.namespace}"`);
        else for (const line of formatJobTable(list)) context.io.out(line);
        context.io.out("");
        context.io.out(await stageSummary(backend));
        for (const line of await unhandledWarnings(backend)) context.io.out(line);
        if (list.length === options.limit) context.io.out(`showing the newest ${list.length}${describeFilter(options)}; --limit N shows more`);
      }),
    );
  jobs
    .command("show")
    .description("print one job: every field, payload, last error, stage history")
    .argument("<id>", "the job id (a 26-character ULID)", parseJobId)
    .addOption(databaseOption())
    .addOption(namespaceOption("jobs"))
    .addOption(schemaOption())
    .option("--json", "print the job as JSON (times in ms since the epoch, payload decoded)")
    .action((id: JobId, options: JobsOptions) =>
      withDatabase({ ...scopeOf(options), create: false, requireCurrentSchema: true }, async (backend) => {
        const job = await backend.inspect.jobGet({ id });
        if (!job) {
          throw new CommandFailure(
            `job ${id} not found in namespace "${backend.namespace}" (it never existed here, or it finished and expired); --namespace NS looks in another namespace`,
          );
        }
        if (options.json) context.io.out(JSON.stringify(toJobJson(job), null, 2));
        else for (const line of formatJobDetail(job)) context.io.out(line);
      }),
    );
  addJobControlCommands(jobs, context);
  addJobPauseCommands(jobs, context);
  return jobs;
}

function scopeOf(options: JobsOptions) {
  return { database: options.database, namespace: options.namespace, schema: options.schema };
}

function describeFilter(options: JobsListOptions): string {
  const parts = [options.stage === undefined ? "" : ` in stage ${options.stage}`, options.type === undefined ? "" : ` of type ${options.type}`];
  return parts.join("");
}

/** The summary line of `jobs list`: jobs per stage, read from the stage counters (a few rows at any backlog, never a count of the jobs). */
/**
 * The namespace's count per stage; for a namespace with no jobs, the
 * namespaces that have some instead (a mistyped or forgotten `--namespace`
 * is the usual reason for an empty list).
 */
async function stageSummary(backend: Backend): Promise<string> {
  const { counts } = await backend.inspect.stageCounts();
  const total = JOB_STAGES.reduce((sum, s) => sum + counts[s], 0);
  if (total === 0) {
    const others = await backend.inspect.namespaceCounts();
    if (others.length === 0) return `namespace "${backend.namespace}" holds no jobs, and neither does any other namespace of this database`;
    const named = others.map((o) => `"${o.namespace}" (${o.jobs} job${o.jobs === 1 ? "" : "s"})`).join(", ");
    return `namespace "${backend.namespace}" holds no jobs; namespaces with jobs: ${named} (--namespace NS)`;
  }
  return `namespace "${backend.namespace}" holds ${total} job${total === 1 ? "" : "s"}: ${JOB_STAGES.map((s) => `${s} ${counts[s]}`).join(", ")}`;
}

/**
 * One `warning:` line per job type with ready jobs and no live server
 * handling it (no live server published the type with its heartbeat), from
 * `inspect.unhandledJobTypes`: the live servers' rows and a bounded window
 * of the oldest ready jobs, never a count of the jobs.
 */
async function unhandledWarnings(backend: Backend): Promise<string[]> {
  const { jobTypes, complete } = await backend.inspect.unhandledJobTypes({ nowMs: Date.now() });
  return jobTypes.map(
    (u) =>
      `warning: ${complete ? "" : "at least "}${u.ready} ready ${u.jobType} job${u.ready === 1 ? "" : "s"} ${u.ready === 1 ? "has" : "have"} no live handler`,
  );
}

function parseLimit(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > JOB_LIST_LIMIT.max) {
    throw new InvalidArgumentError(`expected a whole number from 1 to ${JOB_LIST_LIMIT.max}`);
  }
  return n;
}

function parseJobId(value: string): JobId {
  const id = value.trim().toLowerCase();
  if (!isJobId(id)) throw new InvalidArgumentError("not a job id: expected a 26-character ULID such as 01jh2k3m4n5p6q7r8s9t0v1w2x");
  return id;
}
