// The options argument is typed: an unknown key is refused (a misspelt delay would run the job at once).
import type { JobsServer } from "../schemas/shop.generated.js";

declare const server: JobsServer<{}>;
void server.jobs.sendEmail.enqueue({ address: "a@b.c", body: "hi" }, { delayMS: 1_000 }); // error: TS2561
