import type { ts, JSDocTag, PropertySignature, Type } from "ts-morph";
import type { Locate } from "./payload-checker.js";
import type { SchemaProblems } from "./schema-errors.js";

/** What a tag naming a payload field accepts: the field's type flags, and their words for the message. */
export interface PayloadFieldKinds {
  flags: ts.TypeFlags;
  /** e.g. "string or number". */
  what: string;
}

/**
 * A tag that names a required field of the job's payload (`@partitionKey
 * FIELD`, `@group FIELD`): the field's name, or undefined with a problem
 * reported at the tag when the payload has no such field or its type is
 * not one of `kinds` (every member of a union must be).
 */
export function readPayloadFieldTag(
  tag: JSDocTag,
  kinds: PayloadFieldKinds,
  declaration: PropertySignature,
  payload: Type,
  job: string,
  locate: Locate,
  problems: SchemaProblems,
): string | undefined {
  const tagName = `@${tag.getTagName()}`;
  const name = (tag.getCommentText() ?? "").trim();
  const field = payload.getProperty(name);
  if (!field) {
    const fields = payload
      .getProperties()
      .map((p) => p.getName())
      .join(", ");
    problems.report(locate(tag, `${tagName} "${name}" is not a field of the payload of "${job}" (its fields: ${fields})`));
    return undefined;
  }
  const fieldType = field.getTypeAtLocation(declaration);
  const parts = fieldType.isUnion() ? fieldType.getUnionTypes() : [fieldType];
  if (!parts.every((t) => (t.getFlags() & kinds.flags) !== 0)) {
    problems.report(locate(tag, `${tagName} "${name}" of "${job}" must be a required ${kinds.what} field, but it is ${fieldType.getText(declaration)}`));
    return undefined;
  }
  return name;
}
