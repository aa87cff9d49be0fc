// Type test, checked by `pnpm typecheck` and never run (issue 29, point 1): the generated builder and
// `openJobsPublisher` take the `middleware` option, with `tracing()` and an application's own hooks
// typed through `LaterMiddleware` (ctx, next and what each resolves to). Each `@ts-expect-error` line
// must stay an error and every other line must compile.
import type { AttemptContext, EnqueueContext, JobId, LaterMiddleware } from "@later/runtime";
import { tracing } from "@later/runtime/otel";
import { sqlite } from "@later/runtime/sqlite";
import { JobsBuilder, openJobsPublisher } from "../codegen/schemas/shop.generated.js";

const tenancy: LaterMiddleware = {
  async enqueue(ctx: EnqueueContext, next): Promise<JobId[]> {
    for (const job of ctx.jobs) job.meta.tenant = "t1";
    const schedule: string | undefined = ctx.scheduleId;
    void schedule;
    return next();
  },
  async attempt(ctx: AttemptContext, next) {
    const tenant: unknown = ctx.meta.tenant;
    void tenant;
    return next();
  },
};

export async function builderAndPublisher(): Promise<void> {
  const backend = sqlite({ file: "x.db" });
  const builder = new JobsBuilder({ context: {}, backend, middleware: [tracing({ parent: true }), tenancy] });
  void builder;
  const publisher = await openJobsPublisher({ backend, middleware: [tenancy, { enqueue: (_ctx, next) => next() }] });
  await publisher.close();
  // @ts-expect-error an enqueue hook resolves to the ids
  await openJobsPublisher({ backend, middleware: [{ enqueue: async () => "x" }] });
  // @ts-expect-error middleware is an array
  new JobsBuilder({ context: {}, backend, middleware: tenancy });
}
