// A handler whose resolved value is not the job's Results entry is refused where it is registered (X6).
import type { JobsBuilder } from "../schemas/results.generated.js";

declare const builder: JobsBuilder<{}>;
builder.withSendEmailHandler(async () => ({ messageId: 42 })); // error: TS2322
