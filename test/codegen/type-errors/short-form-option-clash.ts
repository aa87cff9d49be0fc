// A short form takes its own option as an argument, and not again in options.
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.sendEmail.enqueueDelayed({ address: "a@b.c", body: "hi" }, 1_000, { runAt: new Date() }); // error: TS2353
