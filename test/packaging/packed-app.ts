/**
 * An application in an empty folder that installs the packed packages
 * with npm, as a user does. {@link packWorkspace} packs `@later/runtime`,
 * `@later/codegen` and `@later/cli` with `pnpm pack` (which turns
 * `workspace:` ranges into versions); a {@link PackedApp} is a folder with a
 * `package.json` (type module), a `.npmrc` and a strict `tsconfig.json`,
 * where commands run as child processes.
 *
 * Child processes get this process's environment without the `npm_*` and
 * `pnpm_*` variables a `pnpm test` run sets (they would steer npm), and
 * without `LATER_*` (a developer's `LATER_DATABASE_URL` must not leak in).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The packages a user installs, by workspace folder. */
export const PACKAGES = ["runtime", "codegen", "cli"] as const;

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd: string;
  /** Added to the cleaned environment. */
  env?: Record<string, string>;
  /** Killed (and reported as failed) after this long, ms. Default 120000. */
  timeoutMs?: number;
}

function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    // NODE_PATH: pnpm's bin shims (vitest's) point it into the workspace's node_modules/.pnpm, where every
    // devDependency (pg, better-sqlite3, @opentelemetry/api) would resolve for the app as if it were installed.
    if (!/^(npm_|pnpm_|LATER_)/i.test(key) && key !== "NODE_PATH") env[key] = value;
  }
  return { ...env, ...extra };
}

/** Runs `command args...` to its end; resolves with its exit code and output (never rejects on a failed exit). */
export function run(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: childEnv(options.env),
      stdio: ["ignore", "pipe", "pipe"],
      timeout: options.timeoutMs ?? 120_000,
      killSignal: "SIGKILL",
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.once("error", reject);
    child.once("close", (code, signal) => {
      resolve({ code, stdout, stderr: signal ? `${stderr}\n[killed by ${signal}: timed out after ${options.timeoutMs ?? 120_000} ms]` : stderr });
    });
  });
}

/** Runs the command and throws, with its output, unless it exits 0. */
export async function mustRun(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    throw new Error(`\`${command} ${args.join(" ")}\` in ${options.cwd} exited ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
  }
  return result;
}

/**
 * pnpm: the one running this test (`pnpm test` sets `npm_execpath`), else
 * the `pnpm` on the PATH (`corepack enable pnpm` puts it there).
 */
function pnpmCommand(): [string, string[]] {
  const execPath = process.env.npm_execpath;
  if (execPath && /pnpm/.test(execPath) && existsSync(execPath)) return [process.execPath, [execPath]];
  return ["pnpm", []];
}

/**
 * Packs the three packages into `dest` (they must be built: `pnpm build`)
 * and resolves to the tarballs' paths, runtime first.
 */
export async function packWorkspace(dest: string): Promise<string[]> {
  const [pnpm, prefix] = pnpmCommand();
  const tarballs: string[] = [];
  for (const name of PACKAGES) {
    const folder = join(REPO_ROOT, "packages", name);
    if (!existsSync(join(folder, "dist"))) throw new Error(`packages/${name}/dist is missing: run pnpm build first`);
    const into = join(dest, name);
    mkdirSync(into, { recursive: true });
    await mustRun(pnpm, [...prefix, "pack", "--pack-destination", into], { cwd: folder, timeoutMs: 120_000 });
    const files = readdirSync(into).filter((f) => f.endsWith(".tgz"));
    if (files.length !== 1) throw new Error(`pnpm pack of packages/${name} wrote ${files.length} tarballs`);
    tarballs.push(join(into, files[0]!));
  }
  return tarballs;
}

/** The compiler options a strict user has: `strict`, and declaration files checked (`skipLibCheck: false`). */
export const STRICT_TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    skipLibCheck: false,
    types: ["node"],
    outDir: "dist",
  },
  include: ["*.ts"],
};

/** An application folder that installs the packed packages with npm. */
export class PackedApp {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.write({
      "package.json": JSON.stringify({ name: "later-packed-app", private: true, type: "module" }, null, 2),
      // better-sqlite3 compiles from source here: node-gyp takes Node's headers from /usr.
      ".npmrc": "nodedir=/usr\n",
      "tsconfig.json": JSON.stringify(STRICT_TSCONFIG, null, 2),
    });
  }

  /** Writes files (name → text) into the app folder. */
  write(files: Record<string, string>): void {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(this.dir, name), text);
  }

  /** `npm install` of the tarballs and `packages` (npm specs), as a user's first install. */
  async install(tarballs: readonly string[], packages: readonly string[]): Promise<void> {
    await mustRun("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...tarballs, ...packages], { cwd: this.dir, timeoutMs: 12 * 60_000 });
  }

  /** `npm install` of `packages` (npm specs) into the installed app, as a user adding one later. */
  async add(packages: readonly string[]): Promise<void> {
    await mustRun("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...packages], { cwd: this.dir, timeoutMs: 5 * 60_000 });
  }

  /** `npx --no -- <bin> args...`: a bin the install linked into node_modules/.bin. */
  npx(bin: string, args: readonly string[], env?: Record<string, string>): Promise<RunResult> {
    return run("npx", ["--no", "--", bin, ...args], { cwd: this.dir, timeoutMs: 120_000, ...(env ? { env } : {}) });
  }

  /** Whether `node_modules/<name>` exists. */
  has(name: string): boolean {
    return existsSync(join(this.dir, "node_modules", name));
  }

  /** Every `package.json` of a package named `name` under node_modules, at any depth (one copy is one path). */
  copiesOf(name: string): string[] {
    const found: string[] = [];
    const walk = (modules: string) => {
      if (!existsSync(modules)) return;
      for (const entry of readdirSync(modules, { withFileTypes: true })) {
        if (!entry.isDirectory()) continue;
        const path = join(modules, entry.name);
        if (entry.name.startsWith("@")) {
          for (const scoped of readdirSync(path, { withFileTypes: true }))
            if (scoped.isDirectory()) visit(join(path, scoped.name), `${entry.name}/${scoped.name}`);
        } else if (!entry.name.startsWith(".")) visit(path, entry.name);
      }
    };
    const visit = (path: string, packageName: string) => {
      if (packageName === name && existsSync(join(path, "package.json"))) found.push(path);
      walk(join(path, "node_modules"));
    };
    walk(join(this.dir, "node_modules"));
    return found;
  }
}
