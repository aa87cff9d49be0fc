// waitFor on a job's handle types its result from Results (X6): a Receipt is not a number.
import type { JobsServer } from "../schemas/results.generated.js";

declare const server: JobsServer<{}>;
export async function read(): Promise<void> {
  const done = await server.jobs.chargeOrder.waitFor("01J", { timeoutMs: 1_000 });
  const cents: number | undefined = done.result; // error: TS2322
  void cents;
}
