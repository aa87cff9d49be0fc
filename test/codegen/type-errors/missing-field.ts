// A payload missing a required field is refused.
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.sendEmail.enqueue({ address: "a@b.c" }); // error: TS2345
