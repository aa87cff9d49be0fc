// Only declared jobs can be enqueued.
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.sendSms.enqueue({ to: "+1555" }); // error: TS2339
