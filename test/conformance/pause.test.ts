/**
 * X4: pause and resume a job type or a topic, on both backends: enqueue
 * goes on while paused, running jobs finish, no new claim starts, a second
 * server honours a pause made by the first within its poll interval, and a
 * resume wakes servers at once. Waits are on conditions with deadlines.
 */
import { describe, expect, it } from "vitest";
import { topic } from "@later/runtime";
import type { Backend } from "@later/runtime/internal";
import { BACKENDS } from "./backends.js";
import { codeOf, deferred, settled, useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("pause and resume (X4) on $name", (entry) => {
  const harness = useHarness(entry);

  it("X4: a paused type: the running job finishes, enqueue works, no new claim while other types run; resume runs what accumulated", async () => {
    const h = harness();
    const started = deferred();
    const release = deferred();
    let slowRuns = 0;
    const server = await h.start({
      workerCount: 2,
      handlers: {
        slow: {
          handle: async () => {
            if (slowRuns++ === 0) {
              started.resolve();
              await release.promise;
            }
          },
        },
        other: { handle: () => undefined },
      },
    });
    const first = await server.publisher.enqueue("slow", {});
    await started.promise;
    expect(await server.pause({ jobType: "slow" })).toBe(true);
    expect(await server.pause({ jobType: "slow" })).toBe(false);
    const [paused] = await server.listPaused();
    expect(paused).toMatchObject({ jobType: "slow" });
    // Enqueue still works while paused; the jobs accumulate.
    const waiting = await server.publisher.enqueueMany("slow", [{}, {}]);
    // The running one finishes and writes its outcome.
    release.resolve();
    expect((await settled(() => server.backend.inspect.jobGet({ id: first }))).stage).toBe("success");
    // Another type still runs, enqueued after the paused ones: claims go on, without the paused type.
    const other = await server.publisher.enqueue("other", {});
    expect((await settled(() => server.backend.inspect.jobGet({ id: other }))).stage).toBe("success");
    for (const id of waiting) expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("enqueued");
    expect(slowRuns).toBe(1);
    expect(await server.resume({ jobType: "slow" })).toBe(true);
    expect(await server.resume({ jobType: "slow" })).toBe(false);
    for (const id of waiting) expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
    expect(await server.listPaused()).toEqual([]);
  });

  it("X4: a pause through a server resolves once that server's claims honour it: a claim under way with the set read before is waited for", async () => {
    const h = harness();
    // The server's claims pass through here; an armed gate holds the next one before it reaches the database.
    let gate: { promise: Promise<void> } | null = null;
    const held = deferred();
    const holdNextClaim = (backend: Backend): Backend => {
      const jobs = new Proxy(backend.jobs, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target) as unknown;
          if (typeof value !== "function") return value;
          if (prop !== "claimReady") return value.bind(target);
          return async (...args: unknown[]) => {
            const wait = gate;
            gate = null;
            if (wait !== null) {
              held.resolve();
              await wait.promise;
            }
            return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          };
        },
      });
      return new Proxy(backend, { get: (target, prop) => (prop === "jobs" ? jobs : Reflect.get(target, prop, target)) });
    };
    let runs = 0;
    const server = await h.start({
      handlers: {
        work: {
          handle: () => {
            runs++;
          },
        },
        other: { handle: () => undefined },
      },
      wrapBackend: holdNextClaim,
    });
    const warm = await server.publisher.enqueue("other", {});
    await settled(() => server.backend.inspect.jobGet({ id: warm }));
    const release = deferred();
    gate = release;
    // The enqueue wakes the fetcher: its claim, made with the set read before the pause, is held.
    await server.publisher.enqueue("other", {});
    await held.promise;
    let resolved = false;
    const pausing = server.pause({ jobType: "work" }).then((changed) => {
      resolved = true;
      return changed;
    });
    try {
      await waitFor(async () => (await server.listPaused()).length === 1, "the pause to be stored");
      for (let turn = 0; turn < 10; turn++) await new Promise((r) => setImmediate(r));
      expect(resolved).toBe(false); // stored, but the claim made with the set before it is still under way
    } finally {
      release.resolve(); // also when the test fails: a claim held for good would hold the server's shutdown
    }
    expect(await pausing).toBe(true);
    // Enqueued once the pause resolved: no claim of this server takes it, not even the one that was held.
    const id = await server.publisher.enqueue("work", {});
    const other = await server.publisher.enqueue("other", {});
    expect((await settled(() => server.backend.inspect.jobGet({ id: other }))).stage).toBe("success");
    expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("enqueued");
    expect(runs).toBe(0);
    expect(await server.resume({ jobType: "work" })).toBe(true);
    expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
  });

  it("X4: a second server honours a pause made by the first within its poll interval (read, gauge later_queue_paused), and runs at once on resume", async () => {
    const h = harness();
    const worker = await h.start({ pollIntervalMs: 50, handlers: { work: { handle: () => undefined }, other: { handle: () => undefined } } });
    // The pausing process handles nothing of it: the type is known from the stored job.
    const controller = await h.start({ pollIntervalMs: 50, handlers: { unrelated: { handle: () => undefined } } });
    const warm = await worker.publisher.enqueue("work", {});
    await settled(() => worker.backend.inspect.jobGet({ id: warm }));
    const gauge = () => worker.metrics().then((text) => /later_queue_paused\{queue="test",job_type="work"\} 1/.test(text));
    expect(await gauge()).toBe(false);
    expect(await controller.pause({ jobType: "work" })).toBe(true);
    await waitFor(gauge, "the worker server to read the pause", 5_000);
    const held = await worker.publisher.enqueue("work", {});
    const other = await worker.publisher.enqueue("other", {});
    expect((await settled(() => worker.backend.inspect.jobGet({ id: other }))).stage).toBe("success");
    expect((await worker.backend.inspect.jobGet({ id: held }))?.stage).toBe("enqueued");
    expect(await controller.resume({ jobType: "work" })).toBe(true);
    expect((await settled(() => worker.backend.inspect.jobGet({ id: held }))).stage).toBe("success");
  });

  it("X4: a resume wakes an idle server of another backend at once, long before its poll interval", async () => {
    const h = harness();
    const controller = await h.start({ handlers: { unrelated: { handle: () => undefined } } });
    // Paused before the worker starts (at the seam: the type is not known yet), so its first read sees it.
    await controller.backend.control.pauseSet({ kind: "type", name: "work", paused: true, now: Date.now() });
    const worker = await h.start({ pollIntervalMs: 600_000, handlers: { work: { handle: () => undefined } } });
    const id = await worker.publisher.enqueue("work", {});
    // The enqueue woke the worker's fetcher: its claim left the paused type out.
    await waitFor(() => h.events.some((e) => e.type === "job" && e.jobId === id), "the enqueue event");
    expect((await worker.backend.inspect.jobGet({ id }))?.stage).toBe("enqueued");
    expect(await controller.resume({ jobType: "work" })).toBe(true);
    // Only the resume's wake-up can start it now: the worker's poll timer is 10 minutes away.
    expect((await settled(() => worker.backend.inspect.jobGet({ id }), "the resumed job")).stage).toBe("success");
  });

  it("X4: a paused topic: its partitions are not claimed, enqueue to them works, regular jobs run; resume runs them in order", async () => {
    const h = harness();
    const ran: number[] = [];
    const options = {
      topics: [topic("ledger", 2)],
      handlers: {
        post: {
          handle: (_ctx: unknown, payload: unknown) => {
            ran.push((payload as { n: number }).n);
          },
        },
        other: { handle: () => undefined },
      },
    };
    // Paused by a first server, which then stops: the server that runs the test reads the paused set at its start,
    // before any claim. A pause made while a claim is on its way is honoured from the next claim on (within a poll
    // interval): paused by the server that ran the test right after its start, a partition job enqueued just after
    // the pause ran once (a claim begun before the pause, with the set read before it, ran after that enqueue).
    const first = await h.start(options);
    expect(await first.pause({ topic: "ledger" })).toBe(true);
    expect(await first.pause({ topic: "ledger" })).toBe(false);
    expect(await first.listPaused()).toEqual([{ topic: "ledger", pausedAt: expect.any(Number) }]);
    await first.shutdown({ deadlineMs: 5_000 });
    const server = await h.start(options);
    const ids = [];
    for (let n = 0; n < 4; n++) ids.push(await server.publisher.enqueueToPartition("post", { n }, { topic: "ledger", key: "acct" }));
    const other = await server.publisher.enqueue("other", {});
    expect((await settled(() => server.backend.inspect.jobGet({ id: other }))).stage).toBe("success");
    // A partition claim pass ran meanwhile (the enqueue woke it); none of the topic's jobs started.
    for (const id of ids) expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("enqueued");
    expect(ran).toEqual([]);
    expect(await server.resume({ topic: "ledger" })).toBe(true);
    for (const id of ids) expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
    expect(ran).toEqual([0, 1, 2, 3]);
  });

  it("X4: a paused job type at a partition's head holds that partition; other types' partitions run", async () => {
    const h = harness();
    const options = { topics: [topic("ledger", 1)], handlers: { post: { handle: () => undefined }, audit: { handle: () => undefined } } };
    // Paused before this server starts (its start reads the paused set before any claim): a pause made while a
    // claim is on its way is honoured from the next claim on (within a poll interval), so a head of the type
    // enqueued at once could still be taken by the claim already under way.
    const first = await h.start(options);
    expect(await first.pause({ jobType: "audit" })).toBe(true);
    await first.shutdown({ deadlineMs: 5_000 });
    const server = await h.start(options);
    const audit = await server.publisher.enqueueToPartition("audit", {}, { topic: "ledger", partition: 0 });
    const post = await server.publisher.enqueueToPartition("post", {}, { topic: "ledger", partition: 0 });
    const regular = await server.publisher.enqueue("post", {});
    expect((await settled(() => server.backend.inspect.jobGet({ id: regular }))).stage).toBe("success");
    expect((await server.backend.inspect.jobGet({ id: audit }))?.stage).toBe("enqueued");
    expect((await server.backend.inspect.jobGet({ id: post }))?.stage).toBe("enqueued");
    expect(await server.resume({ jobType: "audit" })).toBe(true);
    expect((await settled(() => server.backend.inspect.jobGet({ id: post }))).stage).toBe("success");
    expect((await server.backend.inspect.jobGet({ id: audit }))?.stage).toBe("success");
  });

  it("X4: an unknown job type or topic is a typed error and writes nothing; a bad target is INVALID_ARGUMENT naming the field", async () => {
    const h = harness();
    const server = await h.start({ topics: [topic("ledger", 1)], handlers: { work: { handle: () => undefined } } });
    expect(await codeOf(server.pause({ jobType: "nope" }))).toBe("JOB_TYPE_NOT_FOUND");
    expect(await codeOf(server.resume({ jobType: "nope" }))).toBe("JOB_TYPE_NOT_FOUND");
    expect(await codeOf(server.pause({ topic: "nope" }))).toBe("UNKNOWN_TOPIC");
    expect(await codeOf(server.resume({ topic: "nope" }))).toBe("UNKNOWN_TOPIC");
    expect(await codeOf(server.pause({} as never))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(server.pause({ jobType: "work", topic: "ledger" } as never))).toBe("INVALID_ARGUMENT");
    const empty = await server.pause({ jobType: "" }).catch((e: Error) => e);
    expect(empty).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/jobType/) });
    expect(await codeOf(server.pause(null as never))).toBe("INVALID_ARGUMENT");
    expect(await server.listPaused()).toEqual([]);
    // Known: the local handler, a registered topic.
    expect(await server.pause({ jobType: "work" })).toBe(true);
    expect(await server.pause({ topic: "ledger" })).toBe(true);
    expect(await server.resume({ topic: "ledger" })).toBe(true);
    expect(await server.resume({ topic: "ledger" })).toBe(false);
  });
});
