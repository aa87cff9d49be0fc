/** A value the generated module writes as a literal: JSON data. */
export type LiteralValue = string | number | boolean | null | readonly LiteralValue[] | { readonly [key: string]: LiteralValue | undefined };

/** A key written bare; any other is quoted. */
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * `value` as TypeScript source lines: on one line (`prefix value suffix`)
 * when that fits in `width` columns, else objects and arrays one member per
 * line, each member laid out the same way. Keys are bare where they can be;
 * members whose value is `undefined` are left out. The output depends only
 * on the value, so the generated module stays the same from run to run.
 */
export function literalLines(value: LiteralValue, indent: string, prefix: string, suffix: string, width = 120): string[] {
  const one = `${indent}${prefix}${inline(value)}${suffix}`;
  if (one.length <= width || value === null || typeof value !== "object") return [one];
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    return [`${indent}${prefix}[`, ...value.flatMap((v) => literalLines(v, inner, "", ",", width)), `${indent}]${suffix}`];
  }
  const entries = Object.entries(value).filter((e): e is [string, LiteralValue] => e[1] !== undefined);
  return [`${indent}${prefix}{`, ...entries.flatMap(([k, v]) => literalLines(v, inner, `${key(k)}: `, ",", width)), `${indent}}${suffix}`];
}

function inline(value: LiteralValue): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(inline).join(", ")}]`;
  const entries = Object.entries(value).filter((e): e is [string, LiteralValue] => e[1] !== undefined);
  return entries.length === 0 ? "{}" : `{ ${entries.map(([k, v]) => `${key(k)}: ${inline(v)}`).join(", ")} }`;
}

/** A member name as an object literal key; `__proto__` computed, as a plain or quoted one would set the prototype instead. */
function key(name: string): string {
  if (name === "__proto__") return '["__proto__"]';
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

/**
 * Whether any key of `value` (at any depth) is the name of a member of
 * `Object.prototype` (`constructor`, `toString`): TypeScript gives such a
 * member of an object literal no contextual type from an index signature, so
 * its string literals widen to `string` unless the literal is `as const`.
 */
export function hasPrototypeKey(value: LiteralValue): boolean {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some(hasPrototypeKey);
  return Object.entries(value).some(([k, v]) => (PROTOTYPE_NAMES.has(k) && v !== undefined) || (v !== undefined && hasPrototypeKey(v)));
}

const PROTOTYPE_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));
