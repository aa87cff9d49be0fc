/**
 * `@later/runtime/otel`: OpenTelemetry tracing as a middleware (docs/semantics.md X10).
 * `@opentelemetry/api` is an optional peer dependency, loaded only when {@link tracing} is called.
 */
export { tracing, type TracingOptions } from "./tracing.js";
