// Type test, checked by `pnpm typecheck` and never run: the generated handles' enqueue options
// take X1's `priority` and X2's `uniqueKey` / `uniqueMode`, the typed `enqueue` still resolves to
// the id, and `enqueueUnique` on the untyped publisher resolves to `{ id, outcome }`. Each
// `@ts-expect-error` line must stay an error and every other line must compile.
import type { JobId, UniqueEnqueueResult } from "@later/runtime";
import { sqlite } from "@later/runtime/sqlite";
import { openJobsPublisher } from "../codegen/schemas/shop.generated.js";
import type { SendEmail } from "../codegen/schemas/shop.schema.js";

const email: SendEmail = { address: "a@b.c", body: "hi" };

export async function typedOptions(): Promise<void> {
  const publisher = await openJobsPublisher({ backend: sqlite({ file: "x.db" }) });
  const id: JobId = await publisher.jobs.sendEmail.enqueue(email, { priority: -5 });
  await publisher.jobs.sendEmail.enqueue(email, { uniqueKey: `welcome:${id}`, uniqueMode: "afterActive" });
  await publisher.jobs.sendEmail.enqueueDelayed(email, 1_000, { uniqueKey: "k", uniqueMode: "replace", priority: 3 });
  // @ts-expect-error an unknown mode
  await publisher.jobs.sendEmail.enqueue(email, { uniqueKey: "k", uniqueMode: "debounce" });
  // @ts-expect-error a priority is a number
  await publisher.jobs.sendEmail.enqueue(email, { priority: "high" });
  await publisher.close();
}

export async function untyped(publisher: import("@later/runtime").JobPublisher): Promise<void> {
  const result: UniqueEnqueueResult = await publisher.enqueueUnique("sendEmail", email, { uniqueKey: "k" });
  const outcome: "inserted" | "existing" | "replaced" = result.outcome;
  void outcome;
}
