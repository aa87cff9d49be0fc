// Appends to one retained-log partition from its own process, for log-append.test.ts.
//
// argv[2] is a JSON config: { backend, namespace, name, count, rollbackEvery, children }.
// Prints `ready` once its RetainedLog is open, then waits for `go` on stdin, so the children
// start appending at once. Appends `count` records (value `<name>-<i>`, one transaction each) to
// partition 0 of topic "events" (after the first, it waits until all `children` have appended
// theirs, so the rest of the appends overlap); before every `rollbackEvery`-th one it also appends a record
// with appendIn in a transaction of its own that it rolls back (value `rolled-back`). Prints
// `done <count>` and exits; `error <message>` on any failure.
import { createInterface } from "node:readline";
import Database from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import pg from "pg";
import { logTopic, RetainedLog } from "@later/runtime";
import { childBackend } from "./child-backend.mjs";

const config = JSON.parse(process.argv[2]);
const say = (line) => process.stdout.write(`${line}\n`);

const backend = childBackend(config);

/** Runs `body(trx)` in a transaction of the application's own and rolls it back. */
let rolledBackTransaction;
let closeApp = async () => undefined;
if (config.backend.kind === "postgres") {
  const pool = new pg.Pool({ connectionString: config.backend.connectionString, max: 1 });
  rolledBackTransaction = async (body) => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await body(client);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  };
  closeApp = () => pool.end();
} else {
  const app = new Kysely({ dialect: new SqliteDialect({ database: new Database(config.backend.file, { timeout: 10_000 }) }) });
  rolledBackTransaction = async (body) => {
    await app
      .transaction()
      .execute(async (trx) => {
        await body(trx);
        throw new Error("roll back");
      })
      .catch((error) => {
        if (error.message !== "roll back") throw error;
      });
  };
  closeApp = () => app.destroy();
}

/** Waits (polling, 20 s at most) until every child has appended its first record: from then on all append at once. */
async function othersStarted(log) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const records = await log.read({ topic: "events", partition: 0, fromOffset: 0, limit: 1_000 });
    const names = new Set(records.map((r) => new TextDecoder().decode(r.value).split("-")[0]).filter((n) => n !== "rolled"));
    if (names.size >= config.children) return;
    if (Date.now() > deadline) throw new Error(`only ${[...names].join(", ")} started within 20 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

try {
  const log = await RetainedLog.open({ backend, topics: [logTopic("events", 2)] });
  say("ready");
  await new Promise((resolve) => createInterface({ input: process.stdin }).on("line", (line) => line.trim() === "go" && resolve()));
  for (let i = 0; i < config.count; i++) {
    if (i % config.rollbackEvery === 0) {
      await rolledBackTransaction((trx) => log.appendIn(trx, "events", { partition: 0, value: "rolled-back" }));
    }
    await log.append("events", { partition: 0, value: `${config.name}-${i}` });
    if (i === 0) await othersStarted(log);
  }
  await log.close();
  await closeApp();
  say(`done ${config.count}`);
  process.exit(0);
} catch (error) {
  say(`error ${String(error?.stack ?? error).replaceAll("\n", " | ")}`);
  process.exit(1);
}
