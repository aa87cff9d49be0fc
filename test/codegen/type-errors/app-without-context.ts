// Without `context`, a handler that reads ctx.app does not compile.
import { sqlite } from "@later/runtime/sqlite";
import { JobsBuilder } from "../schemas/shop.generated.js";

new JobsBuilder({ backend: sqlite({ file: "x.db" }) }).withSendEmailHandler(async (ctx) => {
  void ctx.app.mailer; // error: TS18046
});
