import { ts, type JSDocTag, type PropertySignature, type Type } from "ts-morph";
import type { Locate } from "./payload-checker.js";
import { readPayloadFieldTag } from "./payload-field-tag.js";
import { SchemaProblems } from "./schema-errors.js";

/** The runtime's largest limit (a PostgreSQL integer column). */
const MAX_LIMIT = 2 ** 31 - 1;

/** Milliseconds per unit of a `@rateLimit` window. */
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** X9: a job's limits as the schema declares them (`@concurrency N`, `@rateLimit MAX/WINDOW`, `@group FIELD`, `@groupConcurrency N`). */
export interface JobLimits {
  concurrency?: number;
  rateLimit?: { max: number; perMs: number };
  /** The payload field (a required string) whose value is a job's `group` when the enqueue gives none. */
  group?: string;
  /** At most this many running per group across the namespace's servers. */
  groupConcurrency?: number;
}

/**
 * X9: `@concurrency N` (an integer from 1) and `@rateLimit MAX/WINDOW` (MAX
 * an integer from 1; WINDOW an integer with a unit `ms`, `s`, `m` or `h`,
 * `100/1s`, `5/250ms`; a bare `1` is one of the unit, `100/s`),
 * `@group FIELD` (a required string field of `payload`) and
 * `@groupConcurrency N` (an integer from 1) from the member's doc comment;
 * every problem with them is reported. The handler's own options win over
 * the limits at `with...Handler`; an enqueue's own `group` wins over the
 * field's value.
 */
export function readLimits(declaration: PropertySignature, payload: Type, job: string, locate: Locate): JobLimits {
  const tags = declaration.getJsDocs().flatMap((doc) => doc.getTags());
  const problems = new SchemaProblems();
  const one = (tagName: string): JSDocTag | undefined => {
    const found = tags.filter((t) => t.getTagName() === tagName);
    for (const extra of found.slice(1)) problems.report(locate(extra, `job "${job}" has more than one @${tagName}`));
    return found[0];
  };
  const limits: JobLimits = {};
  for (const name of ["concurrency", "groupConcurrency"] as const) {
    const tag = one(name);
    if (!tag) continue;
    const text = (tag.getCommentText() ?? "").trim();
    const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (n >= 1 && n <= MAX_LIMIT) limits[name] = n;
    else problems.report(locate(tag, `@${name} of "${job}" must be an integer from 1 to ${MAX_LIMIT}, got ${JSON.stringify(text)}`));
  }
  const groupTag = one("group");
  if (groupTag) {
    const field = readGroupField(groupTag, declaration, payload, job, locate, problems);
    if (field !== undefined) limits.group = field;
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

/** `@group FIELD`: a required string field of the payload (a job's group is a string of 1 to 200 characters). */
function readGroupField(
  tag: JSDocTag,
  declaration: PropertySignature,
  payload: Type,
  job: string,
  locate: Locate,
  problems: SchemaProblems,
): string | undefined {
  return readPayloadFieldTag(tag, { flags: ts.TypeFlags.StringLike, what: "string" }, declaration, payload, job, locate, problems);
}
