// ctx.jobs has the declared jobs only.
import type { JobsContext } from "../schemas/shop.generated.js";

export async function handler(ctx: JobsContext<{}>): Promise<void> {
  await ctx.jobs.chargeCard.enqueue({ amount: 1 }); // error: TS2339
}
