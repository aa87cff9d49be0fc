// The control: every use here is right, so this file must compile with no error.
import { RetryPolicy, type EnqueueOptions, type TerminalStage } from "@later/runtime";
import { sqlite } from "@later/runtime/sqlite";
import { JobsBuilder, openJobsPublisher, type JobsContext } from "../schemas/shop.generated.js";
import type { CreateAccount, SendEmail } from "../schemas/shop.schema.js";
import { JobsBuilder as ResultsJobsBuilder, openJobsPublisher as openResultsJobsPublisher } from "../schemas/results.generated.js";

interface App { mailer: { send(to: string): Promise<void> } }

async function sendEmail(ctx: JobsContext<App>, p: SendEmail): Promise<void> {
  await ctx.app.mailer.send(p.address);
  await ctx.jobs.createAccount.enqueue({ id: "a", createdAt: new Date() });
  ctx.signal.throwIfAborted();
}

export async function main(app: App): Promise<void> {
  const server = await new JobsBuilder<App>({ context: app, backend: sqlite({ file: "x.db" }) })
    .withSendEmailHandler(sendEmail)
    .withCreateAccountHandler(async (_ctx, p: CreateAccount) => void p.createdAt.getTime(), { retry: () => RetryPolicy.noRetries() })
    .withProcessOrderHandler(async (ctx, p) => void (p.customerId + ctx.attempt))
    .build();
  const a = await server.jobs.sendEmail.enqueue({ address: "a@b.c", body: "hi" });
  await server.jobs.createAccount.enqueueContinue(a, { id: "x", createdAt: new Date() });
  await server.jobs.sendEmail.enqueueDelayed({ address: "a@b.c", body: "later" }, 1_000);
  await server.jobs.sendEmail.enqueueDelayedAt({ address: "a@b.c", body: "later" }, new Date());
  await server.jobs.sendEmail.enqueueMany([{ address: "a@b.c", body: "1" }, { address: "d@e.f", body: "2" }]);
  const next: string | null = await server.jobs.sendEmail.enqueueRecurring("weekly", { address: "a@b.c", body: "news" }, "0 0 6 * * 1");
  await server.jobs.processOrder.enqueueToPartition({ customerId: 42, description: "add item" });
  await server.jobs.processOrder.enqueueContinueToPartition(a, { customerId: 42, description: "ship" });
  void next;
  // X4: a declared job type or a topic of the schema.
  const changed: boolean = await server.pause({ jobType: "sendEmail" });
  await server.resume({ topic: "orders" });
  void changed;
  // The options form, last on every enqueue method; the short forms take the other options.
  await server.jobs.sendEmail.enqueue({ address: "a@b.c", body: "in a minute" }, { delayMs: 60_000 });
  await server.jobs.sendEmail.enqueue({ address: "a@b.c", body: "after a" }, { parentId: a, runAt: new Date() });
  await server.jobs.createAccount.enqueueContinue(a, { id: "y", createdAt: new Date() }, { delayMs: 5_000 });
  // Fan-in (X5): an array of parents, on the short form and in the options form.
  const b = await server.jobs.sendEmail.enqueue({ address: "b@b.c", body: "hi" });
  await server.jobs.createAccount.enqueueContinue([a, b], { id: "z", createdAt: new Date() });
  await server.jobs.sendEmail.enqueue({ address: "a@b.c", body: "after a and b" }, { parentId: [a, b] as const });
  await server.jobs.processOrder.enqueueContinueToPartition([a, b], { customerId: 42, description: "ship both" });
  await server.jobs.sendEmail.enqueueDelayed({ address: "a@b.c", body: "later" }, 1_000, { parentId: a });
  await server.jobs.processOrder.enqueueToPartition({ customerId: 42, description: "pack" }, { delayMs: 1_000, parentId: a });
  await server.jobs.processOrder.enqueueToPartitionDelayed({ customerId: 42, description: "bill" }, 1_000, { parentId: a });
  const options: EnqueueOptions = { runAt: new Date() };
  await server.jobs.sendEmail.enqueueMany([{ address: "a@b.c", body: "3" }], options);
  const topicName: string = server.jobs.processOrder.topic;
  void topicName;
  // No context: the handlers need none (ctx.app is unknown).
  const bare = await new JobsBuilder({ backend: sqlite({ file: "x.db" }) })
    .withSendEmailHandler(async (ctx, p) => void (ctx.jobId + p.body))
    .withCreateAccountHandler(() => {})
    .withProcessOrderHandler(() => {})
    .build();
  await bare.shutdown();
  const publisher = await openJobsPublisher({ backend: sqlite({ file: "x.db" }) });
  await publisher.jobs.sendEmail.enqueue({ address: "a@b.c", body: "from the web process" });
  await publisher.close();
  await server.shutdown({ deadlineMs: 1_000 });
}

// Typed logs: the keyed topic takes the value alone, the unkeyed one a { key } or { partition }.
export async function logs(): Promise<void> {
  const { openLogs } = await import("../schemas/events.generated.js");
  const logs = await openLogs({ backend: sqlite({ file: "x.db" }) });
  const at = new Date();
  const p = await logs.orderEvents.append({ customerId: "c", orderId: "o", kind: "placed", at, lines: [] }, { headers: { h: "v" } });
  await logs.orderEvents.appendMany([{ customerId: "c", orderId: "o", kind: "paid", at, lines: [{ sku: "s", quantity: 1 }] }]);
  await logs.auditTrail.append({ actor: "ann", action: "login" }, { key: "ann" });
  await logs.auditTrail.appendMany([{ value: { actor: "ann", action: "x" }, partition: 1 }]);
  const [r] = await logs.orderEvents.read({ partition: p.partition, fromOffset: p.offset });
  const when: Date = r!.value.at;
  const lag: number = (await logs.orderEvents.lag({ group: "g" }))[0]!.lag;
  void [when, lag];
  await logs.close();
}

/** Results (X6): typed handler results and waitFor. */
export async function mainWithResults(): Promise<void> {
  const server = await new ResultsJobsBuilder({ backend: sqlite({ file: "x.db" }) })
    .withSendEmailHandler(async (_ctx, p) => ({ messageId: p.address }))
    .withChargeOrderHandler((_ctx, p) => ({ chargeId: p.orderId, at: new Date().toISOString() }))
    .withNotifyHandler(async () => 42) // no Results entry: any value, or none
    .build();
  const id = await server.jobs.chargeOrder.enqueueToPartition({ orderId: "o1", cents: 5 });
  const done = await server.jobs.chargeOrder.waitFor(id, { timeoutMs: 30_000 });
  const stage: TerminalStage = done.stage;
  const chargeId: string | undefined = done.result?.chargeId;
  const untyped: unknown = (await server.waitFor(id, { timeoutMs: 1_000, safetyPollMs: 5_000 })).result;
  const notified: unknown = (await server.jobs.notify.waitFor(id, { timeoutMs: 1_000 })).result;
  void [stage, chargeId, untyped, notified];
  const publisher = await openResultsJobsPublisher({ backend: sqlite({ file: "x.db" }) });
  const sent = await publisher.jobs.sendEmail.waitFor(id, { timeoutMs: 1_000 });
  const messageId: string | undefined = sent.result?.messageId;
  const error: string | undefined = (await publisher.waitFor(id, { timeoutMs: 1_000 })).error;
  void [messageId, error];
  await publisher.close();
  await server.shutdown();
}
