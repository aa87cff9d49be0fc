import { ts, type Symbol as MorphSymbol, type Type } from "ts-morph";

/**
 * A payload type as data, for the run-time check of every enqueue and
 * decode: the same type as the runtime's `Shape` (`@later/runtime`, read by
 * its `checkPayload`), written into the generated catalog.
 */
export type Shape =
  | "string"
  | "number"
  | "boolean"
  | "null"
  | "date"
  | "unknown"
  | { kind: "literal"; values: (string | number | boolean)[] }
  | { kind: "array"; element: Shape }
  | { kind: "tuple"; elements: Shape[]; required?: number; rest?: Shape }
  | { kind: "object"; fields: Record<string, Shape>; optional?: string[]; values?: Shape }
  | { kind: "union"; options: Shape[]; discriminant?: string }
  | { kind: "ref"; name: string };

/** A payload's shape and the named shapes of its recursive types. */
export interface PayloadShape {
  shape: Shape;
  /** Empty unless the payload holds a recursive type. */
  shapes: Record<string, Shape>;
}

/**
 * Describes a payload type {@link PayloadChecker} accepted as a
 * {@link Shape}. Each TypeScript construct maps to what it accepts:
 * primitives, literals and enum members (`literal`), `T | null` and other
 * unions (`union`, with the `discriminant` field when every option is an
 * object with a distinct literal there), optional fields and fields that
 * may be `undefined` (`optional`: JSON drops an `undefined` member), arrays
 * and tuples, interfaces, type literals and intersections (`object`, with
 * `values` for an index signature or a record), `Date` (`date`), branded
 * primitives (the primitive), `unknown`/`any` (`unknown`). A type met again
 * inside itself becomes a `ref` to a named shape, so recursive types end.
 */
export class PayloadShapeBuilder {
  private readonly stack: ts.Type[] = [];
  private readonly names = new Map<ts.Type, string>();
  private readonly named: Record<string, Shape> = {};

  private constructor(private readonly isDate: (type: Type) => boolean) {}

  /** `isDate` tells the standard library's `Date` from a type of the same name. */
  static build(type: Type, isDate: (type: Type) => boolean): PayloadShape {
    const builder = new PayloadShapeBuilder(isDate);
    const shape = builder.walk(type);
    return { shape, shapes: builder.named };
  }

