import type { JSDocTag, PropertySignature } from "ts-morph";
import type { Locate } from "./payload-checker.js";
import { SchemaProblems } from "./schema-errors.js";

/** The runtime's largest limit (a PostgreSQL integer column). */
const MAX_LIMIT = 2 ** 31 - 1;

/** Milliseconds per unit of a `@rateLimit` window. */
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** X9: a job's limits as the schema declares them (`@concurrency N`, `@rateLimit MAX/WINDOW`). */
export interface JobLimits {
  concurrency?: number;
  rateLimit?: { max: number; perMs: number };
}

/**
 * X9: `@concurrency N` (an integer from 1) and `@rateLimit MAX/WINDOW` (MAX
 * an integer from 1; WINDOW an integer with a unit `ms`, `s`, `m` or `h`,
 * `100/1s`, `5/250ms`; a bare `1` is one of the unit, `100/s`) from the
 * member's doc comment; every problem with them is reported. The handler's
 * own options win over them at `with...Handler`.
 */
export function readLimits(declaration: PropertySignature, job: string, locate: Locate): JobLimits {
  const tags = declaration.getJsDocs().flatMap((doc) => doc.getTags());
  const problems = new SchemaProblems();
  const one = (tagName: string): JSDocTag | undefined => {
    const found = tags.filter((t) => t.getTagName() === tagName);
    for (const extra of found.slice(1)) problems.report(locate(extra, `job "${job}" has more than one @${tagName}`));
    return found[0];
  };
  const limits: JobLimits = {};
  const concurrencyTag = one("concurrency");
  if (concurrencyTag) {
    const text = (concurrencyTag.getCommentText() ?? "").trim();
    const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (n >= 1 && n <= MAX_LIMIT) limits.concurrency = n;
    else problems.report(locate(concurrencyTag, `@concurrency of "${job}" must be an integer from 1 to ${MAX_LIMIT}, got ${JSON.stringify(text)}`));
  }
  const rateTag = one("rateLimit");
  if (rateTag) {
    const text = (rateTag.getCommentText() ?? "").trim();
    const match = /^(\d+)\s*\/\s*(\d*)\s*(ms|s|m|h)$/.exec(text);
    const max = match ? Number(match[1]) : Number.NaN;
    const perMs = match ? Number(match[2] === "" ? 1 : match[2]) * UNIT_MS[match[3]!]! : Number.NaN;
    if (max >= 1 && max <= MAX_LIMIT && perMs >= 1 && perMs <= Number.MAX_SAFE_INTEGER) limits.rateLimit = { max, perMs };
    else
      problems.report(
        locate(rateTag, `@rateLimit of "${job}" must be MAX/WINDOW, MAX an integer from 1 and WINDOW such as 1s, 500ms, 1m or 1h, got ${JSON.stringify(text)}`),
      );
  }
  problems.throwIfAny();
  return limits;
}
