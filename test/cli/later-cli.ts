/**
 * Runs `later` / `later-gen` as a user would: the package's bins (the
 * committed launchers in packages/cli/bin, which import the built program)
 * as a child process of this Node, from the repository root, with the environment
 * cleared of the variables the CLI reads (so a developer's
 * LATER_DATABASE_URL or LATER_NAMESPACE never leaks in). Plus temp folders and a seeded
 * SQLite database.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, onTestFinished } from "vitest";
import { newJobId, RetryPolicy, type JobId } from "@later/runtime";
import type { JobInsert, JobOutcome } from "@later/runtime/internal";
import { sqlite, type SqliteBackend } from "@later/runtime/sqlite";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BINS = { later: "packages/cli/bin/later.js", "later-gen": "packages/cli/bin/later-gen.js" } as const;

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export interface CliRun {
  env?: Record<string, string>;
  cwd?: string;
  bin?: keyof typeof BINS;
}

/** Runs `later ARGS...` to completion. */
export function later(args: readonly string[], run: CliRun = {}): CliResult {
  const script = join(REPO_ROOT, BINS[run.bin ?? "later"]);
  if (!existsSync(join(REPO_ROOT, "packages/cli/dist"))) throw new Error("packages/cli/dist is missing: run pnpm build");
  const env: Record<string, string | undefined> = { ...process.env, ...run.env };
  if (!run.env?.LATER_DATABASE_URL) delete env.LATER_DATABASE_URL;
  if (!run.env?.LATER_DEBUG) delete env.LATER_DEBUG;
  if (!run.env?.LATER_NAMESPACE) delete env.LATER_NAMESPACE;
  const result = spawnSync(process.execPath, [script, ...args], { cwd: run.cwd ?? REPO_ROOT, env, encoding: "utf8", timeout: 30_000 });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A `later` (or another node program) still running (`tail --follow`): its output so far, and its end. */
export interface CliChild {
  child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves to the exit code (null: killed by a signal) once the process ends. */
  exited: Promise<number | null>;
}

/** Starts `later ARGS...` without waiting for it (the caller ends it, e.g. with SIGINT); called in a test, which kills it with SIGKILL if still running at its end. */
export function laterChild(args: readonly string[], run: CliRun = {}): CliChild {
  const env: Record<string, string | undefined> = { ...process.env, ...run.env };
  for (const name of ["LATER_DATABASE_URL", "LATER_DEBUG", "LATER_NAMESPACE"]) if (!run.env?.[name]) delete env[name];
  return nodeChild(join(REPO_ROOT, BINS[run.bin ?? "later"]), args, { cwd: run.cwd ?? REPO_ROOT, env });
}

/** Starts `node SCRIPT ARGS...` in `cwd` with exactly `env`, collecting its output; called in a test, which kills it with SIGKILL if still running at its end. */
export function nodeChild(script: string, args: readonly string[], options: { cwd: string; env: Record<string, string | undefined> }): CliChild {
  const child = spawn(process.execPath, [script, ...args], { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** A fresh temp folder, removed after the test file. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "later-cli-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** No stack frame (`    at fn (file:1:2)`) anywhere in the text. */
export function hasStackTrace(text: string): boolean {
  return /^\s+at .+[:(]/m.test(text);
}

/** The time every seeded change is stored at: 2025-01-02T03:04:05.000Z, plus a few ms per step. */
export const SEED_TIME = Date.UTC(2025, 0, 2, 3, 4, 5);

/** Ids of the seeded jobs, by the stage each was left in. */
export interface SeededJobs {
  enqueued: JobId;
  delayed: JobId;
  waiting: JobId;
  running: JobId;
  requeued: JobId;
  success: JobId;
  failed: JobId;
  /** A job of namespace "other", invisible from "default". */
  otherNamespace: JobId;
  /** Every id of namespace "default", oldest first. */
  all: JobId[];
}

const RETRY = JSON.stringify(RetryPolicy.fixed(3, 1_000));

/**
 * A migrated SQLite file holding one job in every stage, written through
 * the backend the server uses (insert, claim, finish), at fixed times so
 * output is predictable. No server, no waiting.
 */
export async function seedDatabase(file: string): Promise<SeededJobs> {
  const backend = sqlite({ file, namespace: "default" });
  await backend.open();
  await backend.migrations.up();
  let now = SEED_TIME;
  const tick = () => (now += 10);
  const all: JobId[] = [];
  const insert = async (target: SqliteBackend, job: Omit<JobInsert, "id" | "retryPolicy">): Promise<JobId> => {
    const id = newJobId(tick());
    await target.jobs.insertMany({ jobs: [{ id, retryPolicy: RETRY, ...job }], now });
    if (target === backend) all.push(id);
    return id;
  };
  /** Inserts a job of a type of its own and claims it, so it is `running` at attempt 1. */
  const claimed = async (jobType: string, payload: unknown): Promise<JobId> => {
    const id = await insert(backend, { jobType, payload: JSON.stringify(payload), runAt: now });
    const claims = (await backend.jobs.claimReady({ owner: "worker-1", limit: 1, now: tick(), leaseExpiresAt: now + 30_000, jobTypes: [jobType] })).jobs;
    if (claims[0]?.id !== id) throw new Error(`seed: expected to claim ${id}`);
    return id;
  };
  const finish = (id: JobId, outcome: JobOutcome) => backend.jobs.finishMany({ finishes: [{ id, attempt: 1, outcome }], now: tick(), retentionMs: 86_400_000 });
  try {
    const success = await claimed("chargeCard", { amount: 100 });
    await finish(success, { kind: "success" });
    const failed = await claimed("sendEmail", { address: "a@example.com", body: "hello" });
    await finish(failed, { kind: "fail", error: "smtp: connection refused\nafter 3 tries" });
    const requeued = await claimed("resizeImage", { path: "/img/1.png" });
    await finish(requeued, { kind: "retry", runAt: now + 60_000, error: "disk full" });
    const running = await claimed("reportUsage", { month: 1 });
    const enqueued = await insert(backend, { jobType: "sendEmail", payload: JSON.stringify({ address: "b@example.com", body: "hi" }), runAt: now });
    const delayed = await insert(backend, {
      jobType: "sendEmail",
      payload: JSON.stringify({ address: "c@example.com", body: "later" }),
      runAt: now + 3_600_000,
    });
    const waiting = await insert(backend, { jobType: "createAccount", payload: JSON.stringify({ id: "acct-1" }), runAt: now, parentId: enqueued });
    const other = sqlite({ file, namespace: "other" });
    await other.open();
    const otherNamespace = await insert(other, { jobType: "otherJob", payload: "{}", runAt: now });
    await other.close();
    return { enqueued, delayed, waiting, running, requeued, success, failed, otherNamespace, all };
  } finally {
    await backend.close();
  }
}
