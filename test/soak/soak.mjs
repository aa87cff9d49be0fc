#!/usr/bin/env node
// The soak test's command: `pnpm soak [--seconds N] [--seed S] [--backend sqlite|postgres]`.
//
// Runs soak.soak.ts (through vitest, which compiles the TypeScript helpers it
// shares with the multi-process tests) with its own vitest config, once per
// backend, one after the other: SQLite, then PostgreSQL on a throwaway cluster
// of its own. --seconds is the length of each fault phase (default 60); the
// drain and the checks come after it. --seed (default: a random one) drives
// every random choice; it is printed first, with the command that repeats the
// run. Exits with vitest's status: non-zero when any check failed.
import { spawnSync } from "node:child_process";
import { randomInt } from "node:crypto";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const usage = "usage: pnpm soak [--seconds N] [--seed S] [--backend sqlite|postgres]";
let values;
try {
  ({ values } = parseArgs({
    options: { seconds: { type: "string", default: "60" }, seed: { type: "string" }, backend: { type: "string" }, help: { type: "boolean" } },
  }));
} catch (error) {
  console.error(`${error.message}\n${usage}`);
  process.exit(2);
}
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const seconds = Number(values.seconds);
const seed = values.seed === undefined ? randomInt(1, 2 ** 31) : Number(values.seed);
const backends = values.backend === undefined ? ["sqlite", "postgres"] : [values.backend];
if (!Number.isInteger(seconds) || seconds < 1) fail(`--seconds must be a whole number of seconds >= 1, got ${values.seconds}`);
if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) fail(`--seed must be an integer in [0, 2^32), got ${values.seed}`);
if (!backends.every((b) => b === "sqlite" || b === "postgres")) fail(`--backend must be sqlite or postgres, got ${values.backend}`);

const again = `pnpm soak --seconds ${seconds} --seed ${seed}${values.backend === undefined ? "" : ` --backend ${values.backend}`}`;
console.log(`soak: seed ${seed}, ${seconds} s of faults on ${backends.join(", then ")}; to repeat: ${again}`);
const here = dirname(fileURLToPath(import.meta.url));
const vitest = join(dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs");
const run = spawnSync(process.execPath, [vitest, "run", "--config", join(here, "vitest.config.ts")], {
  stdio: "inherit",
  env: { ...process.env, LATER_SOAK_SECONDS: String(seconds), LATER_SOAK_SEED: String(seed), LATER_SOAK_BACKENDS: backends.join(",") },
});
if (run.status !== 0) console.error(`soak failed (seed ${seed}); to repeat: ${again}`);
process.exit(run.status ?? 1);

function fail(message) {
  console.error(`${message}\n${usage}`);
  process.exit(2);
}
