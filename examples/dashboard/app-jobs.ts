// What the three examples share: the application's job server (one job type, one job enqueued at
// start) on LATER_DATABASE_URL (default: the SQLite file dashboard-example.db), and the port.
// The dashboard is then mounted on `server.backend`, the same database and namespace, with
// `authorize` (below): without it a dashboard is read-only. The server owns that backend (its
// shutdown closes it, being its last user); the dashboard only borrows it, so each example stops
// serving HTTP before it shuts the server down (stopOnSignals).
import { timingSafeEqual } from "node:crypto";
import { BackgroundJobServer, backendFromUrl } from "@later/runtime";

/** The port to listen on: PORT, default 3000. The examples listen on 127.0.0.1 only. */
export const port = Number(process.env.PORT ?? 3000);

/** Starts the application's job server (migrating its database) and enqueues one job. */
export async function startJobServer(): Promise<BackgroundJobServer<unknown>> {
  const schema = process.env.LATER_SCHEMA; // PostgreSQL only: the schema of the later tables
  const backend = await backendFromUrl(process.env.LATER_DATABASE_URL ?? "sqlite:dashboard-example.db", schema ? { postgres: { schema } } : {});
  const server = await BackgroundJobServer.start({
    backend,
    autoMigrate: true,
    context: undefined,
    handlers: { greet: { handle: (_ctx, payload) => console.log(`hello ${(payload as { name: string }).name}`) } },
  });
  await server.publisher.enqueue("greet", { name: "dashboard" });
  return server;
}

/** On SIGINT or SIGTERM: stop taking requests (`close`), then shut the job server down and exit. */
export function stopOnSignals(server: BackgroundJobServer<unknown>, close: () => Promise<void>): void {
  const stop = async () => {
    await close();
    await server.shutdown({ deadlineMs: 5_000 });
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

/**
 * The dashboard's `authorize` hook (called for every request; false is 403). Giving one turns the
 * actions on, so it decides who may retry and delete. Replace it with your application's own session
 * check. Here: reads (the page and its data) for whoever reaches the route (the examples listen on
 * 127.0.0.1 only); actions only with the operator token DASHBOARD_TOKEN, sent by a script as
 * `Authorization: Bearer <token>`, or by the browser as the cookie `later_dashboard_token` from the
 * page's own origin (a cookie is sent cross-site too, so a hook that accepts one checks
 * Sec-Fetch-Site itself). No DASHBOARD_TOKEN: no action is allowed.
 */
export function authorizeDashboard(request: Request): boolean {
  if (request.method === "GET" || request.method === "HEAD") return true;
  const token = process.env.DASHBOARD_TOKEN;
  if (!token) return false;
  if (same(request.headers.get("authorization"), `Bearer ${token}`)) return true;
  const cookie = /(?:^|;\s*)later_dashboard_token=([^;]*)/.exec(request.headers.get("cookie") ?? "")?.[1];
  return request.headers.get("sec-fetch-site") === "same-origin" && same(cookie ?? null, token);
}

/** A comparison whose time does not tell how much of the token matched. */
function same(given: string | null, expected: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
