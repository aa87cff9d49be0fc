/**
 * Run-time payload checks, from the payload types of `jobs.schema.ts`.
 *
 * `later-gen` describes each job's payload type as a {@link Shape}: plain
 * data (strings and small objects) written into the generated module's
 * catalog, read here by one interpreter, {@link checkPayload}. Data rather
 * than generated code: it is smaller, reads well in a diff, and one
 * interpreter is one thing to test.
 *
 * Why not a JSON Schema validator such as ajv: no run-time dependency, `Date`
 * fields are checked as `Date` instances (at enqueue) and revived ones (at
 * decode), and messages are written in our words
 * (`items[2].price: expected number, got a string`).
 *
 * What a shape accepts, as TypeScript would:
 * - `"number"` a finite number only: `NaN` and `Infinity` are not JSON;
 * - `"date"` a valid `Date` instance (a stored payload is revived first);
 * - `"unknown"` anything (the encoder still refuses what JSON cannot hold);
 * - objects accept extra properties, as TypeScript's structural typing does
 *   (a value with more fields than its type is a valid value of the type);
 *   a field listed in `optional` may be absent or `undefined`;
 * - `{ kind: "ref", name }` a named shape of the job (`JobSpec.shapes`),
 *   for recursive types.
 */
export type Shape =
  | "string"
  | "number"
  | "boolean"
  | "null"
  | "date"
  | "unknown"
  /** One of these values: string, number and boolean literals, enum members. */
  | { readonly kind: "literal"; readonly values: readonly (string | number | boolean)[] }
  | { readonly kind: "array"; readonly element: Shape }
  /** `elements` by position; the first `required` of them must be present (default all); `rest` for the elements after them. */
  | { readonly kind: "tuple"; readonly elements: readonly Shape[]; readonly required?: number; readonly rest?: Shape }
  /** `fields` by name, those in `optional` may be absent; `values` (an index signature or a record) checks every other own key. */
  | { readonly kind: "object"; readonly fields: { readonly [name: string]: Shape }; readonly optional?: readonly string[]; readonly values?: Shape }
  /** Any one of `options`; with `discriminant`, the option whose literal field of that name matches is the one checked. */
  | { readonly kind: "union"; readonly options: readonly Shape[]; readonly discriminant?: string }
  | { readonly kind: "ref"; readonly name: string };

/** Named shapes a job's shape refers to with `{ kind: "ref" }`: its recursive types. */
export type NamedShapes = { readonly [name: string]: Shape };

/** The first place where a value does not match its shape. */
export interface PayloadMismatch {
  /** `items[2].price`; empty for the payload itself. */
  readonly path: string;
  /** What the shape wants there: `number[]`, `"a" | "b"`, `an object`. */
  readonly expected: string;
  /** What was found: `a string`, `missing`, `NaN` (never the value itself: see {@link checkPayload}). */
  readonly got: string;
  /** `items[2].price: expected number, got a string`. */
  readonly message: string;
}

/** Past this nesting a value is refused (a cyclic value checked against a recursive shape would otherwise never end). */
const MAX_DEPTH = 256;

/**
 * The first mismatch of `value` against `shape` (depth first, fields in
 * declaration order), or null when it matches. Allocates nothing on the way
 * when the value matches. The message names the path and the kind of value
 * found, never the value: payloads may hold personal data.
 */
export function checkPayload(shape: Shape, value: unknown, named: NamedShapes = {}): PayloadMismatch | null {
  const found = check(shape, value, named, 0);
  if (found === null) return null;
  const path = found.path.reverse().reduce<string>((text, segment) => text + pathSegment(segment, text === ""), "");
  const what = found.got === "missing" ? `missing, expected ${found.expected}` : `expected ${found.expected}, got ${found.got}`;
  return { path, expected: found.expected, got: found.got, message: path === "" ? what : `${path}: ${what}` };
}

/** A mismatch being built: its path segments innermost first. */
interface Found {
  path: (string | number)[];
  expected: string;
  got: string;
}

function check(shape: Shape, value: unknown, named: NamedShapes, depth: number): Found | null {
  switch (shape) {
    case "string":
      return typeof value === "string" ? null : miss(shape, value);
    case "number":
      if (typeof value === "number" && !Number.isFinite(value))
        return { path: [], expected: "a finite number (NaN and Infinity are not JSON)", got: String(value) };
      return typeof value === "number" ? null : miss(shape, value);
    case "boolean":
      return typeof value === "boolean" ? null : miss(shape, value);
    case "null":
      return value === null ? null : miss(shape, value);
    case "date":
      return value instanceof Date && !Number.isNaN(value.getTime()) ? null : miss(shape, value);
    case "unknown":
      return null;
  }
  if (depth > MAX_DEPTH) return { path: [], expected: describeShape(shape), got: `a value nested deeper than ${MAX_DEPTH} levels (a cycle?)` };
  switch (shape.kind) {
    case "literal":
      return shape.values.includes(value as string) ? null : miss(shape, value);
    case "array": {
      if (!Array.isArray(value)) return miss(shape, value);
      for (let i = 0; i < value.length; i++) {
        const inner = check(shape.element, value[i], named, depth + 1);
        if (inner !== null) return within(inner, i);
      }
      return null;
    }
    case "tuple": {
      if (!Array.isArray(value)) return miss(shape, value);
      const required = shape.required ?? shape.elements.length;
      if (value.length < required || (shape.rest === undefined && value.length > shape.elements.length)) {
        return { path: [], expected: describeShape(shape), got: `an array of ${value.length}` };
      }
      for (let i = 0; i < value.length; i++) {
        const inner = check(shape.elements[i] ?? shape.rest!, value[i], named, depth + 1);
        if (inner !== null) return within(inner, i);
      }
      return null;
    }
    case "object":
      return checkObject(shape, value, named, depth);
    case "union":
      return checkUnion(shape, value, named, depth);
    case "ref": {
      const target = named[shape.name];
      if (target === undefined) return { path: [], expected: shape.name, got: "a shape that is not declared (regenerate the module)" };
      return check(target, value, named, depth + 1);
    }
  }
}

