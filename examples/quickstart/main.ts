// Quickstart on embedded SQLite: a fire-and-forget job, a three-step
// continuation chain, a delayed job, a delayed continuation, two ledger entries
// of one account in order (a topic declared in the schema), and a job that
// fails, retries and ends failed. Prints every stage change as it happens,
// then shuts down.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RetryPolicy, type ServerEvent } from "@later/runtime";
import { sqlite } from "@later/runtime/sqlite";
import { JobsBuilder, type JobsContext } from "./jobs.generated.js";
import type { ChainStep, ChargeCard, PostEntry, SendEmail } from "./jobs.schema.js";

interface App {
  greeting: string;
}

async function sendEmail(ctx: JobsContext<App>, email: SendEmail): Promise<void> {
  console.log(`  ${ctx.app.greeting}: sending "${email.body}" to ${email.address}`);
}

async function chainStep(_ctx: JobsContext<App>, { step, of }: ChainStep): Promise<{ finishedStep: number }> {
  console.log(`  chain step ${step} of ${of}`);
  return { finishedStep: step }; // the result (Results in jobs.schema.ts), stored with the success
}

async function postEntry(ctx: JobsContext<App>, entry: PostEntry): Promise<void> {
  console.log(`  ${entry.accountId}: ${entry.cents} cents (partition ${ctx.partition?.partition} of topic ${ctx.partition?.topic})`);
}

async function chargeCard(ctx: JobsContext<App>, charge: ChargeCard): Promise<void> {
  console.log(`  charging ${charge.amount} requested at ${charge.requestedAt.toISOString()} (attempt ${ctx.attempt})`);
  throw new Error("card declined");
}

// Each job is shown as "<type> …<last 6 characters of its id>".
const show = (jobType: string, id: string) => `${jobType} …${id.slice(-6)}`;
let finished = 0;
let allFinished!: () => void;
const done = new Promise<void>((resolve) => (allFinished = resolve));

function print(event: ServerEvent): void {
  if (event.type !== "job") return;
  const attempt = event.attempt === 0 ? "" : ` (attempt ${event.attempt})`;
  console.log(`${show(event.jobType, event.jobId)}: ${event.stage}${attempt}${event.error ? ` - ${event.error}` : ""}`);
  if ((event.stage === "success" || event.stage === "failed") && ++finished === 9) allFinished();
}

const file = join(mkdtempSync(join(tmpdir(), "later-quickstart-")), "later.db");
const server = await new JobsBuilder<App>({
  context: { greeting: "hello" },
  backend: sqlite({ file, namespace: "quickstart" }),
  autoMigrate: true,
  workerCount: 4,
  pollIntervalMs: 100,
  onEvent: print,
})
  .withSendEmailHandler(sendEmail)
  .withChainStepHandler(chainStep)
  .withChargeCardHandler(chargeCard, { retry: () => RetryPolicy.fixed(2, 200) })
  .withPostEntryHandler(postEntry) // its topic "ledger" (4 partitions) comes from the schema
  .build();

const { jobs } = server;
await jobs.sendEmail.enqueue({ address: "ada@example.com", body: "welcome" }); // fire and forget
const first = await jobs.chainStep.enqueue({ step: 1, of: 3 }); // a three-step chain:
const second = await jobs.chainStep.enqueueContinue(first, { step: 2, of: 3 }); //   waits for step 1
const third = await jobs.chainStep.enqueueContinue(second, { step: 3, of: 3 }); //   waits for step 2
await jobs.sendEmail.enqueueDelayed({ address: "bob@example.com", body: "one second later" }, 1_000);
// The options form, last on every enqueue method: a continuation that also waits half a second.
await jobs.sendEmail.enqueue({ address: "ada@example.com", body: "chain done" }, { parentId: third, delayMs: 500 });
await jobs.postEntry.enqueueToPartition({ accountId: "acct-1", cents: 500 }); // in order, on acct-1's partition
await jobs.postEntry.enqueueToPartition({ accountId: "acct-1", cents: -200 });
await jobs.chargeCard.enqueue({ amount: 42, requestedAt: new Date() }); // fails, retries twice, ends failed
// Waits for the chain's last step (woken by its commit, not by polling) and reads its result.
const last = await jobs.chainStep.waitFor(third, { timeoutMs: 10_000 });
console.log(`the chain ended ${last.stage}, at step ${last.result?.finishedStep}`);

await done;
await server.shutdown({ deadlineMs: 5_000 });
console.log(`done; the database is at ${file}`);
