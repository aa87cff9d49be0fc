// Starts a server against a PostgreSQL URL nobody answers on, for default-logging.test.ts.
//
// argv[2] is a JSON config: { url, databaseWaitMs, logger: "default" | "null" }. Writes nothing
// of its own to stderr: what is there is later's. Prints `rejected <code>` (stdout) when start()
// gives up, then exits.
import { BackgroundJobServer } from "@later/runtime";
import { postgres } from "@later/runtime/postgres";

const config = JSON.parse(process.argv[2]);
const options = {
  context: {},
  handlers: { a: { handle: () => undefined } },
  backend: postgres({ connectionString: config.url }),
  databaseWaitMs: config.databaseWaitMs,
};
if (config.logger === "null") options.logger = null;
try {
  const server = await BackgroundJobServer.start(options);
  process.stdout.write("started\n");
  await server.shutdown();
} catch (error) {
  process.stdout.write(`rejected ${error.code}\n`);
}
