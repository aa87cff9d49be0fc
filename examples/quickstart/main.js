// Quickstart on embedded SQLite: a fire-and-forget job, a three-step
// continuation chain, a delayed job and a job that fails, retries and ends
// failed. Prints every stage change as it happens, then shuts down.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BackgroundJobServer, RetryPolicy, sqlite } from "@later/runtime";

const file = join(mkdtempSync(join(tmpdir(), "later-quickstart-")), "later.db");
const names = new Map();
let finished = 0;
let allDone;
const done = new Promise((resolve) => (allDone = resolve));

const server = await BackgroundJobServer.start({
  context: { greeting: "hello" },
  backend: sqlite({ file, namespace: "quickstart" }),
  autoMigrate: true,
  workerCount: 4,
  pollIntervalMs: 100,
  handlers: {
    sendEmail: { handle: async (ctx, p) => console.log(`  ${ctx.app.greeting}, sending "${p.body}" to ${p.address}`) },
    step: { handle: async (_ctx, p) => console.log(`  chain step ${p.n}`) },
    chargeCard: {
      handle: async () => { throw new Error("card declined"); },
      retry: () => RetryPolicy.fixed(2, 200),
    },
  },
  onEvent: (e) => {
    if (e.type !== "job") return;
    console.log(`${names.get(e.jobId) ?? `${e.jobType} …${e.jobId.slice(-6)}`}: ${e.stage} (attempt ${e.attempt})${e.error ? ` - ${e.error}` : ""}`);
    if (e.stage === "success" || e.stage === "failed") if (++finished === 6) allDone();
  },
});

const name = (label, id) => (names.set(id, label), id);
name("sendEmail", await server.publisher.enqueue("sendEmail", { address: "ada@example.com", body: "welcome" }));
const a = name("step 1", await server.publisher.enqueue("step", { n: 1 }));
const b = name("step 2", await server.publisher.enqueue("step", { n: 2 }, { parentId: a }));
name("step 3", await server.publisher.enqueue("step", { n: 3 }, { parentId: b }));
name("delayed email", await server.publisher.enqueue("sendEmail", { address: "bob@example.com", body: "one second later" }, { delayMs: 1_000 }));
name("chargeCard", await server.publisher.enqueue("chargeCard", { amount: 42 }));

await done;
await server.shutdown({ deadlineMs: 5_000 });
console.log(`done; database at ${file}`);
