/**
 * OpenTelemetry tracing of enqueues and attempts, as one middleware
 * (docs/semantics.md X10), the way messaging systems are traced: a PRODUCER
 * span per enqueue whose context travels with the job through the database
 * (W3C `traceparent`/`tracestate` in the job's metadata), and a CONSUMER
 * span per attempt linked to it (or parented by it, `parent: true`).
 *
 * ```text
 *   enqueue, inside an active span ─► span "later.enqueue <type>" (PRODUCER) ─► meta.traceparent = its context
 *                                        └─ next(): the insert ─► end (error: recorded, status ERROR)
 *   attempt ─► span "later.job <type>" (CONSUMER), linked to meta.traceparent (none stored: a root span)
 *                 └─ next() runs in it (the handler's spans are its children) ─► end with the outcome
 * ```
 *
 * An enqueue with no active span starts no span and stores nothing: its
 * attempts start root spans. A recurring occurrence (R2) is the exception:
 * the poller that inserts it has no caller, so its enqueue span is a root
 * PRODUCER span (with `later.schedule.id`), and its attempts link to it.
 * An enqueue that inserted nothing (an occurrence another server's poller
 * won, a schedule registered again unchanged) ends its span without
 * `later.job.id`. Spans end synchronously; exporting them is the
 * SDK's span processor's business (use the batch processor): every call
 * into OpenTelemetry here is guarded, so an exporter or processor that
 * throws never fails an enqueue or a job, and one that hangs never delays
 * them.
 */
import { createRequire } from "node:module";
import type * as Otel from "@opentelemetry/api";
import { DriverNotInstalledError, LaterError } from "../errors.js";
import type { AttemptContext, EnqueueContext, JobMeta, LaterMiddleware } from "../middleware/later-middleware.js";
import type { JobId } from "../core/job-id.js";

/** Options of {@link tracing}. */
export interface TracingOptions {
  /**
   * Make each attempt's span a child of its enqueue's span (one trace from
   * the request to the job) instead of a root span linked to it. Default
   * false: an enqueue's trace then ends at the enqueue, as OpenTelemetry's
   * messaging conventions advise for work that runs later or many times.
   */
  parent?: boolean;
  /** Where the tracer comes from. Default the global provider (`trace.getTracerProvider()`), as registered by the SDK. */
  tracerProvider?: Otel.TracerProvider;
}

/** The tracer's name: the instrumentation scope of every span here. */
const SCOPE = "@later/runtime";

const requireFromRuntime = createRequire(import.meta.url);

/** `@opentelemetry/api`, or `DRIVER_NOT_INSTALLED` naming it. */
function loadApi(): typeof Otel {
  let path: string;
  try {
    path = requireFromRuntime.resolve("@opentelemetry/api");
  } catch {
    throw new DriverNotInstalledError("@opentelemetry/api", "OpenTelemetry tracing (`tracing()` of @later/runtime/otel)");
  }
  try {
    return requireFromRuntime(path) as typeof Otel;
  } catch (error) {
    throw new DriverNotInstalledError("@opentelemetry/api", "OpenTelemetry tracing (`tracing()` of @later/runtime/otel)", error);
  }
}

/**
 * The tracing middleware: pass it in a server's or publisher's
 * `middleware` option (`middleware: [tracing()]`). Loads
 * `@opentelemetry/api` now (`DRIVER_NOT_INSTALLED` when it is missing).
 *
 * Span attributes: `messaging.system` = `"later"`,
 * `messaging.operation.type` and `messaging.operation.name` (`"send"` at
 * enqueue, `"process"` per attempt), `messaging.destination.name` (the
 * topic of a partitioned job, else the job type), `later.job.type`,
 * `later.job.id` (the first id at a batch enqueue, with
 * `messaging.batch.message_count`), `later.schedule.id` for a recurring
 * occurrence, `later.job.attempt`, `later.partition`
 * for a partition head, and `later.job.outcome` (`"success"` or
 * `"error"`, then `error.type` is the error's code or class).
 */
