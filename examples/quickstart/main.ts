// Quickstart on embedded SQLite: a fire-and-forget job, a three-step
// continuation chain, a delayed job and a job that fails, retries and ends
// failed. Prints every stage change as it happens, then shuts down.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RetryPolicy, type ServerEvent } from "@later/runtime";
import { sqlite } from "@later/runtime/sqlite";
import { JobsBuilder, type JobsContext } from "./jobs.generated.js";
import type { ChainStep, ChargeCard, SendEmail } from "./jobs.schema.js";

interface App {
  greeting: string;
}

async function sendEmail(ctx: JobsContext<App>, email: SendEmail): Promise<void> {
  console.log(`  ${ctx.app.greeting}: sending "${email.body}" to ${email.address}`);
}

async function chainStep(_ctx: JobsContext<App>, { step, of }: ChainStep): Promise<void> {
  console.log(`  chain step ${step} of ${of}`);
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
  if ((event.stage === "success" || event.stage === "failed") && ++finished === 6) allFinished();
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
  .build();

const { jobs } = server;
await jobs.sendEmail.enqueue({ address: "ada@example.com", body: "welcome" }); // fire and forget
const first = await jobs.chainStep.enqueue({ step: 1, of: 3 }); // a three-step chain:
const second = await jobs.chainStep.enqueueContinue(first, { step: 2, of: 3 }); //   waits for step 1
await jobs.chainStep.enqueueContinue(second, { step: 3, of: 3 }); //   waits for step 2
await jobs.sendEmail.enqueueDelayed({ address: "bob@example.com", body: "one second later" }, 1_000);
await jobs.chargeCard.enqueue({ amount: 42, requestedAt: new Date() }); // fails, retries twice, ends failed

await done;
await server.shutdown({ deadlineMs: 5_000 });
console.log(`done; the database is at ${file}`);
