// A topic job's handle has no plain enqueue that would run it unordered: only partition methods.
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.processOrder.enqueue({ customerId: 42, description: "add item" }); // error: TS2339
