/**
 * vitest globalSetup: finds a PostgreSQL server for the PostgreSQL suites
 * and hands its URL to every test file (`inject("laterPostgresUrl")`).
 *
 * In order: `LATER_TEST_PG_URL`; else postgres://postgres@127.0.0.1:5432
 * (database `test`, then `postgres`); else a throwaway cluster started
 * from the local binaries (`/usr/lib/postgresql/<v>/bin`, or
 * `LATER_TEST_PG_BIN`) in a temp folder, stopped after the run.
 * `LATER_TEST_PG_CLUSTER=1` skips the first two (to test the last).
 * When none can be had the PostgreSQL suites are skipped with a loud
 * notice, and under `CI=true` the run fails instead.
 */
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import type {} from "./postgres.js"; // the ProvidedContext key

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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function findBinaries(): string | null {
  if (process.env.LATER_TEST_PG_BIN) return process.env.LATER_TEST_PG_BIN;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : null;
}

/** initdb + pg_ctl start in a temp folder (as user postgres when running as root: PostgreSQL refuses root). */
async function startThrowawayCluster(bin: string): Promise<{ url: string; stop: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), "later-pg-"));
  const data = join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  if (asRoot)
    chownSync(dir, Number(execFileSync("id", ["-u", "postgres"]).toString().trim()), Number(execFileSync("id", ["-g", "postgres"]).toString().trim()));
  const run = (tool: string, args: string[]) =>
    execFileSync(asRoot ? "runuser" : join(bin, tool), asRoot ? ["-u", "postgres", "--", join(bin, tool), ...args] : args, { stdio: "pipe" });
  const port = await freePort();
  run("initdb", ["-A", "trust", "--no-sync", "-U", "postgres", "-D", data]);
  run("pg_ctl", [
    "-D",
    data,
    "-l",
    join(dir, "server.log"),
    "-w",
    "-o",
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
    "start",
  ]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

function notice(lines: string[]): void {
  const bar = "!".repeat(78);
  console.warn([bar, ...lines.map((l) => `!! ${l}`), bar].join("\n"));
}

export default async function setup(project: TestProject): Promise<() => void> {
  const tried: string[] = [];
  let url: string | null = null;
  let stop: (() => void) | null = null;
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
    const bin = findBinaries();
    if (bin === null) tried.push("throwaway cluster: no PostgreSQL binaries under /usr/lib/postgresql (set LATER_TEST_PG_BIN)");
    else {
      try {
        const cluster = await startThrowawayCluster(bin);
        url = cluster.url;
        stop = cluster.stop;
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
  return () => stop?.();
}
