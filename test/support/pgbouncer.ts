/**
 * A PgBouncer in transaction mode in front of the run's PostgreSQL server,
 * started by the test that needs it (Debian's `pgbouncer`, which `.ci/run`
 * installs when missing). PgBouncer refuses to run as root, so as root it
 * runs as user postgres, in a temporary folder that user owns.
 *
 * `poolSize` server connections per database and user: with 1, every client
 * shares one server connection, so a statement prepared by one client is
 * "already there" for the next (SQLSTATE 42P05), as in production where
 * many clients share few server connections.
 */
import { execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "./free-port.js";

const BINARY = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find((p) => existsSync(p)) ?? null;

/** Whether PgBouncer is installed (`apt-get install -y pgbouncer`). */
export const pgbouncerInstalled = BINARY !== null;

export interface Pgbouncer {
  /** `postgresUrl` with host and port replaced by the bouncer's. */
  url: string;
  stop(): Promise<void>;
}

/** Starts PgBouncer in transaction mode in front of `postgresUrl`; resolves once it accepts a query. */
export async function startPgbouncer(postgresUrl: string, poolSize: number): Promise<Pgbouncer> {
  if (!BINARY) throw new Error("pgbouncer is not installed (apt-get install -y pgbouncer)");
  const server = new URL(postgresUrl);
  const dir = mkdtempSync(join(tmpdir(), "later-pgbouncer-"));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chownSync(dir, Number(execFileSync("id", ["-u", "postgres"]).toString()), Number(execFileSync("id", ["-g", "postgres"]).toString()));
  const port = await freePort();
  const ini = join(dir, "pgbouncer.ini");
  writeFileSync(
    ini,
    `[databases]
* = host=${server.hostname} port=${server.port || 5432} user=${server.username || "postgres"}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = ${poolSize}
max_client_conn = 200
ignore_startup_parameters = extra_float_digits,options
logfile = ${join(dir, "pgbouncer.log")}
pidfile = ${join(dir, "pgbouncer.pid")}
`,
  );
  if (asRoot) chownSync(ini, Number(execFileSync("id", ["-u", "postgres"]).toString()), Number(execFileSync("id", ["-g", "postgres"]).toString()));
  const child = spawn(asRoot ? "runuser" : BINARY, asRoot ? ["-u", "postgres", "--", BINARY, ini] : [ini], { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = new URL(postgresUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  const stop = async () => {
    // runuser does not pass signals on: signal PgBouncer itself (SIGINT: immediate shutdown), by its pid file.
    const pidFile = join(dir, "pgbouncer.pid");
    if (child.exitCode === null) {
      if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, "utf8").trim()), "SIGINT");
      else child.kill("SIGINT");
    }
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url.toString() });
    client.on("error", () => undefined);
    try {
      await client.connect();
      await client.query("SELECT 1");
      await client.end();
      return { url: url.toString(), stop };
    } catch (error) {
      await client.end().catch(() => undefined);
      if (child.exitCode !== null || Date.now() > deadline) {
        const log = existsSync(join(dir, "pgbouncer.log")) ? readFileSync(join(dir, "pgbouncer.log"), "utf8").slice(-2000) : "";
        await stop();
        throw new Error(`pgbouncer did not start: ${(error as Error).message}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
