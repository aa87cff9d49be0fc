import type { PropertySignature } from "ts-morph";
import type { Locate } from "./payload-checker.js";
import { SchemaProblems } from "./schema-errors.js";

/** The runtime's `MAX_RETENTION_MS` (100 years): the longest retention accepted. */
export const MAX_RETENTION_MS = 100 * 365 * 86_400_000;

/** A job's retention from its tags (the runtime's `JobRetention`): only the fields tagged. */
export interface RetentionTags {
  successMs?: number;
  failedMs?: number;
  cancelledMs?: number;
}

/** The tags and the retention field each sets (J11). */
export const RETENTION_TAGS = { retainSuccess: "successMs", retainFailed: "failedMs", retainCancelled: "cancelledMs" } as const;

/**
 * `@retainSuccess MS`, `@retainFailed MS` and `@retainCancelled MS` from a job's doc comment (J11 in
 * docs/semantics.md): how long its finished jobs are kept per stage, each an integer of ms from 0 to
 * {@link MAX_RETENTION_MS} (`@retainSuccess 0`: a success deletes its row). Undefined when none is given;
 * every problem (a tag given twice, a value that is not such an integer) is reported.
 */
export function readRetention(declaration: PropertySignature, job: string, locate: Locate): RetentionTags | undefined {
  const tags = declaration.getJsDocs().flatMap((doc) => doc.getTags());
  const problems = new SchemaProblems();
  const retention: RetentionTags = {};
  for (const [tagName, field] of Object.entries(RETENTION_TAGS)) {
    const found = tags.filter((t) => t.getTagName() === tagName);
    for (const extra of found.slice(1)) problems.report(locate(extra, `job "${job}" has more than one @${tagName}`));
    const tag = found[0];
    if (!tag) continue;
    const text = (tag.getCommentText() ?? "").trim().replaceAll("_", "");
    const ms = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (Number.isSafeInteger(ms) && ms <= MAX_RETENTION_MS) retention[field] = ms;
    else problems.report(locate(tag, `@${tagName} of "${job}" must be an integer of ms from 0 to ${MAX_RETENTION_MS}, got ${JSON.stringify(text)}`));
  }
  problems.throwIfAny();
  return Object.keys(retention).length > 0 ? retention : undefined;
}
