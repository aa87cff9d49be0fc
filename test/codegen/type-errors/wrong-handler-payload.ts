// A handler written for another job's payload is refused where it is registered.
import type { JobsBuilder, JobsContext } from "../schemas/shop.generated.js";
import type { CreateAccount } from "../schemas/shop.schema.js";

declare const builder: JobsBuilder<{}>;
async function handleCreateAccount(_ctx: JobsContext<{}>, _p: CreateAccount): Promise<void> {}
builder.withSendEmailHandler(handleCreateAccount); // error: TS2345
