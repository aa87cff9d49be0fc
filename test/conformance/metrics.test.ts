// M1-M3: the Prometheus metrics of a server (`server.metrics()`, `metricsRegistry`, `metrics: false`):
// every name with its type and labels after successes, a retry, a failure and partitioned jobs; no
// label carries a job id, an error text or a server id; the queue gauges are read from the
// counters on the clock's 5 s tick, the retained log's lag with them; an application's registry of
// prom-client 15 (the runtime's is 14) renders them too, in both of its formats.
import { describe, expect, it } from "vitest";
import { Counter, Registry } from "prom-client";
import { Counter as Counter15, Registry as Registry15, type RegistryContentType } from "prom-client-15";
import { InvalidConfigError, logTopic, newJobId, RetryPolicy, topic, type LaterMiddleware } from "@later/runtime";
import { ManualClock } from "@later/runtime/testing";
import { BACKENDS } from "./backends.js";
import { afterCall, StallingClock, useHarness, waitFor } from "./harness.js";

/** One sample of the text format: name, labels, value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

/** The value of the one sample of `name` whose labels include `labels` (0 when none). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found.reduce((sum, s) => sum + s.value, 0);
}

const TYPES: Record<string, string> = {
  later_job_transitions_total: "counter",
  later_job_handler_duration_seconds: "histogram",
  later_job_duration_seconds: "histogram",
  later_job_wait_duration_seconds: "histogram",
  later_queue_jobs: "gauge",
  later_queue_oldest_ready_age_seconds: "gauge",
  later_queue_unhandled_jobs: "gauge",
  later_queue_paused: "gauge",
  later_limit_running: "gauge",
  later_limit_waiting: "gauge",
  later_worker_commands_total: "counter",
  later_workers: "gauge",
  later_partition_claims_total: "counter",
  later_partition_heads_claimed_total: "counter",
  later_partitions_active: "gauge",
  later_partition_lease_renewals_total: "counter",
  later_partition_workers_live: "gauge",
  later_partition_backlog: "gauge",
  later_partition_oldest_head_age_seconds: "gauge",
  later_partition_queue_depth: "gauge",
  later_retained_log_consumer_lag: "gauge",
};

/** The labels each metric may carry (besides `le` on histogram buckets). */
const LABELS: Record<string, string[]> = {
  later_job_transitions_total: ["queue", "job_type", "stage"],
  later_job_handler_duration_seconds: ["queue", "job_type", "outcome", "worker_id"],
  later_job_duration_seconds: ["queue", "job_type", "outcome"],
  later_job_wait_duration_seconds: ["queue", "job_type"],
  later_queue_jobs: ["queue", "stage"],
  later_queue_oldest_ready_age_seconds: ["queue"],
  later_queue_unhandled_jobs: ["queue", "job_type"],
  later_queue_paused: ["queue", "job_type"],
  later_limit_running: ["queue", "job_type"],
  later_limit_waiting: ["queue", "job_type"],
  later_worker_commands_total: ["queue", "worker_id", "outcome"],
  later_workers: ["queue", "worker_id", "state"],
  later_partition_claims_total: ["queue", "topic"],
  later_partition_heads_claimed_total: ["queue", "topic"],
  later_partitions_active: ["queue", "topic"],
  later_partition_lease_renewals_total: ["queue", "topic", "outcome"],
  later_partition_workers_live: ["queue"],
  later_partition_backlog: ["queue", "topic"],
  later_partition_oldest_head_age_seconds: ["queue", "topic"],
  later_partition_queue_depth: ["queue", "topic", "partition"],
  later_retained_log_consumer_lag: ["queue", "topic", "group"],
};

const family = (sampleName: string) => sampleName.replace(/_(bucket|sum|count)$/, "");

