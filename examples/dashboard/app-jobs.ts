// What the three examples share: the application's job server (one job type, one job enqueued at
// start) on LATER_DATABASE_URL (default: the SQLite file dashboard-example.db), and the port.
// The dashboard is then mounted on `server.backend`, the same database and namespace. The server
// owns that backend (its shutdown closes it, being its last user); the dashboard only borrows it,
// so each example stops serving HTTP before it shuts the server down (stopOnSignals).
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
