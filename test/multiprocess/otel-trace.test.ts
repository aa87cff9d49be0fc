/**
 * X10 tracing across processes: a child process (otel-enqueue-child.mjs)
 * enqueues inside an active span with `tracing()`; this process's server
 * runs the jobs with `tracing()` too. The trace context crosses the
 * database in the job's metadata: each consumer span links to the child's
 * producer span (or, with `parent: true`, is its child), and a job
 * enqueued with no active span gets a root span with no link.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { context, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { BackgroundJobServer } from "@later/runtime";
import { prepareBackend } from "@later/runtime/internal";
import { tracing } from "@later/runtime/otel";
import { openBackend, PROCESS_BACKENDS, useProcesses, waitFor } from "./helpers.js";

const SCRIPT = fileURLToPath(new URL("./otel-enqueue-child.mjs", import.meta.url));
const NAMESPACE = "otel";

const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  contextManager.disable();
  context.disable();
});

describe.each(PROCESS_BACKENDS)("tracing across processes on $name", (entry) => {
  const processes = useProcesses();

  it("X10: the consumer span links to the producer span of another process (parent: true parents it); no context at enqueue: a root span", async () => {
    const spec = await entry.create(processes);
    const setup = openBackend(spec, NAMESPACE);
    await prepareBackend(setup, true);
    await setup.close();
    const child = processes.spawnScript("producer", SCRIPT, { backend: spec, namespace: NAMESPACE });
    const end = await child.waitForLine((l) => l === "done" || l.startsWith("error "), "done", 30_000);
    expect(end).toBe("done");
    const traced = new Map(
      child.lines
        .filter((l) => l.startsWith("traced "))
        .map((l) => {
          const [, type, id, traceId, spanId, parentSpanId] = l.split(" ");
          return [type!, { id: id!, traceId: traceId!, spanId: spanId!, parentSpanId: parentSpanId! }];
        }),
    );
    const [, plainId, plainSpans] = child.lines.find((l) => l.startsWith("untraced "))!.split(" ");
    expect(plainSpans).toBe("0");
    const work = traced.get("work")!;
    const nested = traced.get("nested")!;
    // Both producer spans are children of the child's "request" span, in its trace.
    expect(nested.traceId).toBe(work.traceId);
    expect(work.parentSpanId).not.toBe("-");

    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const inner = provider.getTracer("handler");
    const handle = async () => inner.startSpan("inside handler").end();
    const linking = await BackgroundJobServer.start({
      context: undefined,
      backend: processes.track(openBackend(spec, NAMESPACE)),
      handlers: { work: { handle } },
      middleware: [tracing({ tracerProvider: provider })],
      timeSource: "local",
      pollIntervalMs: 50,
    });
    const parenting = await BackgroundJobServer.start({
      context: undefined,
      backend: processes.track(openBackend(spec, NAMESPACE)),
      handlers: { nested: { handle } },
      middleware: [tracing({ tracerProvider: provider, parent: true })],
      timeSource: "local",
      pollIntervalMs: 50,
    });
    try {
      const consumers = await waitFor(() => {
        const spans = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER);
        return spans.length === 3 ? spans : null;
      }, "three consumer spans");
      const of = (id: string) => consumers.find((s) => s.attributes["later.job.id"] === id)!;
      const childOf = (span: ReadableSpan) =>
        exporter.getFinishedSpans().find((s) => s.name === "inside handler" && s.parentSpanContext?.spanId === span.spanContext().spanId);

      // Linked: a root span of its own trace, with a link to the producer span.
      const linked = of(work.id);
      expect(linked.name).toBe("later.job work");
      expect(linked.parentSpanContext).toBeUndefined();
      expect(linked.spanContext().traceId).not.toBe(work.traceId);
      expect(linked.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([[work.traceId, work.spanId]]);
      expect(linked.attributes).toMatchObject({
        "messaging.system": "later",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": "work",
        "later.job.id": work.id,
        "later.job.attempt": 1,
        "later.job.outcome": "success",
      });
      expect(linked.status.code).not.toBe(SpanStatusCode.ERROR);
      // The handler ran inside the consumer span: its spans are children of it.
      expect(childOf(linked)).toBeDefined();

      // parent: true: the consumer span is a child of the producer span, in the child's trace.
      const parented = of(nested.id);
      expect(parented.spanContext().traceId).toBe(nested.traceId);
      expect(parented.parentSpanContext?.spanId).toBe(nested.spanId);
      expect(parented.links).toEqual([]);
      expect(childOf(parented)).toBeDefined();

      // No active context at enqueue: nothing stored, a root span without links.
      const root = of(plainId!);
      expect(root.parentSpanContext).toBeUndefined();
      expect(root.links).toEqual([]);
    } finally {
      await Promise.all([linking.shutdown({ deadlineMs: 0 }), parenting.shutdown({ deadlineMs: 0 })]);
    }
  });
});
