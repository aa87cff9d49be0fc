// A job without @topic has no partition methods.
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.sendEmail.enqueueToPartition({ address: "a@b.c", body: "hi" }); // error: TS2339
