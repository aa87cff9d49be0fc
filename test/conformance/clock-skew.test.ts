/**
 * One clock for leases on PostgreSQL: two servers on one database, one of
 * them on a host whose wall clock is 90 s ahead (the `clock` option), with
 * `timeSource: "database"` (the default when no `clock` is given). Every
 * rule that compares times written by one host with the clock of another
 * holds: a job still leased on the other host is not rescued, a delayed job
 * does not start early, partitions are not taken from a live owner, and a
 * schedule's next occurrence is not enqueued before it is due. The same
 * skewed server on its own clock (`timeSource: "local"`) breaks the first
 * and last rules, which shows what the database clock prevents.
 *
 * SQLite has no server clock: every process on the file runs on this
 * machine's clock, so there is nothing to skew (README, "Time").
 */
import { describe, expect, it } from "vitest";
import { type Clock, systemClock, topic } from "@later/runtime";
import { openJobsPublisher } from "../codegen/schemas/shop.generated.js";
import { BACKENDS } from "./backends.js";
import { deferred, useHarness, waitFor } from "./harness.js";

const SKEW_MS = 90_000;
/** The wall clock of a host that is `ms` ahead. */
const ahead = (ms: number): Clock => ({ now: () => Date.now() + ms, sleep: systemClock.sleep });

describe.each(BACKENDS.filter((b) => b.name === "postgres"))("one clock for servers on several hosts ($name)", (entry) => {
  const harness = useHarness(entry);

  it("a job leased by a server whose clock is right is not rescued by one 90 s ahead (on its own clock it would be)", async () => {
    const h = harness();
    const started = deferred();
    const release = deferred();
    const a = await h.start({
      workerCount: 1,
      handlers: {
        slow: {
          handle: async () => {
            started.resolve();
            await release.promise;
          },
        },
      },
    });
    await a.publisher.enqueue("slow", {});
    await started.promise;
    const skewed = await h.start({ clock: ahead(SKEW_MS), timeSource: "database", stuckGraceMs: 0, handlers: { other: { handle: () => undefined } } });
    expect(await skewed.rescueStuckJobs()).toBe(0);
    const onItsOwnClock = await h.start({ clock: ahead(SKEW_MS), stuckGraceMs: 0, handlers: { other: { handle: () => undefined } } });
    expect(await onItsOwnClock.rescueStuckJobs()).toBe(1); // the bug: a job running on a live server taken away
    release.resolve();
  });

  it("a job delayed by 2 s on one host does not start early on a host 90 s ahead", async () => {
    const h = harness();
    const ran = deferred<number>();
    await h.start({ clock: ahead(SKEW_MS), timeSource: "database", handlers: { sendEmail: { handle: () => ran.resolve(Date.now()) } } });
    const publisher = await openJobsPublisher({ backend: h.db.backend() }); // a web process on a host whose clock is right
    try {
      const enqueuedAt = Date.now();
      await publisher.jobs.sendEmail.enqueueDelayed({ address: "a", body: "b" }, 2_000);
      expect((await ran.promise) - enqueuedAt).toBeGreaterThanOrEqual(2_000 - 50); // 50 ms: the offsets' measuring error, at most half a round trip each
    } finally {
      await publisher.close();
    }
  });

  // 32 partitions: rendezvous gives the newcomer none of them with probability 2^-32.
  it("a server 90 s ahead shares the partitions with a live owner instead of taking them", async () => {
    const h = harness();
    const options = { topics: [topic("orders", 32)], partitionMemberExpiryMs: 1_500, handlers: { order: { handle: () => undefined } } };
    const a = await h.start(options);
    await waitFor(() => a.ownedPartitions.length === 32, "the first server to own every partition");
    const b = await h.start({ ...options, clock: ahead(SKEW_MS), timeSource: "database" });
    await waitFor(() => b.ownedPartitions.length > 0 && a.ownedPartitions.length + b.ownedPartitions.length === 32, "the partitions to be shared", 15_000);
    const owned = [...a.ownedPartitions, ...b.ownedPartitions].map((p) => p.partition).sort((x, y) => x - y);
    expect(owned).toEqual(Array.from({ length: 32 }, (_, i) => i));
    // Several heartbeats later, still shared: the skewed server never judged the first one dead.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(a.ownedPartitions.length).toBeGreaterThan(0);
    expect(a.ownedPartitions.length + b.ownedPartitions.length).toBe(32);
  });

  it("a schedule's next occurrence is not enqueued early by a poller 90 s ahead (on its own clock it would be)", async () => {
    const h = harness();
    const a = await h.start({ handlers: { tick: { handle: () => undefined } } });
    // Every 10 s: the first occurrence is enqueued at once, the next one is stored as due 10 to 20 s from now,
    // so it is due for a clock 90 s ahead of the right one, and not for one that follows the database.
    await a.publisher.enqueueRecurring("tick", "every-10s", {}, "*/10 * * * * *");
    const ticks = async () => (await a.backend.inspect.jobList({ jobType: "tick", limit: 100 })).length;
    expect(await ticks()).toBe(1); // the first occurrence, enqueued with the schedule
    const skewed = await h.start({ clock: ahead(SKEW_MS), timeSource: "database", handlers: { tick: { handle: () => undefined } } });
    expect(await skewed.pollRecurring()).toBe(0); // its poller has also polled once at start
    expect(await ticks()).toBe(1);
    await h.start({ clock: ahead(SKEW_MS), handlers: { tick: { handle: () => undefined } } });
    await waitFor(async () => (await ticks()) > 1, "the poller on its own clock to enqueue the next occurrence early"); // the bug
  });
});
