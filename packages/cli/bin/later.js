#!/usr/bin/env node
// The `later` command. The program is compiled TypeScript in ../dist (src/later.ts);
// this launcher is committed, so the bin exists from the first install of a
// clone, before anything is built.
import { existsSync } from "node:fs";

const program = new URL("../dist/later.js", import.meta.url);
if (!existsSync(program)) {
  process.stderr.write("later: @later/cli is not built (no dist/later.js): run `pnpm build` at the repository root\n");
  process.exitCode = 1;
} else {
  await import(program.href);
}
