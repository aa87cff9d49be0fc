import type { JobTypeLimit } from "../backend/backend.js";
import { handlerLimit } from "../config/handler-registration.js";
import type { ResolvedServerOptions } from "../config/server-options.js";

/**
 * X9: stores the limits of a starting server's handlers (`jobs.limitsSet`):
 * the last server started with a handler for a type sets its limits, and a
 * type without a limit in this server's options has its stored limits
 * removed. Where the stored limits differ from this server's (a rolling
 * deploy that changes a limit, or servers started with different options),
 * one `warning` event per type, code `LIMITS_CHANGED`: the servers started
 * earlier with other options still claim the type (their limited step reads
 * the stored limits at each claim; a server that had no limit for it keeps
 * claiming it unlimited until restarted).
 */
export async function storeLimits<C>(options: ResolvedServerOptions<C>): Promise<void> {
  const jobTypes = Object.keys(options.handlers);
  const limits = jobTypes.map((t) => handlerLimit(t, options.handlers[t]!)).filter((l): l is JobTypeLimit => l !== null);
  const { previous } = await options.backend.jobs.limitsSet({ jobTypes, limits, now: options.clock.now() });
  const mine = new Map(limits.map((l) => [l.jobType, l]));
  for (const stored of previous) {
    const own = mine.get(stored.jobType) ?? { jobType: stored.jobType, concurrency: null, rateLimit: null, groupConcurrency: null };
    if (describeLimit(own) === describeLimit(stored)) continue;
    options.onEvent({
      type: "warning",
      code: "LIMITS_CHANGED",
      jobType: stored.jobType,
      message: `the stored limits of job type ${JSON.stringify(stored.jobType)} (${describeLimit(stored)}) differ from this server's (${describeLimit(own)}): this server's are stored now (the last server started wins); servers started earlier with other options still run`,
    });
  }
}

/** `concurrency 5, rateLimit 100/1000ms, groupConcurrency 2`, or `none`. */
function describeLimit(l: JobTypeLimit): string {
  const parts: string[] = [];
  if (l.concurrency !== null) parts.push(`concurrency ${l.concurrency}`);
  if (l.rateLimit !== null) parts.push(`rateLimit ${l.rateLimit.max}/${l.rateLimit.perMs}ms`);
  if (l.groupConcurrency !== null) parts.push(`groupConcurrency ${l.groupConcurrency}`);
  return parts.length === 0 ? "none" : parts.join(", ");
}
