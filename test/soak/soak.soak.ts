/**
 * The soak test (issue 16): per backend, four worker processes run plain,
 * delayed, continuation and partitioned jobs, some failing on purpose, while
 * a producer enqueues and random faults hit them (SIGKILL, SIGSTOP past the
 * lease; on PostgreSQL also killed connections and restarts of a throwaway
 * cluster) for `LATER_SOAK_SECONDS`; then a drain without faults, and the
 * checks of soak-report.ts. Run by `pnpm soak` (soak.mjs), which sets the
 * environment: `LATER_SOAK_SECONDS` (default 60), `LATER_SOAK_SEED` (default 1),
 * `LATER_SOAK_BACKENDS` (default `sqlite,postgres`).
 */
import { describe, expect, it } from "vitest";
import { useProcesses } from "../multiprocess/helpers.js";
import { findPostgresBinaries } from "../support/throwaway-cluster.js";
import { runSoak, type SoakBackend } from "./soak-run.js";
import { soakFailures, soakSummary } from "./soak-report.js";

const SECONDS = Number(process.env.LATER_SOAK_SECONDS ?? 60);
const SEED = Number(process.env.LATER_SOAK_SEED ?? 1);
const BACKENDS = (process.env.LATER_SOAK_BACKENDS ?? "sqlite,postgres").split(",") as SoakBackend[];
/** The drain's deadline: every job stored must have succeeded by then (3 minutes, half the fault phase for long runs, whose backlog may be larger). */
const DRAIN_MS = Math.max(180_000, SECONDS * 500);
/** Set-up, shutdown and checks, on top of the fault phase and the drain. */
const OVERHEAD_MS = 120_000;
const noPostgres = findPostgresBinaries() === null && process.env.CI !== "true";

describe.each(BACKENDS)("soak on %s", (backend) => {
  const processes = useProcesses();

  it.skipIf(backend === "postgres" && noPostgres)(
    `${SECONDS} s of faults, then a drain: nothing lost, no unexcused duplicate, partitions in order and fenced, no unhandled error`,
    { timeout: SECONDS * 1_000 + DRAIN_MS + OVERHEAD_MS },
    async () => {
      const result = await runSoak({ backend, seconds: SECONDS, seed: SEED, processes, drainMs: DRAIN_MS });
      console.log(soakSummary(result));
      expect(soakFailures(result)).toEqual([]);
    },
  );
});
