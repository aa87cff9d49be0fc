// A Date field takes a Date, not its string form.
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.createAccount.enqueue({ id: "a", createdAt: "2026-01-01" }); // error: TS2322
