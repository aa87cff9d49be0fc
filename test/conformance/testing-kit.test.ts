// The testing kit of @later/runtime/testing (docs/semantics.md X11), through the generated createTestJobs:
// drain order, retries on the manual clock, delayed jobs, enqueued(), work(), close().
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { DrainLimitError, HandlerMissingError, PermanentJobError, RetryPolicy, type JobId } from "@later/runtime";
import { liveResources, type TestJobs } from "@later/runtime/testing";
import { createTestJobs as createDatesTest } from "../codegen/schemas/dates.generated.js";
import type { Meeting } from "../codegen/schemas/dates.schema.js";
import { createTestJobs as createLedgerTest } from "../codegen/schemas/ledger.generated.js";
import { createTestJobs, type JobsHandles } from "../codegen/schemas/shop.generated.js";
import type { SendEmail } from "../codegen/schemas/shop.schema.js";

const kits: TestJobs<unknown, unknown>[] = [];
afterEach(async () => {
  for (const kit of kits.splice(0)) await kit.close();
});
function kept<K extends TestJobs<never, unknown>>(kit: K): K {
  kits.push(kit as unknown as TestJobs<unknown, unknown>);
  return kit;
}

const START = Date.UTC(2026, 2, 1);
const email = (n: number): SendEmail => ({ address: `u${n}@example.com`, body: `#${n}` });

