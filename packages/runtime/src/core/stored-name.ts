/**
 * Names that later stores and looks up by value — namespaces, topic names,
 * recurring schedule ids, job types — must come back exactly as given, and
 * must fit the indexes they are keys of. A JavaScript string can hold what
 * neither database can store as text: a lone UTF-16 surrogate (the drivers
 * encode it as U+FFFD, so the name would not match itself when read back),
 * and NUL (PostgreSQL text cannot hold it). And a key of thousands of
 * characters overflows a PostgreSQL btree entry (about 2,700 bytes). So a
 * name is 1 to {@link MAX_NAME_LENGTH} characters of well-formed Unicode
 * without NUL; anything else — quotes, semicolons, SQL keywords, emoji — is
 * fine: names only ever reach SQL as bound parameters.
 */
import { describeValue } from "../errors.js";

/** The longest name, in UTF-16 code units: at most 800 bytes of UTF-8, well inside a btree entry with the rest of its key. */
export const MAX_NAME_LENGTH = 200;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `value` cannot be a stored name, or null when it can. */
export function nameProblem(value: unknown, max = MAX_NAME_LENGTH): string | null {
  if (typeof value !== "string") return `must be a string, got ${value === null ? "null" : typeof value}`;
  if (value.length === 0) return "must not be empty";
  if (value.length > max) return `must be at most ${max} characters, got ${value.length}`;
  if (LONE_SURROGATE.test(value)) return "must be well-formed Unicode (it holds a lone surrogate, which would not be stored as given)";
  if (value.includes("\0")) return "must not contain NUL characters";
  return null;
}

/** A short, printable form of a rejected value for an error message. */
export function describeName(value: unknown): string {
  if (typeof value !== "string") return describeValue(value);
  const shown = JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  return value.length > 60 ? `${shown} (${value.length} characters)` : shown;
}
