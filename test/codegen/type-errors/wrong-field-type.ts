// A payload field of the wrong type is refused at the enqueue.
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.processOrder.enqueueToPartition({ customerId: "42", description: "add item" }); // error: TS2322
