/**
 * A PostgreSQL cluster of a test's own, from the local binaries
 * (`/usr/lib/postgresql/<newest>/bin`, or `LATER_TEST_PG_BIN`): `initdb` in a
 * temporary folder, then `pg_ctl`. PostgreSQL refuses to run as root, so as
 * root every tool runs as user postgres (through `runuser`), in a folder that
 * user owns.
 *
 * The port is chosen once, at creation, and kept: URLs handed out stay valid
 * across `restart`, `stop` and `start`, as a production server's address does
 * across its restarts and outages.
 *
 * ```text
 *   startThrowawayCluster() ──► running ──stop(mode)──► stopped ──start()──► running
 *                                  └─restart(mode): stop and start again, one pg_ctl call
 *   destroy() from any state ──► gone: server stopped (-m immediate), folder removed (idempotent)
 * ```
 *
 * Every `pg_ctl` call waits (`-w`) until the server accepts connections or has
 * stopped. A cluster not destroyed when its process exits (a test that threw
 * past its cleanup, a killed vitest worker) is destroyed by an exit hook.
 */
import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.js";

const run = promisify(execFile);

/** How `pg_ctl` stops the server: `fast` rolls back open transactions and closes connections; `immediate` kills every server process at once (crash recovery at the next start). */
export type ShutdownMode = "fast" | "immediate";

export interface ThrowawayClusterOptions {
  /** Folder of `initdb`, `pg_ctl`. Default {@link findPostgresBinaries}. */
  bin?: string;
  /** Extra server settings (`-c name=value`). Always set: `fsync=off`, `listen_addresses=127.0.0.1`, `max_connections=200`. */
  settings?: Record<string, string | number>;
}

export interface ThrowawayCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  readonly url: string;
  readonly port: number;
  /** True between a successful start and the next stop. */
  readonly running: boolean;
  /** `pg_ctl restart -m <mode>`: down and up again, on the same port; resolves once it accepts connections. */
  restart(mode: ShutdownMode): Promise<void>;
  /** `pg_ctl stop -m <mode>` (default fast); the data stays, `start()` brings it back. */
  stop(mode?: ShutdownMode): Promise<void>;
  /** Starts a stopped cluster again (after `-m immediate`, with crash recovery). */
  start(): Promise<void>;
  /** Stops the server (immediate) and removes its folder. Idempotent. */
  destroy(): Promise<void>;
  /** The end of the server log, for failure messages. */
  logTail(chars?: number): string;
}

/** The newest local PostgreSQL binaries folder, or null when there is none. */
export function findPostgresBinaries(): string | null {
  if (process.env.LATER_TEST_PG_BIN) return process.env.LATER_TEST_PG_BIN;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : null;
}

/** initdb + `pg_ctl start` in a fresh temporary folder; resolves once the server accepts connections. */
export async function startThrowawayCluster(options: ThrowawayClusterOptions = {}): Promise<ThrowawayCluster> {
  const bin = options.bin ?? findPostgresBinaries();
  if (bin === null) throw new Error("no PostgreSQL binaries under /usr/lib/postgresql (set LATER_TEST_PG_BIN)");
  const dir = mkdtempSync(join(tmpdir(), "later-pg-"));
  const data = join(dir, "data");
  const logFile = join(dir, "server.log");
  const asRoot = process.getuid?.() === 0;
  if (asRoot)
    chownSync(dir, Number(execFileSync("id", ["-u", "postgres"]).toString().trim()), Number(execFileSync("id", ["-g", "postgres"]).toString().trim()));
  const command = (tool: string, args: string[]): [string, string[]] =>
    asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, tool), ...args]] : [join(bin, tool), args];
  const tool = async (name: string, args: string[]) => {
    try {
      await run(...command(name, args));
    } catch (error) {
      const e = error as Error & { stderr?: string };
      throw new Error(`${name} ${args.join(" ")} failed: ${e.stderr || e.message}\n${logTail(2_000)}`);
    }
  };
  const logTail = (chars = 4_000) => (existsSync(logFile) ? readFileSync(logFile, "utf8").slice(-chars) : "");

  const port = await freePort();
  const settings = { listen_addresses: "127.0.0.1", fsync: "off", max_connections: 200, ...options.settings };
  const serverOptions = [`-p ${port}`, `-k ${dir}`, ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)].join(" ");
  const pgCtl = (args: string[]) => tool("pg_ctl", ["-D", data, "-l", logFile, "-w", ...args]);

  let running = false;
  let destroyed = false;
  // The last resort when the process ends without destroy(): synchronous, as exit hooks must be.
  const onExit = () => {
    if (destroyed) return;
    try {
      execFileSync(...command("pg_ctl", ["-D", data, "-m", "immediate", "stop"]), { stdio: "ignore" });
    } catch {
      // not running
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", onExit);

  const cluster: ThrowawayCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    get running() {
      return running;
    },
    async restart(mode) {
      running = false;
      await pgCtl(["-m", mode, "-o", serverOptions, "restart"]);
      running = true;
    },
    async stop(mode = "fast") {
      running = false;
      await pgCtl(["-m", mode, "stop"]);
    },
    async start() {
      await pgCtl(["-o", serverOptions, "start"]);
      running = true;
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      process.off("exit", onExit);
      running = false;
      try {
        await tool("pg_ctl", ["-D", data, "-m", "immediate", "stop"]);
      } catch {
        // already stopped
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    logTail,
  };
  try {
    await tool("initdb", ["-A", "trust", "--no-sync", "-U", "postgres", "-D", data]);
    await cluster.start();
  } catch (error) {
    await cluster.destroy();
    throw error;
  }
  return cluster;
}
