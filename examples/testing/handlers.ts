// The application's handlers, written against the generated module: the same
// functions run in production (main would register them on a JobsBuilder) and in
// handlers.test.ts (registered on the testing kit).
import type { JobsContext } from "./jobs.generated.js";
import type { ChargeCard, CreateAccount, SendEmail } from "./jobs.schema.js";

/** What the handlers get as `ctx.app`: the application's services. */
export interface App {
  accounts: Map<string, Date>;
  mailer: { send(to: string, subject: string): Promise<void> };
  payments: { charge(account: string, cents: number): Promise<void> };
}

export type Ctx = JobsContext<App>;

/** Stores the account, then welcomes it: the email runs once this job has succeeded (a continuation). */
export async function createAccount(ctx: Ctx, account: CreateAccount): Promise<void> {
  ctx.app.accounts.set(account.email, account.signedUpAt);
  await ctx.jobs.sendEmail.enqueueContinue(ctx.jobId, { to: account.email, subject: "Welcome" });
}

export async function sendEmail(ctx: Ctx, email: SendEmail): Promise<void> {
  await ctx.app.mailer.send(email.to, email.subject);
}

/** Charges a card; a failure is retried per policy, and a receipt is sent once it succeeds. */
export async function chargeCard(ctx: Ctx, charge: ChargeCard): Promise<void> {
  await ctx.app.payments.charge(charge.account, charge.cents);
  await ctx.jobs.sendEmail.enqueue({ to: charge.account, subject: `Receipt: ${charge.cents} cents` });
}