describe("testing kit (X11)", () => {
  it("drain runs continuations after their parents, in order, and reports each attempt (J5)", async () => {
    const ran: string[] = [];
    const kit = kept(
      await createTestJobs({
        now: START,
        handlers: (b) =>
          b
            .withSendEmailHandler(async (_ctx, e) => void ran.push(`email ${e.body}`))
            .withCreateAccountHandler(async (ctx, a) => {
              ran.push(`account ${a.id}`);
              await ctx.jobs.sendEmail.enqueueContinue(ctx.jobId as JobId, { address: "x@example.com", body: `welcome ${a.id}` });
            }),
      }),
    );
    const parent = await kit.jobs.createAccount.enqueue({ id: "a1", createdAt: new Date(START) });
    await kit.jobs.sendEmail.enqueueContinue(parent, email(1));
    await kit.jobs.sendEmail.enqueueContinue(parent, email(2));
    expect(ran).toEqual([]);
    const result = await kit.drain();
    expect(ran).toEqual(["account a1", "email #1", "email #2", "email welcome a1"]);
    expect(result).toMatchObject({ ran: 4, succeeded: 4, retried: 0, failed: 0 });
    expect(result.attempts.map((a) => [a.name, a.attempt, a.outcome])).toEqual([
      ["createAccount", 1, "success"],
      ["sendEmail", 1, "success"],
      ["sendEmail", 1, "success"],
      ["sendEmail", 1, "success"],
    ]);
    expect(kit.now().getTime()).toBe(START); // nothing waited: the clock did not move
    expect((await kit.drain()).ran).toBe(0);
  });

  it("X10: the kit's enqueues and drain()'s attempts go through the middleware option; an attempt hook that throws is a retried attempt", async () => {
    const log: string[] = [];
    const kit = kept(
      await createTestJobs({
        now: START,
        defaultRetryPolicy: RetryPolicy.fixed(1, 1_000),
        middleware: [
          {
            async enqueue(ctx, next) {
              for (const job of ctx.jobs) job.meta.from = "test";
              log.push(`enqueue ${ctx.jobType}`);
              return next();
            },
            async attempt(ctx, next) {
              log.push(`attempt ${ctx.jobType} ${ctx.attempt} ${String(ctx.meta.from)}`);
              if (ctx.attempt === 1) throw new Error("hook refused attempt 1");
              await next();
            },
          },
        ],
        handlers: (b) => b.withSendEmailHandler(async (_ctx, e) => void log.push(`handler ${e.body}`)),
      }),
    );
    await kit.jobs.sendEmail.enqueue(email(1));
    const result = await kit.drain();
    expect(result.attempts.map((a) => [a.attempt, a.outcome, a.error])).toEqual([
      [1, "retry", "hook refused attempt 1"],
      [2, "success", null],
    ]);
    expect(log).toEqual(["enqueue sendEmail", "attempt sendEmail 1 test", "attempt sendEmail 2 test", "handler #1"]);
  });

  it("retries a failing job to success within one drain, the clock advanced by each retry delay (J3, J4)", async () => {
    let calls = 0;
    const kit = kept(
      await createTestJobs({
        now: START,
        defaultRetryPolicy: RetryPolicy.fixed(3, 60_000),
        handlers: (b) =>
          b.withSendEmailHandler(() => {
            calls++;
            if (calls < 3) throw new Error(`smtp down ${calls}`);
          }),
      }),
    );
    const id = await kit.jobs.sendEmail.enqueue(email(1));
    const result = await kit.drain();
    expect(result).toMatchObject({ ran: 3, succeeded: 1, retried: 2, failed: 0 });
    expect(result.attempts.map((a) => [a.attempt, a.outcome, a.error, a.at.getTime() - START])).toEqual([
      [1, "retry", "smtp down 1", 0],
      [2, "retry", "smtp down 2", 60_000],
      [3, "success", null, 120_000],
    ]);
    expect(kit.now().getTime()).toBe(START + 120_000);
    const [job] = await kit.enqueued("sendEmail");
    expect(job).toMatchObject({ id, stage: "success", attempt: 3 });
  });

  it("a job that always fails ends failed after its retries; a PermanentJobError at once; drain never throws them (J3)", async () => {
    const kit = kept(
      await createTestJobs({
        defaultRetryPolicy: RetryPolicy.fixed(2, 1_000),
        handlers: (b) =>
          b
            .withSendEmailHandler(() => {
              throw new Error("always");
            })
            .withCreateAccountHandler(() => {
              throw new PermanentJobError("no such customer");
            }),
      }),
    );
    await kit.jobs.sendEmail.enqueue(email(1));
    await kit.jobs.createAccount.enqueue({ id: "a1", createdAt: new Date() });
    const result = await kit.drain();
    expect(result).toMatchObject({ ran: 4, succeeded: 0, retried: 2, failed: 2 });
    expect((await kit.enqueued("sendEmail"))[0]).toMatchObject({ stage: "failed", attempt: 3, lastError: "always" });
    expect((await kit.enqueued("createAccount"))[0]).toMatchObject({ stage: "failed", attempt: 1 });
  });

  it("delayed jobs wait for advance() (or advanceDelayed), and run once the clock has passed them (J4)", async () => {
    const ran: string[] = [];
    const kit = kept(await createTestJobs({ now: START, handlers: (b) => b.withSendEmailHandler((_ctx, e) => void ran.push(e.body)) }));
    await kit.jobs.sendEmail.enqueueDelayed(email(1), 60_000);
    await kit.jobs.sendEmail.enqueue(email(2), { runAt: new Date(START + 120_000) });
    expect((await kit.drain()).ran).toBe(0);
    expect((await kit.enqueued("sendEmail")).map((j) => [j.stage, j.runAt.getTime() - START])).toEqual([
      ["delayed", 60_000],
      ["delayed", 120_000],
    ]);
    kit.advance(59_999);
    expect((await kit.drain()).ran).toBe(0);
    kit.advance(1);
    expect((await kit.drain()).ran).toBe(1);
    expect(ran).toEqual(["#1"]);
    expect((await kit.drain({ advanceDelayed: true })).ran).toBe(1);
    expect(ran).toEqual(["#1", "#2"]);
    expect(kit.now().getTime()).toBe(START + 120_000);
  });

  it("enqueued() is typed by the handle name and revives Dates; jobs without a handler in the kit stay queued (J2)", async () => {
    const kit = kept(
      await createDatesTest({
        handlers: (b) => b.withPingHandler(async (ctx, p) => void (await ctx.jobs.scheduleMeeting.enqueue(meeting(p.at)))),
      }),
    );
    await kit.jobs.ping.enqueue({ at: 5 });
    expect((await kit.drain()).ran).toBe(1);
    const meetings = await kit.enqueued("scheduleMeeting");
    expectTypeOf(meetings[0]!.payload).toEqualTypeOf<Meeting>();
    expect(meetings).toHaveLength(1);
    expect(meetings[0]).toMatchObject({ stage: "enqueued", attempt: 0, parentId: null, lastError: null });
    expect(meetings[0]!.payload).toEqual(meeting(5));
    expect(meetings[0]!.payload.attendees[0]!.invitedAt).toBeInstanceOf(Date);
    // @ts-expect-error: not a declared job
    await expect(kit.enqueued("nope")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("work() runs one handler with a real context, bypassing the queue, and passes its result or error through", async () => {
    type App = { sent: string[] };
    const app: App = { sent: [] };
    const kit = kept(
      await createTestJobs<App>({
        context: app,
        now: START,
        handlers: (b) =>
          b.withSendEmailHandler(async (ctx, e) => {
            if (e.body === "boom") throw new Error("boom");
            expect(ctx.signal.aborted).toBe(false);
            ctx.app.sent.push(`${ctx.jobType} ${ctx.attempt} ${e.address}`);
            await ctx.progress({ done: 1 });
            await ctx.jobs.createAccount.enqueue({ id: ctx.jobId, createdAt: new Date(START) });
            return "sent";
          }),
      }),
    );
    expectTypeOf(kit.jobs).toEqualTypeOf<JobsHandles>();
    await expect(kit.work("sendEmail", email(1), { attempt: 4 })).resolves.toBe("sent");
    expect(app.sent).toEqual(["sendEmail 4 u1@example.com"]);
    await expect(kit.work("sendEmail", { address: "a", body: "boom" })).rejects.toThrow("boom");
    // @ts-expect-error: the payload is typed
    await expect(kit.work("sendEmail", { address: 1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(kit.work("createAccount", { id: "x", createdAt: new Date() })).rejects.toBeInstanceOf(HandlerMissingError);
    expect(await kit.enqueued("sendEmail")).toEqual([]); // work() stores nothing of its own job
    expect((await kit.enqueued("createAccount")).map((j) => j.stage)).toEqual(["enqueued"]);
  });

  it("work() aborts ctx.signal with the given signal's reason", async () => {
    const kit = kept(
      await createTestJobs({
        handlers: (b) => b.withSendEmailHandler((ctx) => new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)))),
      }),
    );
    const controller = new AbortController();
    const running = kit.work("sendEmail", email(1), { signal: controller.signal });
    controller.abort(new Error("stop"));
    await expect(running).rejects.toThrow("stop");
  });

  it("drain runs partitioned jobs too, one at a time in partition order (P2)", async () => {
    const ran: string[] = [];
    const kit = kept(
      await createLedgerTest({
        handlers: (b) =>
          b.withPostEntryHandler((_ctx, e) => void ran.push(`post ${e.memo}`)).withReverseEntryHandler((_ctx, e) => void ran.push(`reverse ${e.memo}`)),
      }),
    );
    await kit.jobs.postEntry.enqueueToPartition({ accountId: "acc", cents: 5, memo: "1" });
    await kit.jobs.reverseEntry.enqueueToPartition({ accountId: "acc", cents: -5, memo: "2" });
    await kit.jobs.postEntry.enqueueToPartition({ accountId: "acc", cents: 7, memo: "3" });
    expect((await kit.drain()).ran).toBe(3);
    expect(ran).toEqual(["post 1", "reverse 2", "post 3"]);
  });

  it("stops a drain that never ends with DRAIN_LIMIT", async () => {
    const kit = kept(await createTestJobs({ handlers: (b) => b.withSendEmailHandler(async (ctx, e) => void (await ctx.jobs.sendEmail.enqueue(e))) }));
    await kit.jobs.sendEmail.enqueue(email(1));
    const error = await kit.drain({ maxAttempts: 5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DrainLimitError);
    expect(error).toMatchObject({ code: "DRAIN_LIMIT", attempts: 5 });
  });

  it("close() leaves no server or backend open, and is idempotent", async () => {
    const kit = await createTestJobs({ handlers: (b) => b.withSendEmailHandler(() => {}) });
    expect((await liveResources()).servers).toHaveLength(1);
    await kit.close();
    await kit.close();
    expect(await liveResources()).toEqual({ servers: [], backends: [] });
  });
});

describe("@later/runtime/testing", () => {
  it("loads no driver at import: better-sqlite3 is required only when a kit is created", () => {
    const script = `
      import { createRequire } from "node:module";
      await import("@later/runtime/testing");
      const req = createRequire(import.meta.url);
      const loaded = Object.keys(req.cache).some((path) => path.includes("better-sqlite3"));
      process.stdout.write(String(loaded));`;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: "packages/runtime", encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe("false");
  });
});

function meeting(n: number): Meeting {
  const at = new Date(Date.UTC(2026, 3, n));
  return {
    title: `m${n}`,
    startsAt: at,
    cancelledAt: null,
    attendees: [{ name: "ada", invitedAt: at }],
    reminders: [at],
    byRoom: { a: { bookedAt: at } },
    window: [at, at],
    notes: [],
  };
}
