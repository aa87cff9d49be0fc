// A job with a Results entry must resolve to it: a handler that returns nothing is refused (X6).
import type { JobsBuilder } from "../schemas/results.generated.js";

declare const builder: JobsBuilder<{}>;
builder.withChargeOrderHandler(async () => {}); // error: TS2345