  private walk(type: Type): Shape {
    const flags = type.getFlags();
    if (flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown | ts.TypeFlags.Undefined | ts.TypeFlags.Void)) return "unknown";
    if (type.isLiteral() || flags & ts.TypeFlags.BooleanLiteral) return { kind: "literal", values: [literalValue(type)] };
    if (flags & ts.TypeFlags.StringLike) return "string";
    if (flags & ts.TypeFlags.NumberLike) return "number";
    if (flags & ts.TypeFlags.BooleanLike) return "boolean";
    if (flags & ts.TypeFlags.Null) return "null";
    if (type.isIntersection()) {
      const primitive = type.getIntersectionTypes().find((p) => !p.isObject());
      if (primitive) return this.walk(primitive); // a branded primitive: string & { __brand: "Id" }
    }
    if (this.isDate(type)) return "date";
    if (!type.isUnion() && !type.isObject() && !type.isIntersection()) return "unknown";
    const compiler = type.compilerType;
    if (this.stack.includes(compiler)) return { kind: "ref", name: this.nameOf(type) };
    this.stack.push(compiler);
    const shape = type.isUnion() ? this.union(type) : this.structure(type);
    this.stack.pop();
    const name = this.names.get(compiler);
    if (name === undefined) return shape;
    this.named[name] = shape;
    return { kind: "ref", name };
  }

  /** Arrays, tuples and object types (intersections of object types included). */
  private structure(type: Type): Shape {
    if (type.isArray() || type.isReadonlyArray()) {
      const element = type.getArrayElementType() ?? type.getTypeArguments()[0];
      return { kind: "array", element: element ? this.walk(element) : "unknown" };
    }
    if (type.isTuple()) return this.tuple(type);
    const fields: Record<string, Shape> = {};
    const optional: string[] = [];
    for (const property of type.getProperties()) {
      const { shape, mayBeAbsent } = this.property(property);
      fields[property.getName()] = shape;
      if (mayBeAbsent) optional.push(property.getName());
    }
    const index = type.getStringIndexType() ?? type.getNumberIndexType();
    return {
      kind: "object",
      fields,
      ...(optional.length > 0 ? { optional } : {}),
      ...(index ? { values: this.walk(index) } : {}),
    };
  }

  /** A field's shape; it may be absent when optional or when its type holds `undefined` (JSON drops the member). */
  private property(property: MorphSymbol): { shape: Shape; mayBeAbsent: boolean } {
    const declaration = property.getDeclarations()[0];
    const type = declaration ? property.getTypeAtLocation(declaration) : property.getDeclaredType();
    const optional = property.hasFlags(ts.SymbolFlags.Optional);
    if (!type.isUnion()) return { shape: this.walk(type), mayBeAbsent: optional || (type.getFlags() & ts.TypeFlags.Undefined) !== 0 };
    const holdsUndefined = type.getUnionTypes().some((t) => t.getFlags() & ts.TypeFlags.Undefined);
    return { shape: this.walk(type), mayBeAbsent: optional || holdsUndefined };
  }

  private tuple(type: Type): Shape {
    const elements = type.getTupleElements();
    const target = (type.compilerType as ts.TupleTypeReference).target;
    const elementFlags = target?.elementFlags ?? [];
    const shapes: Shape[] = [];
    let rest: Shape | undefined;
    elements.forEach((element, i) => {
      const flag = elementFlags[i] ?? ts.ElementFlags.Required;
      if (flag & ts.ElementFlags.Variable) rest = this.walk(element);
      else shapes.push(this.walk(element));
    });
    const required = target?.minLength ?? shapes.length;
    return {
      kind: "tuple",
      elements: shapes,
      ...(required < shapes.length ? { required } : {}),
      ...(rest === undefined ? {} : { rest }),
    };
  }

  /** A union: its literals as one `literal` option (both booleans as `boolean`), `undefined` left out (see {@link property}). */
  private union(type: Type): Shape {
    const options: Shape[] = [];
    const values: (string | number | boolean)[] = [];
    for (const member of type.getUnionTypes()) {
      const shape = this.walk(member);
      if (member.getFlags() & (ts.TypeFlags.Undefined | ts.TypeFlags.Void)) continue;
      if (typeof shape === "object" && shape.kind === "literal") values.push(...shape.values);
      else if (!options.includes(shape)) options.push(shape);
    }
    if (values.includes(true) && values.includes(false)) {
      values.splice(values.indexOf(true), 1);
      values.splice(values.indexOf(false), 1);
      if (!options.includes("boolean")) options.push("boolean");
    }
    if (values.length > 0) options.push({ kind: "literal", values });
    if (options.length === 0) return "unknown";
    if (options.length === 1) return options[0]!;
    if (options.includes("unknown")) return "unknown";
    const discriminant = discriminantOf(options);
    return { kind: "union", options, ...(discriminant === undefined ? {} : { discriminant }) };
  }

  /** The name of a recursive type's shape: its alias or interface name, made unique. */
  private nameOf(type: Type): string {
    const known = this.names.get(type.compilerType);
    if (known !== undefined) return known;
    const symbol = type.getAliasSymbol() ?? type.getSymbol();
    const base = symbol && !symbol.getName().startsWith("__") ? symbol.getName() : "Shape";
    const taken = new Set(this.names.values());
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}${n}`;
    this.names.set(type.compilerType, name);
    return name;
  }
}

function literalValue(type: Type): string | number | boolean {
  if (type.getFlags() & ts.TypeFlags.BooleanLiteral) return type.getText() === "true";
  const value = type.getLiteralValue();
  if (typeof value === "string" || typeof value === "number") return value;
  return String(value);
}

/**
 * A field every option is an object with a literal of its own for: the
 * check then goes straight to the option the value names, and a mismatch is
 * reported inside it rather than against the whole union.
 */
function discriminantOf(options: Shape[]): string | undefined {
  const objects = options.filter((o): o is Extract<Shape, { kind: "object" }> => typeof o === "object" && o.kind === "object");
  if (objects.length !== options.length) return undefined;
  for (const name of Object.keys(objects[0]!.fields)) {
    const seen = new Set<unknown>();
    const distinct = objects.every((o) => {
      const field = o.fields[name];
      if (typeof field !== "object" || field.kind !== "literal" || o.optional?.includes(name)) return false;
      return field.values.every((v) => !seen.has(v) && seen.add(v));
    });
    if (distinct) return name;
  }
  return undefined;
}
