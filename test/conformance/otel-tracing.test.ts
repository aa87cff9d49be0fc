/**
 * X10 tracing in one process, on both backends: a failed attempt's span
 * records the exception with status ERROR and the retry's span follows; a
 * span processor or exporter that throws, or an exporter that never
 * answers (each on its own provider, every span reaching it), neither
 * fails nor delays an enqueue or a job (spans end synchronously;
 * exporting is the processor's business). With no active
 * context an enqueue stores no traceparent and its attempt is a root span.
 * A recurring
 * occurrence, enqueued with no caller's span, gets a root producer span
 * its attempt links to. A caller's tracestate is stored beside its
 * traceparent and reaches the attempt's span.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { context, createTraceState, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { RetryPolicy, topic } from "@later/runtime";
import { tracing } from "@later/runtime/otel";
import { BACKENDS } from "./backends.js";
import { ManualClock } from "@later/runtime/testing";
import { settled, useHarness, waitFor } from "./harness.js";

const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  contextManager.disable();
  context.disable();
});

/** An exporter that throws at once, counting its calls. */
function throwingExporter(): SpanExporter & { calls: number } {
  const exporter = {
    calls: 0,
    export: () => {
      exporter.calls++;
      throw new Error("exporter down");
    },
    shutdown: async () => undefined,
  };
  return exporter;
}
/** An exporter that never calls back, counting its calls. */
function hangingExporter(): SpanExporter & { calls: number } {
  const exporter = {
    calls: 0,
    export: () => void exporter.calls++,
    shutdown: async () => undefined,
  };
  return exporter;
}
/** A processor that throws at every span's start and end. */
const brokenProcessor: SpanProcessor = {
  onStart: () => {
    throw new Error("processor broken at start");
  },
  onEnd: () => {
    throw new Error("processor broken at end");
  },
  forceFlush: async () => undefined,
  shutdown: async () => undefined,
};
/** A processor that throws only when a span ends (its start succeeds, so the span exists and is ended on the job's path). */
const brokenAtEnd: SpanProcessor = {
  onStart: () => undefined,
  onEnd: () => {
    throw new Error("processor broken at end");
  },
  forceFlush: async () => undefined,
  shutdown: async () => undefined,
};

