// The builder's context type is what handlers see as ctx.app.
import { sqlite } from "@later/runtime/sqlite";
import { JobsBuilder, type JobsContext } from "../schemas/shop.generated.js";
import type { SendEmail } from "../schemas/shop.schema.js";

async function sendEmail(ctx: JobsContext<{ mailer: string }>, _p: SendEmail): Promise<void> {
  void ctx.app.mailer;
}
new JobsBuilder({ context: { db: 1 }, backend: sqlite({ file: "x.db" }) }).withSendEmailHandler(sendEmail); // error: TS2345
