import { createServer, type Server } from "node:http";
import { Command, InvalidArgumentError, Option } from "commander";
import { createDashboard, toNodeHandler } from "@later/runtime/dashboard";
import { displayDatabaseUrl, type DatabaseUrl } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { CommandFailure } from "./command-failure.js";
import { databaseOption, namespaceOption, schemaOption } from "./database-option.js";
import { withDatabase } from "./with-database.js";

/** Default `--port`. */
export const DASHBOARD_PORT = 8080;
/** Default `--host`: this machine only. */
export const DASHBOARD_HOST = "127.0.0.1";

interface DashboardCommandOptions {
  database: DatabaseUrl;
  schema?: string;
  namespace?: string;
  port: number;
  host: string;
  readOnly?: boolean;
  allowActions?: boolean;
}

/**
 * `later dashboard --database URL [--port 8080] [--host 127.0.0.1]
 * [--allow-actions | --read-only] [--namespace NS] [--schema NAME]`: serves
 * the dashboard of one namespace (the page and its JSON API,
 * `@later/runtime/dashboard`) on node:http until SIGINT or SIGTERM, then
 * closes the server and the database and exits 0.
 *
 * Read-only by default (`--read-only` says so explicitly): the page draws
 * no action button and every action is 403 `READ_ONLY`. `--allow-actions`
 * turns retry and delete on for whoever reaches the port (the dashboard has
 * no login of its own), and says so on stderr. It binds to 127.0.0.1
 * unless told otherwise: `--host 0.0.0.0` exposes it to the network; put it
 * behind a proxy that authenticates. Actions need `Sec-Fetch-Site:
 * same-origin` from a browser, as everywhere the dashboard is mounted.
 * `--port 0` takes a free port.
 * Bound to a loopback address it answers only requests whose `Host` is
 * that address or `localhost` (403 otherwise: DNS rebinding).
 * Once listening it prints one line, `later dashboard: <url> (<database>,
 * namespace <ns>, read-only|actions allowed)`, so a script can read the URL.
 *
 * Refuses, exit 1, a database whose schema is behind or ahead (the message
 * says to run `later migrate up`), a missing SQLite file, and a port it
 * cannot listen on.
 */
export function dashboardCommand(context: CommandContext): Command {
  return new Command("dashboard")
    .description("serve the dashboard (page and JSON API) of a database until SIGINT or SIGTERM")
    .addOption(databaseOption())
    .addOption(new Option("--port <port>", "the port to listen on (0: any free port)").argParser(parsePort).default(DASHBOARD_PORT))
    .addOption(new Option("--host <address>", "the address to listen on (0.0.0.0: every interface; the dashboard has no login)").default(DASHBOARD_HOST))
    .addOption(new Option("--read-only", "refuse every action (retry, delete) and draw no action button: the default").conflicts("allowActions"))
    .option("--allow-actions", "allow retry and delete to whoever reaches the port (no login: keep it on 127.0.0.1 or behind an authenticating proxy)")
    .addOption(namespaceOption("jobs"))
    .addOption(schemaOption())
    .action((options: DashboardCommandOptions) =>
      withDatabase(
        { database: options.database, schema: options.schema, namespace: options.namespace, create: false, requireCurrentSchema: true },
        async (backend) => {
          const dashboard = createDashboard({
            backend,
            // Safe by default: actions only when asked for.
            readOnly: options.allowActions !== true,
            // The page sees "INTERNAL"; the operator gets the cause here.
            onError: (error, request) =>
              context.io.err(`later dashboard: ${request.method} ${new URL(request.url).pathname}: ${error instanceof Error ? error.message : String(error)}`),
          });
          const handler = toNodeHandler(dashboard);
          let hosts: ReadonlySet<string> | null = null; // the Host headers a loopback server answers, once its port is known
          const server = createServer((req, res) => {
            if (hosts === null || hosts.has((req.headers.host ?? "").toLowerCase())) return handler(req, res);
            res.writeHead(403, { "content-type": "application/json; charset=utf-8" });
            res.end(JSON.stringify({ error: { code: "FORBIDDEN", message: "this dashboard answers requests for its loopback address only" } }));
          });
          const port = await listen(server, options.port, options.host);
          hosts = loopbackHostHeaders(options.host, port);
          const host = options.host.includes(":") ? `[${options.host}]` : options.host;
          const notes = [displayDatabaseUrl(options.database), `namespace ${backend.namespace}`, options.allowActions ? "actions allowed" : "read-only"];
          if (options.allowActions)
            context.io.err("later dashboard: --allow-actions: whoever reaches this port can retry and delete jobs (the dashboard has no login)");
          context.io.out(`later dashboard: http://${host}:${port}/ (${notes.join(", ")})`);
          await stopSignal();
          await new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          });
        },
      ),
    );
}

/**
 * Bound to a loopback address, the dashboard answers only requests whose
 * `Host` names this machine (`localhost`, `127.0.0.1`, `[::1]` or the
 * address it was given, with its port): a web page whose own name an
 * attacker points at 127.0.0.1 (DNS rebinding) is same-origin to the
 * browser, so only the `Host` header tells its requests apart. Null (no
 * check) for any other address, whose names the command cannot know.
 */
function loopbackHostHeaders(address: string, port: number): ReadonlySet<string> | null {
  const loopback = address === "localhost" || address === "::1" || /^127\.\d+\.\d+\.\d+$/.test(address);
  if (!loopback) return null;
  const names = ["localhost", "127.0.0.1", "[::1]", address.includes(":") ? `[${address}]` : address];
  return new Set(names.flatMap((name) => (port === 80 ? [name, `${name}:80`] : [`${name}:${port}`])));
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new CommandFailure(
          `cannot listen on ${host}:${port}: ${error.code === "EADDRINUSE" ? "the port is in use (pick another with --port)" : error.message}`,
        ),
      ),
    );
    server.listen(port, host, () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : port);
    });
  });
}

/** Resolves at the first SIGINT or SIGTERM (then restores their default handling). */
function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}

function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535) throw new InvalidArgumentError("expected a port number from 0 to 65535");
  return n;
}
