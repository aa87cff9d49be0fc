// Enqueues jobs with tracing() from its own process, for otel-trace.test.ts: context crosses the database.
//
// argv[2] is a JSON config: { backend, namespace }. Opens a publisher (TypedJobPublisher, as a generated
// open<Name>Publisher does) with middleware [tracing()] on a global tracer provider whose spans go to an
// in-memory exporter, then:
// - inside an active span "request", enqueues one "work" and one "nested" job ({ traced: true }) and prints
//   `traced <type> <jobId> <traceId> <producerSpanId> <producerParentSpanId>` for each (the producer spans
//   "later.enqueue <type>", children of "request");
// - with no active span, enqueues one "work" job ({ traced: false }) and prints `untraced <jobId> <spans>`
//   (spans: how many spans that enqueue ended, 0).
// Prints `done` and exits; `error <message>` on any failure.
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { TypedJobPublisher } from "@later/runtime";
import { tracing } from "@later/runtime/otel";
import { childBackend } from "./child-backend.mjs";

const config = JSON.parse(process.argv[2]);
const say = (line) => process.stdout.write(`${line}\n`);

try {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  const publisher = await TypedJobPublisher.open(
    { backend: childBackend(config), middleware: [tracing()], timeSource: "local" },
    { work: { handlerMethod: "withWorkHandler" }, nested: { handlerMethod: "withNestedHandler" } },
  );
  const tracer = trace.getTracer("otel-enqueue-child");
  const ids = await tracer.startActiveSpan("request", async (span) => {
    try {
      return { work: await publisher.jobs.work.enqueue({ traced: true }), nested: await publisher.jobs.nested.enqueue({ traced: true }) };
    } finally {
      span.end();
    }
  });
  for (const type of ["work", "nested"]) {
    const producer = exporter.getFinishedSpans().find((s) => s.name === `later.enqueue ${type}`);
    if (!producer) throw new Error(`no producer span for ${type}`);
    const sc = producer.spanContext();
    say(`traced ${type} ${ids[type]} ${sc.traceId} ${sc.spanId} ${producer.parentSpanContext?.spanId ?? "-"}`);
  }
  const before = exporter.getFinishedSpans().length;
  const plain = await publisher.jobs.work.enqueue({ traced: false });
  say(`untraced ${plain} ${exporter.getFinishedSpans().length - before}`);
  await publisher.close();
  say("done");
} catch (error) {
  say(`error ${error instanceof Error ? error.stack : String(error)}`.replaceAll("\n", " | "));
}