describe.each(BACKENDS)("tracing (X10) on $name", (entry) => {
  const harness = useHarness(entry);

  it("X10: a failed attempt's span records the exception with status ERROR; the producer span is the enqueue's, with its attributes", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    let runs = 0;
    const server = await harness().start({
      handlers: {
        flaky: {
          handle: () => {
            if (runs++ === 0) throw new Error("first run fails");
          },
          retry: () => RetryPolicy.fixed(1, 1),
        },
      },
      topics: [topic("orders", 2)],
      middleware: [tracing({ tracerProvider: provider })],
    });
    const request = provider.getTracer("app").startSpan("request");
    const id = await context.with(trace.setSpan(context.active(), request), () =>
      server.publisher.enqueueToPartition("flaky", {}, { topic: "orders", partition: 1 }),
    );
    request.end();
    await settled(() => server.backend.inspect.jobGet({ id }));
    const consumers = await waitFor(() => {
      const spans = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER);
      return spans.length === 2 ? spans : null;
    }, "two consumer spans");
    const producer = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.PRODUCER)!;
    expect(producer.name).toBe("later.enqueue flaky");
    expect(producer.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(producer.attributes).toMatchObject({
      "messaging.system": "later",
      "messaging.operation.type": "send",
      "messaging.operation.name": "send",
      "messaging.destination.name": "orders",
      "later.job.id": id,
    });
    const [first, second] = [...consumers].sort((a, b) => Number(a.attributes["later.job.attempt"]) - Number(b.attributes["later.job.attempt"])) as [
      ReadableSpan,
      ReadableSpan,
    ];
    expect(first.status).toEqual({ code: SpanStatusCode.ERROR, message: "first run fails" });
    expect(first.events.map((e) => [e.name, e.attributes?.["exception.message"]])).toEqual([["exception", "first run fails"]]);
    expect(first.attributes).toMatchObject({
      "later.job.outcome": "error",
      "error.type": "Error",
      "later.partition": 1,
      "messaging.destination.name": "orders",
    });
    expect(second.attributes).toMatchObject({ "later.job.attempt": 2, "later.job.outcome": "success" });
    for (const span of consumers) expect(span.links.map((l) => l.context.spanId)).toEqual([producer.spanContext().spanId]);
  });

  it("X10: a throwing processor, a throwing exporter and a hanging exporter neither fail nor hold up an enqueue or a job", async () => {
    // One provider each: a processor throwing at a span's start makes the SDK's startSpan throw, so no span
    // would reach an exporter of the same provider.
    const throwing = throwingExporter();
    const hanging = hangingExporter();
    const providers = [
      new BasicTracerProvider({ spanProcessors: [brokenProcessor] }),
      new BasicTracerProvider({ spanProcessors: [brokenAtEnd] }),
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(throwing)] }),
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(hanging)] }),
    ];
    const server = await harness().start({
      handlers: { a: { handle: () => undefined } },
      middleware: providers.map((tracerProvider) => tracing({ tracerProvider })),
    });
    // The application's span comes from a working provider (the broken one throws at every span's start).
    const request = new BasicTracerProvider().getTracer("app").startSpan("request");
    const ids = await context.with(trace.setSpan(context.active(), request), () => server.publisher.enqueueMany("a", [{}, {}, {}]));
    const plain = await server.publisher.enqueue("a", {});
    for (const id of [...ids, plain]) expect((await settled(() => server.backend.inspect.jobGet({ id }))).stage).toBe("success");
    // Every span reached both exporters: the enqueue's producer span and the four attempts' consumer spans.
    await waitFor(() => throwing.calls === 5 && hanging.calls === 5, "every span exported");
    expect([throwing.calls, hanging.calls]).toEqual([5, 5]);
  });

  it("X10: with no active context an enqueue starts no span and stores no traceparent (meta NULL); its attempt is a root span without links", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const h = harness();
    const server = await h.start({ handlers: { a: { handle: () => undefined } }, middleware: [tracing({ tracerProvider: provider })] });
    const plain = await server.publisher.enqueue("a", {});
    const request = provider.getTracer("app").startSpan("request");
    const traced = await context.with(trace.setSpan(context.active(), request), () => server.publisher.enqueue("a", {}));
    request.end();
    for (const id of [plain, traced]) await settled(() => server.backend.inspect.jobGet({ id }));
    const app = h.db.appDatabase();
    let meta: Map<string, string | null>;
    try {
      const { rows } = await sql<{ id: string; meta: string | null }>`SELECT id, meta FROM later_jobs`.execute(app);
      meta = new Map(rows.map((r) => [r.id, r.meta]));
    } finally {
      await app.destroy();
    }
    const producers = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.PRODUCER);
    expect(producers.map((s) => s.attributes["later.job.id"])).toEqual([traced]);
    expect(meta.get(plain)).toBeNull();
    const { traceId, spanId } = producers[0]!.spanContext();
    expect(JSON.parse(meta.get(traced)!).traceparent).toBe(`00-${traceId}-${spanId}-01`);
    const consumers = await waitFor(() => {
      const spans = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER);
      return spans.length === 2 ? spans : null;
    }, "two consumer spans");
    const root = consumers.find((s) => s.attributes["later.job.id"] === plain)!;
    expect(root.parentSpanContext).toBeUndefined();
    expect(root.links).toEqual([]);
  });

  it("X10: the enqueue's tracestate is stored beside its traceparent and reaches the attempt's link (parent: true, its parent)", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const h = harness();
    const server = await h.start({
      handlers: { linked: { handle: () => undefined }, parented: { handle: () => undefined } },
      middleware: [
        {
          // Each job type through its own tracing(): linked by default, parented with parent: true.
          enqueue: (ctx, next) => (ctx.jobType === "linked" ? linking.enqueue!(ctx, next) : parenting.enqueue!(ctx, next)),
          attempt: (ctx, next) => (ctx.jobType === "linked" ? linking.attempt!(ctx, next) : parenting.attempt!(ctx, next)),
        },
      ],
    });
    const linking = tracing({ tracerProvider: provider });
    const parenting = tracing({ tracerProvider: provider, parent: true });
    // A caller's span from upstream, carrying a vendor's trace state.
    const upstream = trace.wrapSpanContext({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      traceFlags: 1,
      isRemote: true,
      traceState: createTraceState("vendor=abc,other=1"),
    });
    const ids = await context.with(trace.setSpan(context.active(), upstream), async () => [
      await server.publisher.enqueue("linked", {}),
      await server.publisher.enqueue("parented", {}),
    ]);
    for (const id of ids) await settled(() => server.backend.inspect.jobGet({ id }));
    const app = h.db.appDatabase();
    let stored: Record<string, string>[];
    try {
      const { rows } = await sql<{ meta: string }>`SELECT meta FROM later_jobs ORDER BY id`.execute(app);
      stored = rows.map((r) => JSON.parse(r.meta));
    } finally {
      await app.destroy();
    }
    for (const meta of stored) expect(meta.tracestate).toBe("vendor=abc,other=1");
    const consumers = await waitFor(() => {
      const spans = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER);
      return spans.length === 2 ? spans : null;
    }, "two consumer spans");
    const of = (id: string) => consumers.find((s) => s.attributes["later.job.id"] === id)!;
    expect(of(ids[0]!).links[0]!.context.traceState?.serialize()).toBe("vendor=abc,other=1");
    expect(of(ids[1]!).spanContext().traceState?.serialize()).toBe("vendor=abc,other=1");
    expect(of(ids[1]!).spanContext().traceId).toBe("0af7651916cd43dd8448eb211c80319c");
  });

  it("X10/R2: recurring occurrences, enqueued with no active span, get root PRODUCER spans naming the schedule; their attempts link to them", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const clock = new ManualClock();
    const server = await harness().start({
      clock,
      recurringPollIntervalMs: 3_600_000,
      handlers: { report: { handle: () => undefined } },
      middleware: [tracing({ tracerProvider: provider })],
    });
    const first = await server.publisher.enqueueRecurring("report", "nightly", {}, "*/10 * * * * *");
    clock.advance(20_000);
    expect(await server.pollRecurring()).toBe(1);
    const producers = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.PRODUCER);
    expect(producers).toHaveLength(2);
    for (const span of producers) {
      expect(span.name).toBe("later.enqueue report");
      expect(span.parentSpanContext).toBeUndefined();
      expect(span.attributes).toMatchObject({ "later.schedule.id": "nightly", "messaging.destination.name": "report" });
    }
    expect(producers[0]!.attributes["later.job.id"]).toBe(first);
    const ids = producers.map((s) => String(s.attributes["later.job.id"]));
    const consumers = await waitFor(() => {
      clock.advance(1); // wakes the worker pool's poll on the manual clock
      const spans = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER);
      return spans.length === 2 ? spans : null;
    }, "both occurrences' attempts");
    for (const [i, id] of ids.entries()) {
      const span = consumers.find((s) => s.attributes["later.job.id"] === id)!;
      expect(span.links.map((l) => l.context.spanId)).toEqual([producers[i]!.spanContext().spanId]);
    }
  });
});
