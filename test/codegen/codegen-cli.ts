/** Runs the built `later-gen` as a user would: a child process. */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = fileURLToPath(new URL("../../packages/codegen/dist/later-gen.js", import.meta.url));

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `later-gen ...args` in `cwd` (default the repository root). */
export function laterGen(args: string[], cwd = ROOT): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