function checkObject(shape: Extract<Shape, { kind: "object" }>, value: unknown, named: NamedShapes, depth: number): Found | null {
  if (value === null || typeof value !== "object" || Array.isArray(value) || value instanceof Date) return miss(shape, value);
  const record = value as Record<string, unknown>;
  for (const name in shape.fields) {
    const field = Object.hasOwn(record, name) ? record[name] : undefined;
    if (field === undefined) {
      if (shape.optional?.includes(name)) continue;
      return { path: [name], expected: describeShape(shape.fields[name]!), got: "missing" };
    }
    const inner = check(shape.fields[name]!, field, named, depth + 1);
    if (inner !== null) return within(inner, name);
  }
  if (shape.values !== undefined) {
    for (const name of Object.keys(record)) {
      if (Object.hasOwn(shape.fields, name) || record[name] === undefined) continue;
      const inner = check(shape.values, record[name], named, depth + 1);
      if (inner !== null) return within(inner, name);
    }
  }
  return null;
}

/**
 * The first option that matches wins. When none does, the mismatch reported
 * is the one of the option the value was meant to be: the option its
 * discriminant names, else the only option of the value's own kind (an
 * object for `T | null`), else the union as a whole.
 */
function checkUnion(shape: Extract<Shape, { kind: "union" }>, value: unknown, named: NamedShapes, depth: number): Found | null {
  if (shape.discriminant !== undefined && value !== null && typeof value === "object" && !Array.isArray(value)) {
    const tag = (value as Record<string, unknown>)[shape.discriminant];
    for (const option of shape.options) {
      const field = tagShape(option, shape.discriminant, named);
      if (field !== undefined && check(field, tag, named, depth + 1) === null) return check(option, value, named, depth + 1);
    }
    const tags = shape.options.map((option) => tagShape(option, shape.discriminant!, named)).filter((s): s is Shape => s !== undefined);
    return { path: [shape.discriminant], expected: tags.map(describeShape).join(" | "), got: tag === undefined ? "missing" : describeValue(tag) };
  }
  let sameKind: Shape | undefined;
  let count = 0;
  for (const option of shape.options) {
    if (check(option, value, named, depth + 1) === null) return null;
    if (kindOf(option, named) === valueKind(value)) {
      sameKind = option;
      count++;
    }
  }
  if (count === 1) return check(sameKind!, value, named, depth + 1);
  return miss(shape, value);
}

/** The shape of field `name` of an object option (through refs), if it has one. */
function tagShape(option: Shape, name: string, named: NamedShapes): Shape | undefined {
  const target = typeof option === "object" && option.kind === "ref" ? named[option.name] : option;
  return typeof target === "object" && target.kind === "object" ? target.fields[name] : undefined;
}

/** The broad kind a shape accepts, to pick the option a value was meant for. */
function kindOf(shape: Shape, named: NamedShapes): string {
  if (typeof shape === "string") return shape === "date" ? "object" : shape;
  switch (shape.kind) {
    case "literal":
      return typeof shape.values[0];
    case "array":
    case "tuple":
      return "array";
    case "object":
      return "object";
    case "union":
      return "union";
    case "ref":
      return named[shape.name] === undefined ? "ref" : kindOf(named[shape.name]!, named);
  }
}

function valueKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function miss(shape: Shape, value: unknown): Found {
  return { path: [], expected: describeShape(shape), got: describeValue(value) };
}

function within(found: Found, segment: string | number): Found {
  found.path.push(segment);
  return found;
}

/** How a shape is named in messages: `number[]`, `"a" | "b"`, `[string, number]`, `an object`. */
export function describeShape(shape: Shape): string {
  if (typeof shape === "string") return shape === "date" ? "Date" : shape;
  switch (shape.kind) {
    case "literal":
      return shape.values.map((v) => JSON.stringify(v)).join(" | ");
    case "array": {
      const inner = describeShape(shape.element);
      return /[\s|]/.test(inner) ? `(${inner})[]` : `${inner}[]`;
    }
    case "tuple":
      return `[${shape.elements.map((e, i) => describeShape(e) + (i >= (shape.required ?? shape.elements.length) ? "?" : "")).join(", ")}${shape.rest === undefined ? "" : `, ...${describeShape(shape.rest)}[]`}]`;
    case "object":
      return "an object";
    case "union":
      return [...new Set(shape.options.map(describeShape))].join(" | ");
    case "ref":
      return shape.name;
  }
}

/**
 * How a found value is named in messages: `a string`, `a number`, `NaN`,
 * `null`, `an array`. Never the value itself: payloads may hold personal
 * data, and the message lands in logs and in a failed job's `lastError`.
 */
function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "an invalid Date" : "a Date";
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function pathSegment(segment: string | number, first: boolean): string {
  if (typeof segment === "number") return `[${segment}]`;
  if (/^[A-Za-z_$][\w$]*$/.test(segment)) return first ? segment : `.${segment}`;
  return `[${JSON.stringify(segment)}]`;
}
