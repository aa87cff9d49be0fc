/**
 * Payloads as JSON text. A payload is stored only if it comes back the same
 * when the handler reads it: `JSON.stringify` alone would store `NaN` as
 * `null`, drop a function, write a `Map` as `{}` and an `undefined` array
 * element as `null`, and the handler would get something else than was
 * enqueued. So the default encoder ({@link jsonPayload}) refuses those, and
 * {@link encodePayload} turns every refusal into an `InvalidArgumentError`
 * naming the path of the value (`payload.items[2].price: NaN …`), before
 * anything is written.
 *
 * Accepted: `null`, booleans, finite numbers, strings (lone surrogates
 * included: `JSON.stringify` escapes them, so they round-trip), arrays, plain
 * objects, and objects with a `toJSON` method (a `Date` is stored as its ISO
 * text, as JSON does). An object member whose value is `undefined` is left
 * out, as JSON does: the handler sees the member missing, which a
 * TypeScript optional member allows.
 */
import { InvalidArgumentError } from "../errors.js";

/** Why a value cannot be stored as JSON, or null when it can (after `toJSON`). */
function refusal(value: unknown, inArray: boolean): string | null {
  switch (typeof value) {
    case "string":
    case "boolean":
      return null;
    case "number":
      return Number.isFinite(value) ? null : `${value} is not a JSON number`;
    case "bigint":
      return "a BigInt is not a JSON number (pass it as a string)";
    case "function":
      return "a function cannot be stored";
    case "symbol":
      return "a symbol cannot be stored";
    case "undefined":
      return inArray ? "undefined in an array would be stored as null" : null;
    default: {
      if (value === null || Array.isArray(value)) return null;
      const proto = Object.getPrototypeOf(value);
      if (proto === Object.prototype || proto === null) return null;
      return `a ${(value as object).constructor?.name ?? "class instance"} would not be stored as it is (convert it to a plain object or array)`;
    }
  }
}

/** An invalid `Date` turns into `null` through its `toJSON`: refused rather than stored as null. */
function invalidDate(original: unknown): string | null {
  return original instanceof Date && Number.isNaN(original.getTime()) ? "an invalid Date (its time is NaN)" : null;
}

class RefusedValue extends Error {}

/**
 * The default encoder: `JSON.stringify` that throws on any value that would
 * not come back as it went in (see the module doc). The checks run inside
 * the one `JSON.stringify` walk, as a replacer; only a refused payload is
 * walked again, to name the path.
 */
export function jsonPayload(payload: unknown): string {
  const text = JSON.stringify(payload, function check(this: Record<string, unknown>, key, value) {
    const why = value === null ? invalidDate(this[key]) : refusal(value, Array.isArray(this));
    if (why !== null) throw new RefusedValue(why);
    return value;
  });
  if (text === undefined) throw new RefusedValue(refusal(payload, false) ?? "undefined is not a JSON value");
  return text;
}

/** The path and reason of the first value `jsonPayload` refuses, found by walking `value` (cycles included). */
function findRefused(value: unknown, path: string, seen: Set<object>): string | null {
  if (invalidDate(value) !== null) return `${path}: ${invalidDate(value)}`;
  let v = value;
  if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") v = (v as { toJSON(): unknown }).toJSON();
  if (v !== null && typeof v === "object") {
    if (seen.has(v)) return `${path}: a cycle (the object contains itself)`;
    const why = refusal(v, false);
    if (why !== null) return `${path}: ${why}`;
    seen.add(v);
    const entries = Array.isArray(v)
      ? v.map((x, i) => [`${path}[${i}]`, x, true] as const)
      : Object.entries(v).map(([k, x]) => [memberPath(path, k), x, false] as const);
    for (const [p, x, inArray] of entries) {
      const inner = x === undefined ? (inArray ? `${p}: ${refusal(x, true)}` : null) : findRefused(x, p, seen);
      if (inner !== null) return inner;
    }
    seen.delete(v);
    return null;
  }
  const why = refusal(v, false);
  return why === null ? null : `${path}: ${why}`;
}

function memberPath(path: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/**
 * A payload as JSON text through the job type's encoder; anything that does
 * not give a string is `InvalidArgumentError` naming the payload (and, for
 * the default encoder, the path of the refused value), before anything is
 * written.
 */
export function encodePayload(encode: (payload: unknown) => string, jobType: string, payload: unknown): string {
  let text: string | undefined;
  try {
    text = encode(payload);
  } catch (cause) {
    const where = findRefused(payload, "payload", new Set()) ?? `payload: ${(cause as Error)?.message ?? String(cause)}`;
    throw new InvalidArgumentError(`payload of "${jobType}" cannot be stored as JSON: ${where}`);
  }
  if (typeof text !== "string")
    throw new InvalidArgumentError(`payload of "${jobType}" cannot be stored as JSON: payload: the encoder returned ${typeof text}`);
  return text;
}
