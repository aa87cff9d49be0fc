/**
 * vitest globalSetup: finds a PostgreSQL server for the PostgreSQL suites
 * and hands its URL to every test file (`inject("laterPostgresUrl")`).
 *
 * In order: `LATER_TEST_PG_URL`; else postgres://postgres@127.0.0.1:5432
 * (database `test`, then `postgres`); else a throwaway cluster started
 * from the local binaries (`/usr/lib/postgresql/<v>/bin`, or
 * `LATER_TEST_PG_BIN`) in a temp folder (`throwaway-cluster.ts`), stopped
 * and removed after the run.
 * `LATER_TEST_PG_CLUSTER=1` skips the first two (to test the last).
 * When none can be had the PostgreSQL suites are skipped with a loud
 * notice, and under `CI=true` the run fails instead.
 */
import pg from "pg";
import type { TestProject } from "vitest/node";
import type {} from "./postgres.js"; // the ProvidedContext key
import { findPostgresBinaries, startThrowawayCluster } from "./throwaway-cluster.js";

async function reachable(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
    return null;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function notice(lines: string[]): void {
  const bar = "!".repeat(78);
  console.warn([bar, ...lines.map((l) => `!! ${l}`), bar].join("\n"));
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const tried: string[] = [];
  let url: string | null = null;
  let stop: (() => Promise<void>) | null = null;
  const forceCluster = process.env.LATER_TEST_PG_CLUSTER === "1";
  const candidates = forceCluster
    ? []
    : process.env.LATER_TEST_PG_URL
      ? [process.env.LATER_TEST_PG_URL]
      : ["postgres://postgres@127.0.0.1:5432/test", "postgres://postgres@127.0.0.1:5432/postgres"];
  for (const candidate of candidates) {
    const error = await reachable(candidate);
    if (error === null) {
      url = candidate;
      break;
    }
    tried.push(`${candidate}: ${error}`);
  }
  if (url === null && (forceCluster || !process.env.LATER_TEST_PG_URL)) {
    const bin = findPostgresBinaries();
    if (bin === null) tried.push("throwaway cluster: no PostgreSQL binaries under /usr/lib/postgresql (set LATER_TEST_PG_BIN)");
    else {
      try {
        const cluster = await startThrowawayCluster({ bin });
        url = cluster.url;
        stop = cluster.destroy;
        console.log(`PostgreSQL tests: throwaway cluster at ${url}`);
      } catch (error) {
        tried.push(`throwaway cluster from ${bin}: ${(error as Error).message}`);
      }
    }
  }
  if (url === null) {
    const lines = [
      "NO POSTGRESQL: the PostgreSQL conformance and multi-process suites are SKIPPED.",
      ...tried,
      "Set LATER_TEST_PG_URL=postgres://user@host:port/db to run them.",
    ];
    if (process.env.CI === "true") throw new Error(`${lines.join("\n")}\nCI=true: PostgreSQL is required, failing the run.`);
    notice(lines);
  }
  project.provide("laterPostgresUrl", url);
  return async () => await stop?.();
}