export function tracing(options: TracingOptions = {}): LaterMiddleware {
  if (options === null || typeof options !== "object") throw new TypeError("tracing(options): options must be an object");
  const api = loadApi();
  const { trace, context, SpanKind, SpanStatusCode, ROOT_CONTEXT } = api;
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const parent = options.parent === true;

  return {
    async enqueue(ctx: EnqueueContext, next: () => Promise<JobId[]>): Promise<JobId[]> {
      const active = context.active();
      const current = trace.getSpanContext(active);
      // A recurring occurrence is traced from the poller, which has no caller's span: its span is a root.
      if ((current === undefined || !trace.isSpanContextValid(current)) && ctx.scheduleId === undefined) return next();
      const span = guarded(() =>
        tracer.startSpan(
          `later.enqueue ${ctx.jobType}`,
          {
            kind: SpanKind.PRODUCER,
            attributes: {
              ...messaging("send", destinationOf(ctx.jobType, ctx.jobs[0]?.partition?.topic)),
              "later.job.type": ctx.jobType,
              ...(ctx.jobs.length > 1 ? { "messaging.batch.message_count": ctx.jobs.length } : {}),
              ...(ctx.scheduleId === undefined ? {} : { "later.schedule.id": ctx.scheduleId }),
            },
          },
          active,
        ),
      );
      if (span === undefined) return next();
      const carrier = guarded(() => traceCarrier(api, trace.setSpan(active, span))) ?? {};
      for (const job of ctx.jobs) Object.assign(job.meta, carrier);
      try {
        const ids = await next();
        guarded(() => {
          if (ids[0] !== undefined) span.setAttribute("later.job.id", ids[0]);
          span.end();
        });
        return ids;
      } catch (error) {
        guarded(() => {
          failed(span, error);
          span.end();
        });
        throw error;
      }
    },

    async attempt(ctx: AttemptContext, next: () => Promise<unknown>): Promise<unknown> {
      const remote = guarded(() => remoteContext(api, ctx.meta));
      const base = parent && remote !== undefined ? remote : ROOT_CONTEXT;
      const linked = !parent && remote !== undefined ? trace.getSpanContext(remote) : undefined;
      const span = guarded(() =>
        tracer.startSpan(
          `later.job ${ctx.jobType}`,
          {
            kind: SpanKind.CONSUMER,
            attributes: {
              ...messaging("process", destinationOf(ctx.jobType, ctx.partition?.topic)),
              "later.job.type": ctx.jobType,
              "later.job.id": ctx.jobId,
              "later.job.attempt": ctx.attempt,
              ...(ctx.partition === null ? {} : { "later.partition": ctx.partition.partition }),
            },
            ...(linked === undefined ? {} : { links: [{ context: linked }] }),
          },
          base,
        ),
      );
      if (span === undefined) return next();
      const inSpan = guarded(() => trace.setSpan(base, span));
      let value: unknown; // the handler's value (X6), passed on to the hooks outside
      try {
        value = await (inSpan === undefined ? next() : context.with(inSpan, next));
      } catch (error) {
        guarded(() => {
          failed(span, error);
          span.end();
        });
        throw error;
      }
      guarded(() => {
        span.setAttribute("later.job.outcome", "success");
        span.end();
      });
      return value;
    },
  };

  /** Records `error` on `span`: the exception event, status ERROR, its code or class as `error.type`. */
  function failed(span: Otel.Span, error: unknown): void {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    span.setAttribute("later.job.outcome", "error");
    span.setAttribute("error.type", error instanceof LaterError ? error.code : error instanceof Error ? error.name : typeof error);
  }
}

/** The destination attribute: the topic of a partitioned job, else the job type. */
function destinationOf(jobType: string, topic: string | undefined): string {
  return topic ?? jobType;
}

/** The messaging attributes of an operation. */
function messaging(operation: "send" | "process", destination: string): Record<string, string> {
  return {
    "messaging.system": "later",
    "messaging.operation.type": operation,
    "messaging.operation.name": operation,
    "messaging.destination.name": destination,
  };
}

/**
 * The W3C trace context of `ctx` as meta members: through the global
 * propagator (`propagation.inject`), else (none registered, as without an
 * SDK's) written here in the same W3C format.
 */
function traceCarrier(api: typeof Otel, ctx: Otel.Context): JobMeta {
  const carrier: Record<string, string> = {};
  api.propagation.inject(ctx, carrier);
  const out: JobMeta = {};
  if (typeof carrier.traceparent === "string") {
    out.traceparent = carrier.traceparent;
    if (typeof carrier.tracestate === "string" && carrier.tracestate !== "") out.tracestate = carrier.tracestate;
    return out;
  }
  const sc = api.trace.getSpanContext(ctx);
  if (sc === undefined || !api.trace.isSpanContextValid(sc)) return out;
  out.traceparent = `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
  const state = sc.traceState?.serialize();
  if (state) out.tracestate = state;
  return out;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The enqueue's context from the job's meta (the global propagator's extract, else parsed here); undefined when none was stored. */
function remoteContext(api: typeof Otel, meta: Readonly<JobMeta>): Otel.Context | undefined {
  const traceparent = meta.traceparent;
  if (typeof traceparent !== "string") return undefined;
  const tracestate = typeof meta.tracestate === "string" ? meta.tracestate : undefined;
  const carrier: Record<string, string> = tracestate === undefined ? { traceparent } : { traceparent, tracestate };
  const extracted = api.propagation.extract(api.ROOT_CONTEXT, carrier);
  const found = api.trace.getSpanContext(extracted);
  if (found !== undefined && api.trace.isSpanContextValid(found)) return extracted;
  const m = TRACEPARENT.exec(traceparent);
  if (m === null) return undefined;
  const sc: Otel.SpanContext = { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16), isRemote: true };
  if (tracestate !== undefined) sc.traceState = api.createTraceState(tracestate);
  return api.trace.isSpanContextValid(sc) ? api.trace.setSpanContext(api.ROOT_CONTEXT, sc) : undefined;
}

/** Runs a call into OpenTelemetry: what it throws (a broken processor or exporter) is dropped, never the job's failure. */
function guarded<T>(call: () => T): T | undefined {
  try {
    return call();
  } catch {
    return undefined;
  }
}
