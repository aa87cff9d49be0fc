// Option values are typed: delayMs is a number of milliseconds.
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.processOrder.enqueueToPartition({ customerId: 42, description: "x" }, { delayMs: "5s" }); // error: TS2322
