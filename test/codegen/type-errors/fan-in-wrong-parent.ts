// Fan-in parents (X5) are job ids: an array of anything else is refused by the compiler.
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.sendEmail.enqueueContinue([42], { address: "a@b.c", body: "x" }); // error: TS2322