describe.each(BACKENDS)("metrics on $name", (entry) => {
  const harness = useHarness(entry);

  it("names, types and labels after successes, a retry, a failure and partitioned jobs; no job id, error text or server id in a label", async () => {
    const h = harness();
    let flakyRuns = 0;
    const server = await h.start({
      namespace: "shop",
      workerCount: 2,
      topics: [topic("ledger", 2)],
      handlers: {
        ok: { handle: async () => {} },
        flaky: {
          handle: async () => {
            if (++flakyRuns === 1) throw new Error("flaky-secret-text");
          },
          retry: () => RetryPolicy.fixed(1, 1),
        },
        bad: {
          handle: async (ctx) => {
            throw new Error(`bad-secret-text ${ctx.jobId}`);
          },
          retry: () => RetryPolicy.noRetries(),
        },
        entry: { handle: async () => {} },
      },
    });
    const ids = [
      ...(await server.publisher.enqueueMany("ok", [{}, {}, {}])),
      await server.publisher.enqueue("flaky", {}),
      await server.publisher.enqueue("bad", {}),
      await server.publisher.enqueueToPartition("entry", { n: 1 }, { topic: "ledger", partition: 0 }),
      await server.publisher.enqueueToPartition("entry", { n: 2 }, { topic: "ledger", partition: 0 }),
      await server.publisher.enqueueToPartition("entry", { n: 3 }, { topic: "ledger", partition: 1 }),
    ];
    const finished = () => h.events.filter((e) => e.type === "job" && (e.stage === "success" || e.stage === "failed")).length;
    await waitFor(() => finished() === ids.length, "every job finished");
    await server.renewPartitionLeases(); // nothing held now: counts no renewal, but must not fail

    const text = await server.metrics();
    const { types, samples } = parse(text);
    for (const [name, type] of Object.entries(TYPES)) expect(types.get(name), name).toBe(type);
    for (const s of samples) {
      const allowed = [...LABELS[family(s.name)]!, ...(s.name.endsWith("_bucket") ? ["le"] : [])];
      for (const label of Object.keys(s.labels)) expect(allowed, `${s.name} label ${label}`).toContain(label);
      expect(s.labels.queue, s.name).toBe("shop");
      if (s.labels.worker_id !== undefined) expect(s.labels.worker_id).toMatch(/^[1-9][0-9]*$/);
    }
    // M2: no label value carries a job id, an error text or the server's id.
    for (const forbidden of [...ids, server.instanceId, "secret-text"]) expect(text).not.toContain(forbidden);

    const t = (job_type: string, stage: string) => value(samples, "later_job_transitions_total", { job_type, stage });
    expect([t("ok", "enqueued"), t("ok", "running"), t("ok", "success")]).toEqual([3, 3, 3]);
    expect([t("flaky", "running"), t("flaky", "requeued"), t("flaky", "success")]).toEqual([2, 1, 1]);
    expect([t("bad", "running"), t("bad", "failed")]).toEqual([1, 1]);
    expect([t("entry", "enqueued"), t("entry", "running"), t("entry", "success")]).toEqual([3, 3, 3]);
    const handler = (job_type: string, outcome: string) => value(samples, "later_job_handler_duration_seconds_count", { job_type, outcome });
    expect([handler("ok", "success"), handler("flaky", "retry"), handler("flaky", "success"), handler("bad", "failed")]).toEqual([3, 1, 1, 1]);
    expect(value(samples, "later_job_duration_seconds_count", { outcome: "success" })).toBe(7);
    expect(value(samples, "later_job_duration_seconds_count", { outcome: "failed" })).toBe(1);
    // Regular jobs' attempts only (a head also waits for the heads before it).
    expect(value(samples, "later_job_wait_duration_seconds_count")).toBe(6);
    expect(value(samples, "later_worker_commands_total", { outcome: "success" })).toBe(7);
    expect(value(samples, "later_worker_commands_total", { outcome: "failed" })).toBe(2);
    expect(value(samples, "later_workers", { state: "active" })).toBeGreaterThanOrEqual(2);
    expect(value(samples, "later_partition_heads_claimed_total", { topic: "ledger" })).toBe(3);
    expect(value(samples, "later_partition_claims_total", { topic: "ledger" })).toBeGreaterThanOrEqual(2);
    expect(value(samples, "later_partition_workers_live")).toBe(1);
    // Histogram buckets reach hours for waits and workflows.
    const bounds = (name: string) => samples.filter((s) => s.name === `${name}_bucket`).map((s) => Number(s.labels.le));
    expect(Math.max(...bounds("later_job_wait_duration_seconds").filter(Number.isFinite))).toBeGreaterThanOrEqual(4 * 3600);
    expect(Math.max(...bounds("later_job_duration_seconds").filter(Number.isFinite))).toBeGreaterThanOrEqual(4 * 3600);
  });

  it.each([
    ["without middleware (the executor's plain path)", false],
    ["inside an application middleware", true],
  ])("labels an attempt timed_out at its timeout and cancelled at its cancel while its handler still hangs, %s", async (_name, withMiddleware) => {
    const h = harness();
    let release!: () => void;
    const hang = new Promise<void>((r) => (release = r));
    let settled = 0;
    const hangs = async () => {
      await hang;
      settled++;
    };
    const server = await h.start({
      leaseMs: 60_000,
      ...(withMiddleware ? { middleware: [{ attempt: (_ctx: unknown, next: () => Promise<unknown>) => next() }] } : {}),
      handlers: {
        stuck: { handle: hangs, timeoutMs: 50, retry: () => RetryPolicy.noRetries() },
        halted: { handle: hangs },
      },
    });
    try {
      await server.publisher.enqueue("stuck", {});
      const halted = await server.publisher.enqueue("halted", {});
      await waitFor(() => h.events.some((e) => e.type === "job" && e.jobId === halted && e.stage === "running"), "the halted job to start");
      expect(await server.cancel(halted)).toBe(true);
      const handler = async (job_type: string, outcome: string) =>
        value(parse(await server.metrics()).samples, "later_job_handler_duration_seconds_count", { job_type, outcome });
      let timedOut = 0;
      let cancelled = 0;
      const deadline = Date.now() + 10_000;
      while ((timedOut !== 1 || cancelled !== 1) && Date.now() < deadline) {
        [timedOut, cancelled] = [await handler("stuck", "timed_out"), await handler("halted", "cancelled")];
        if (timedOut !== 1 || cancelled !== 1) await new Promise((r) => setTimeout(r, 10));
      }
      expect([timedOut, cancelled]).toEqual([1, 1]);
    } finally {
      release();
    }
    // Their handlers' own ends, once both settled, add nothing.
    await waitFor(() => settled === 2, "both handlers to settle");
    const samples = parse(await server.metrics()).samples;
    expect(
      samples.filter((x) => x.name === "later_job_handler_duration_seconds_count" && x.value > 0).map((x) => [x.labels.job_type, x.labels.outcome]),
    ).toEqual(
      expect.arrayContaining([
        ["stuck", "timed_out"],
        ["halted", "cancelled"],
      ]),
    );
    expect(samples.filter((x) => x.name === "later_job_handler_duration_seconds_count").reduce((n, x) => n + x.value, 0)).toBe(2);
  });

  it("X10: the metrics, first of the server's attempt middleware, see a skipped claim and a timeout around the application's, whose order is unchanged", async () => {
    const h = harness();
    // The process stalls right after the first claim: its lease has expired when the claim is handed over (skipped).
    const clock = new StallingClock();
    const leaseMs = 30_000;
    const log: string[] = [];
    const logging = (name: string): LaterMiddleware => ({
      async attempt(ctx, next) {
        log.push(`${name}> ${ctx.jobType} ${ctx.attempt}`);
        try {
          return await next();
        } finally {
          log.push(`${name}< ${ctx.jobType}`);
        }
      },
    });
    let release!: () => void;
    const hang = new Promise<void>((r) => (release = r));
    const server = await h.start({
      clock,
      leaseMs,
      stuckGraceMs: 0,
      rescueIntervalMs: 1_000_000,
      workerCount: 1,
      wrapBackend: (b) =>
        afterCall(b, "jobs", "claimReady", (r) => {
          if (r.jobs.length > 0 && clock.offset === 0) clock.offset = leaseMs + 1;
        }),
      middleware: [logging("1"), logging("2")],
      handlers: {
        work: { handle: () => void log.push("handler work") },
        stuck: { handle: () => hang, timeoutMs: 50, retry: () => RetryPolicy.noRetries() },
      },
    });
    const metric = async (name: string, labels: Record<string, string>) => value(parse(await server.metrics()).samples, name, labels);
    try {
      await server.publisher.enqueue("work", {});
      await waitFor(async () => (await metric("later_worker_commands_total", { outcome: "discarded" })) === 1, "the skipped claim's metrics");
      expect(log).toEqual([]); // no application hook sees a skipped claim
      expect(await server.rescueStuckJobs()).toBe(1);
      await waitFor(async () => (await metric("later_job_handler_duration_seconds_count", { job_type: "work", outcome: "success" })) === 1, "the retry");
      await server.publisher.enqueue("stuck", {});
      await waitFor(async () => (await metric("later_job_handler_duration_seconds_count", { job_type: "stuck", outcome: "timed_out" })) === 1, "the timeout");
      await waitFor(() => log.length === 9, "the hooks to return");
      expect(log).toEqual(["1> work 2", "2> work 2", "handler work", "2< work", "1< work", "1> stuck 1", "2> stuck 1", "2< stuck", "1< stuck"]);
      expect(await metric("later_worker_commands_total", { outcome: "discarded" })).toBe(1);
    } finally {
      release();
    }
  });

  it("reads the queue gauges from the counters at start and on every 5 s tick of the clock", async () => {
    const h = harness();
    // Ahead of the wall clock: ids minted from it carry its time (the monotonic id factory never goes back).
    const clock = new ManualClock(Date.now() + 3_600_000);
    const server = await h.start({ clock, handlers: { a: { handle: async () => {} } }, topics: [topic("t", 2)], logTopics: [logTopic("events", 2)] });
    const gauges = async () => parse(await server.metrics()).samples;
    await waitFor(async () => (await gauges()).some((s) => s.name === "later_queue_jobs"), "the reading at start");
    expect(value(await gauges(), "later_queue_jobs", { stage: "enqueued" })).toBe(0);
    // Jobs of a type no server here runs stay ready; one delayed; two on a partition of the topic.
    const start = clock.now();
    await server.backend.jobs.insertMany({
      jobs: [
        { id: newJobId(start), jobType: "unhandled", payload: "{}", runAt: start - 2_000, retryPolicy: null },
        { id: newJobId(start), jobType: "unhandled", payload: "{}", runAt: start, retryPolicy: null },
        { id: newJobId(start), jobType: "unhandled", payload: "{}", runAt: start + 3_600_000, retryPolicy: null },
        { id: newJobId(start), jobType: "unhandled", payload: "{}", runAt: start, retryPolicy: null, topic: "t", partition: 1 },
        { id: newJobId(start), jobType: "unhandled", payload: "{}", runAt: start, retryPolicy: null, topic: "t", partition: 1 },
      ],
      now: start,
    });
    await server.log.appendMany(
      "events",
      [0, 1, 1].map((partition) => ({ partition, value: "r" })),
    );
    await server.log.commitOffset({ topic: "events", group: "audit", partition: 1, epoch: 0, offset: 1 });
    expect(value(await gauges(), "later_queue_jobs", { stage: "enqueued" })).toBe(0); // not read again yet
    clock.advance(5_000);
    const read = await waitFor(async () => {
      const s = await gauges();
      return value(s, "later_queue_jobs", { stage: "enqueued" }) === 4 ? s : null;
    }, "the reading after the tick");
    expect(value(read, "later_queue_jobs", { stage: "delayed" })).toBe(1);
    expect(value(read, "later_queue_oldest_ready_age_seconds")).toBe(7);
    expect(value(read, "later_partition_backlog", { topic: "t" })).toBe(2);
    expect(value(read, "later_partition_queue_depth", { topic: "t", partition: "1" })).toBe(2);
    expect(value(read, "later_partition_queue_depth", { topic: "t", partition: "0" })).toBe(0);
    expect(value(read, "later_partition_oldest_head_age_seconds", { topic: "t" })).toBe(5);
    expect(value(read, "later_retained_log_consumer_lag", { topic: "events", group: "audit" })).toBe(2);
    // The two due regular jobs of a type no live server handles (the delayed one is not due, the partitioned ones are not read).
    expect(value(read, "later_queue_unhandled_jobs", { job_type: "unhandled" })).toBe(2);
    expect(value(read, "later_queue_unhandled_jobs", { job_type: "a" })).toBe(0);
  });

  it("registers in the application's registry (shared by its servers), is off with metrics: false, and refuses bad options", async () => {
    const h = harness();
    const registry = new Registry();
    const appCounter = new Counter({ name: "app_requests_total", help: "requests", registers: [registry] });
    appCounter.inc();
    const a = await h.start({ namespace: "one", metricsRegistry: registry, handlers: { a: { handle: async () => {} } } });
    const b = await h.start({ namespace: "two", metricsRegistry: registry, workerCount: 1, handlers: { a: { handle: async () => {} } } });
    await a.publisher.enqueue("a", {});
    await b.publisher.enqueue("a", {});
    await waitFor(() => h.events.filter((e) => e.type === "job" && e.stage === "success").length === 2, "both jobs done");
    const text = await a.metrics();
    expect(text).toContain("app_requests_total 1");
    const { samples } = parse(text);
    expect(value(samples, "later_job_transitions_total", { queue: "one", stage: "success" })).toBe(1);
    expect(value(samples, "later_job_transitions_total", { queue: "two", stage: "success" })).toBe(1);
    expect(parse(await registry.metrics()).samples.length).toBe(parse(await b.metrics()).samples.length);
    // A stopped server's gauges leave; its counters stay.
    await b.shutdown();
    const after = parse(await registry.metrics()).samples;
    expect(value(after, "later_workers", { queue: "two" })).toBe(0);
    expect(value(after, "later_workers", { queue: "one", state: "active" })).toBe(6);
    expect(value(after, "later_job_transitions_total", { queue: "two", stage: "success" })).toBe(1);

    const off = await h.start({ namespace: "off", metrics: false, handlers: { a: { handle: async () => {} } } });
    expect(await off.metrics()).toBe("");

    const foreign = new Registry();
    foreign.registerMetric(new Counter({ name: "later_job_transitions_total", help: "not later's", registers: [] }));
    for (const [options, message] of [
      [{ metricsRegistry: {} }, /prom-client Registry/],
      [{ metrics: "yes" }, /`metrics` must be true or false/],
      [{ metrics: false, metricsRegistry: new Registry() }, /metrics: false/],
      [{ metricsRegistry: foreign }, /later_job_transitions_total/],
    ] as const) {
      const started = h.start({ ...(options as object), handlers: { a: { handle: async () => {} } } });
      await expect(started).rejects.toBeInstanceOf(InvalidConfigError);
      await expect(started).rejects.toThrow(message);
    }
  });

  it("registers in an application's prom-client 15 Registry, in its Prometheus and its OpenMetrics format", async () => {
    const h = harness();
    const registry = new Registry15<RegistryContentType>();
    new Counter15({ name: "app_requests_total", help: "requests", registers: [registry] }).inc();
    const server = await h.start({ namespace: "fifteen", metricsRegistry: registry, workerCount: 1, handlers: { a: { handle: async () => {} } } });
    await server.publisher.enqueue("a", {});
    await waitFor(() => h.events.some((e) => e.type === "job" && e.stage === "success"), "the job done");

    const text = await server.metrics();
    const { types, samples } = parse(text);
    for (const [name, type] of Object.entries(TYPES)) expect(types.get(name), name).toBe(type);
    expect(value(samples, "app_requests_total")).toBe(1);
    expect(value(samples, "later_job_transitions_total", { job_type: "a", stage: "success" })).toBe(1);
    expect(value(samples, "later_job_handler_duration_seconds_bucket", { job_type: "a", outcome: "success", le: "+Inf" })).toBe(1);
    expect(value(samples, "later_job_handler_duration_seconds_count", { job_type: "a", outcome: "success" })).toBe(1);
    expect(value(samples, "later_workers", { state: "active" })).toBe(1);

    // OpenMetrics names a counter family without `_total` and its samples with it (once), and ends with `# EOF`.
    registry.setContentType(Registry15.OPENMETRICS_CONTENT_TYPE);
    const open = await registry.metrics();
    expect(open.endsWith("# EOF\n")).toBe(true);
    expect(open).not.toContain("_total_total");
    const parsed = parse(open);
    expect(parsed.types.get("later_job_transitions")).toBe("counter");
    expect(parsed.types.get("later_job_handler_duration_seconds")).toBe("histogram");
    expect(value(parsed.samples, "later_job_transitions_total", { job_type: "a", stage: "success" })).toBe(1);
    expect(value(parsed.samples, "later_job_handler_duration_seconds_count", { job_type: "a", outcome: "success" })).toBe(1);
    // The registry still finds the metrics by the names they were registered under.
    expect(registry.getSingleMetric("later_job_transitions_total")).toBeDefined();
  });
});
