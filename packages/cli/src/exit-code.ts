/**
 * The exit codes of `later` and `later-gen`, stable for scripts and CI.
 *
 * | code | meaning |
 * | --- | --- |
 * | 0 | success (including `--help`, `--version`, a current `gen --check`) |
 * | 1 | the command ran and failed: database error, job, log topic or file not found, schema behind/ahead (`migrate status --check` included), schema error or stale generated file, any unexpected error |
 * | 2 | usage error: unknown command or option, missing or malformed argument; a `jobs retry|delete` filter without `--yes` and no terminal to ask; nothing was run |
 */
export const ExitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
} as const;

/** The exit-code table as printed at the end of `--help`. */
export const EXIT_CODES_HELP = `Examples:
  later migrate status --database sqlite:later.db
  later migrate status --check --database sqlite:later.db   (exit 1 when migrations are pending)
  later migrate up --database sqlite:later.db
  later jobs list --database sqlite:later.db --stage failed
  later jobs show 01jh2k3m4n5p6q7r8s9t0v1w2x --database sqlite:later.db
  later jobs retry 01jh2k3m4n5p6q7r8s9t0v1w2x --database sqlite:later.db
  later jobs delete --stage success --type sendEmail --yes --database sqlite:later.db
  later log tail events --from 0 --follow --database sqlite:later.db
  later dashboard --database sqlite:later.db --port 8080                   (read-only; --allow-actions to retry and delete)
  later gen jobs.schema.ts --out jobs.generated.ts --check

Exit codes:
  0  success
  1  failed: database error, job, log topic or file not found, schema behind or ahead
     (run \`later migrate up\`), schema error or stale generated file
  2  usage error: unknown command or option, missing or malformed argument,
     or \`jobs retry|delete --stage\` without --yes when it cannot ask

Environment:
  LATER_DATABASE_URL  default for --database
  LATER_NAMESPACE     default for --namespace
  LATER_DEBUG=1       print the stack trace of an unexpected error`;

/** The exit-code table of `later-gen` / `later gen`. */
export const GEN_EXIT_CODES_HELP = `Exit codes:
  0  written, or current (--check)
  1  schema error (file:line:col: reason), or a missing or stale file (--check)
  2  usage error: unknown option, missing schema argument`;

/** Printed after every usage error. */
export const USAGE_HINT = "(add --help for usage)";
