// Testing the application's own handlers with the testing kit (`createTestJobs` of the
// generated module, docs/semantics.md X11): an in-memory database and a manual clock,
// jobs run when the test calls drain(), so every run sees the same order.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RetryPolicy } from "@later/runtime";
import type { TestJobs } from "@later/runtime/testing";
import { createTestJobs, type JobsHandles } from "./jobs.generated.js";
import { type App, chargeCard, createAccount, sendEmail } from "./handlers.js";

describe("the shop's handlers", () => {
  let sent: string[];
  let failCharges: number;
  let app: App;
  let kit: TestJobs<App, JobsHandles>;

  beforeEach(async () => {
    sent = [];
    failCharges = 0;
    app = {
      accounts: new Map(),
      mailer: { send: async (to, subject) => void sent.push(`${to}: ${subject}`) },
      payments: {
        charge: async () => {
          if (failCharges-- > 0) throw new Error("card declined");
        },
      },
    };
    kit = await createTestJobs({
      context: app,
      now: new Date("2026-05-01T09:00:00Z"),
      defaultRetryPolicy: RetryPolicy.fixed(3, 60_000), // 3 retries, a minute apart
      handlers: (b) => b.withCreateAccountHandler(createAccount).withSendEmailHandler(sendEmail).withChargeCardHandler(chargeCard),
    });
  });
  afterEach(() => kit.close());

  it("creates the account, then sends the welcome email (a continuation)", async () => {
    await kit.jobs.createAccount.enqueue({ email: "ada@example.com", signedUpAt: kit.now() });
    const result = await kit.drain();
    expect(result).toMatchObject({ ran: 2, succeeded: 2, failed: 0 });
    expect(result.attempts.map((a) => a.name)).toEqual(["createAccount", "sendEmail"]); // the email after its parent
    expect(app.accounts.get("ada@example.com")).toEqual(new Date("2026-05-01T09:00:00Z"));
    expect(sent).toEqual(["ada@example.com: Welcome"]);
  });

  it("retries a declined charge, then sends the receipt; drain skips the retry delay on the clock", async () => {
    failCharges = 1;
    await kit.jobs.chargeCard.enqueue({ account: "ada@example.com", cents: 1200 });
    const result = await kit.drain();
    expect(result.attempts.map((a) => [a.name, a.attempt, a.outcome])).toEqual([
      ["chargeCard", 1, "retry"],
      ["chargeCard", 2, "success"],
      ["sendEmail", 1, "success"],
    ]);
    expect(kit.now()).toEqual(new Date("2026-05-01T09:01:00Z")); // moved by the one retry delay
    expect(sent).toEqual(["ada@example.com: Receipt: 1200 cents"]);
  });

  it("a charge declined every time ends failed after its retries, and sends nothing", async () => {
    failCharges = Number.POSITIVE_INFINITY;
    await kit.jobs.chargeCard.enqueue({ account: "bob@example.com", cents: 500 });
    expect(await kit.drain()).toMatchObject({ ran: 4, retried: 3, failed: 1 });
    const [charge] = await kit.enqueued("chargeCard");
    expect(charge).toMatchObject({ stage: "failed", attempt: 4, lastError: "card declined" });
    expect(sent).toEqual([]);
  });

  it("work() runs one handler, and enqueued() shows what it enqueued, typed", async () => {
    await kit.work("chargeCard", { account: "eve@example.com", cents: 300 });
    const emails = await kit.enqueued("sendEmail");
    expect(emails.map((e) => [e.payload.to, e.payload.subject, e.stage])).toEqual([["eve@example.com", "Receipt: 300 cents", "enqueued"]]);
    expect(sent).toEqual([]); // only the one handler ran: the receipt waits for a drain()
    failCharges = 1;
    await expect(kit.work("chargeCard", { account: "eve@example.com", cents: 300 })).rejects.toThrow("card declined");
  });

  it("enqueued() revives Dates", async () => {
    await kit.jobs.createAccount.enqueueDelayed({ email: "eve@example.com", signedUpAt: new Date("2026-04-30T12:00:00Z") }, 60_000);
    const [job] = await kit.enqueued("createAccount");
    expect(job!.payload.signedUpAt).toEqual(new Date("2026-04-30T12:00:00Z"));
    expect(job!.runAt).toEqual(new Date("2026-05-01T09:01:00Z"));
  });

  it("a delayed job runs once the clock has passed it", async () => {
    await kit.jobs.sendEmail.enqueueDelayed({ to: "ada@example.com", subject: "Tips" }, 24 * 3_600_000);
    expect((await kit.drain()).ran).toBe(0);
    kit.advance(24 * 3_600_000);
    expect((await kit.drain()).ran).toBe(1);
    expect(sent).toEqual(["ada@example.com: Tips"]);
  });
});
