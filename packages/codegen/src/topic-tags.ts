import { ts, type JSDocTag, type PropertySignature, type Type } from "ts-morph";
import type { Locate } from "./payload-checker.js";
import { readPayloadFieldTag } from "./payload-field-tag.js";
import type { SchemaProblems } from "./schema-errors.js";

/** The runtime's `MAX_PARTITIONS`: the most partitions a topic may have. */
export const MAX_PARTITIONS = 4096;

/** `@partitions N`: an integer from 1 to {@link MAX_PARTITIONS}. */
export function readPartitions(tag: JSDocTag, job: string, locate: Locate, problems: SchemaProblems): number | undefined {
  const text = (tag.getCommentText() ?? "").trim();
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (Number.isInteger(n) && n >= 1 && n <= MAX_PARTITIONS) return n;
  problems.report(locate(tag, `@partitions of "${job}" must be an integer from 1 to ${MAX_PARTITIONS}, got ${JSON.stringify(text)}`));
  return undefined;
}

/** `@partitionKey FIELD`: a required string or number field of the payload. */
export function readPartitionKey(
  keyTag: JSDocTag,
  declaration: PropertySignature,
  payload: Type,
  job: string,
  locate: Locate,
  problems: SchemaProblems,
): string | undefined {
  const kinds = { flags: ts.TypeFlags.StringLike | ts.TypeFlags.NumberLike, what: "string or number" };
  return readPayloadFieldTag(keyTag, kinds, declaration, payload, job, locate, problems);
}
