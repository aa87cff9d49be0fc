import { Node, ts, type Program, type Symbol as MorphSymbol, type Type } from "ts-morph";
import type { SchemaError } from "./schema-error.js";
import { SchemaErrors } from "./schema-errors.js";

/**
 * A path to a `Date` inside a payload: a property name, or `null` for "every
 * element / every value". The same shape as the runtime's `DatePath`.
 */
export type DatePath = (string | null)[];

/** Where to report a problem: a node and the file name to print for it. */
export type Locate = (node: Node, reason: string) => SchemaError;

/**
 * Checks that a payload type survives a JSON round trip and finds its `Date`
 * fields, so the generated decoder can revive them.
 *
 * Accepted: string, number, boolean and their literals, enums, `null`,
 * optional fields, arrays, tuples, records / index signatures, plain object
 * types (interfaces, type literals, intersections), unions of those, `Date`
 * (sent as its ISO string, revived as `Date`), branded primitives
 * (`string & { __brand }`), and `unknown`/`any` as opaque JSON.
 * Rejected, at the offending field: functions and methods, symbols, bigint,
 * class instances, built-ins that JSON flattens (Map, Set, RegExp, typed
 * arrays, Promise, ...), and unions where one path may hold either a `Date`
 * or a string (the decoder could not tell them apart).
 */
export class PayloadChecker {
  private readonly dates = new Map<string, { path: DatePath; at: Node }>();
  private readonly strings = new Set<string>();
  private readonly stack: ts.Type[] = [];
  private readonly cyclic = new Set<ts.Type>();
  /** Every problem found; the walk goes on past each, so one run reports all of a payload's fields. */
  private readonly problems: SchemaError[] = [];

  private constructor(
    private readonly program: Program,
    private readonly locate: Locate,
    private readonly jobName: string,
  ) {}

  /**
   * The payload's `Date` paths; throws {@link SchemaErrors} with every
   * field that keeps the type from being a JSON-safe object type.
   */
  static check(program: Program, locate: Locate, jobName: string, type: Type, at: Node): DatePath[] {
    const checker = new PayloadChecker(program, locate, jobName);
    checker.checkRoot(type, at);
    for (const [key, date] of checker.dates) {
      if (checker.strings.has(key)) {
        checker.fail(date.at, `field ${describe(date.path)} of "${jobName}" may hold a Date or a string, so it cannot be revived; use one of them`);
      }
    }
    if (checker.problems.length > 0) throw SchemaErrors.of(checker.problems);
    return [...checker.dates.values()].map((d) => d.path);
  }

  /** Records a problem at `at`; false, as a walk that found no Date there. */
  private fail(at: Node, reason: string): false {
    this.problems.push(this.locate(at, reason));
    return false;
  }

  private checkRoot(type: Type, at: Node): void {
    const parts = type.isUnion() && !type.isBoolean() ? type.getUnionTypes() : [type];
    for (const part of parts) {
      if (!this.isObjectType(part)) {
        this.fail(at, `payload of "${this.jobName}" must be an object type (an interface or { ... }), not ${text(type, at)}`);
        return;
      }
    }
    this.walk(type, [], at);
  }

  /** An object type that is not an array, tuple, Date or function; an intersection of such types is one too. */
  private isObjectType(type: Type): boolean {
    if (type.isIntersection()) return type.getIntersectionTypes().every((part) => this.isObjectType(part));
    return type.isObject() && !type.isArray() && !type.isReadonlyArray() && !type.isTuple() && !this.isDate(type) && type.getCallSignatures().length === 0;
  }

  /** Returns whether a Date can appear at or below `path`. */
  private walk(type: Type, path: DatePath, at: Node): boolean {
    const flags = type.getFlags();
    const where = () => (path.length === 0 ? `payload of "${this.jobName}"` : `field ${describe(path)} of "${this.jobName}"`);
    if (flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return false;
    if (flags & ts.TypeFlags.StringLike) {
      this.strings.add(key(path));
      return false;
    }
    if (flags & (ts.TypeFlags.NumberLike | ts.TypeFlags.BooleanLike | ts.TypeFlags.Null | ts.TypeFlags.Undefined | ts.TypeFlags.EnumLike)) return false;
    if (flags & ts.TypeFlags.BigIntLike) return this.fail(at, `${where()} is a bigint, which JSON cannot hold; use a string or a number`);
    if (flags & ts.TypeFlags.ESSymbolLike) return this.fail(at, `${where()} is a symbol, which JSON cannot hold`);
    if (flags & (ts.TypeFlags.Void | ts.TypeFlags.Never)) return this.fail(at, `${where()} has type ${type.getText()}, which holds no JSON value`);
    if (type.isTypeParameter()) return this.fail(at, `${where()} is a type parameter; payloads must be concrete types`);
    if (type.isUnion()) return this.walkAll(type.getUnionTypes(), path, at);
    if (type.isIntersection()) {
      const parts = type.getIntersectionTypes();
      const primitive = parts.find((p) => !p.isObject());
      if (primitive) return this.walk(primitive, path, at); // a branded primitive: string & { __brand: "Id" }
      return this.walkObject(type, path, at, where); // A & B: the properties of both
    }
    if (this.isDate(type)) {
      this.dates.set(key(path), { path: [...path], at });
      return true;
    }
    if (type.isArray() || type.isReadonlyArray()) {
      const element = type.getArrayElementType() ?? type.getTypeArguments()[0];
      return element ? this.walk(element, [...path, null], at) : false;
    }
    if (type.isTuple()) {
      let any = false;
      type.getTupleElements().forEach((element, i) => {
        any = this.walk(element, [...path, String(i)], at) || any;
      });
      return any;
    }
    if (!type.isObject()) return this.fail(at, `${where()} has type ${type.getText()}, which JSON cannot hold`);
    return this.walkObject(type, path, at, where);
  }

  private walkAll(types: Type[], path: DatePath, at: Node): boolean {
    let any = false;
    for (const t of types) any = this.walk(t, path, at) || any;
    return any;
  }

  private walkObject(type: Type, path: DatePath, at: Node, where: () => string): boolean {
    if (type.getCallSignatures().length > 0 || type.getConstructSignatures().length > 0) {
      return this.fail(at, `${where()} is a function; payloads hold data only`);
    }
    const symbol = type.getSymbol();
    const declarations = symbol?.getDeclarations() ?? [];
    if (declarations.some((d) => Node.isClassDeclaration(d))) {
      return this.fail(at, `${where()} is an instance of class ${symbol!.getName()}, which JSON flattens; use a plain object type`);
    }
    if (declarations.length > 0 && declarations.every((d) => this.isLibrary(d)) && declarations.some((d) => Node.isInterfaceDeclaration(d))) {
      return this.fail(at, `${where()} has type ${type.getText()}, which does not survive JSON; use plain objects, arrays and primitives`);
    }
    const compiler = type.compilerType;
    if (this.stack.includes(compiler)) {
      this.cyclic.add(compiler);
      return false;
    }
    this.stack.push(compiler);
    let any = false;
    for (const property of type.getProperties()) any = this.walkProperty(property, path, at) || any;
    const index = type.getStringIndexType() ?? type.getNumberIndexType();
    if (index) any = this.walk(index, [...path, null], at) || any;
    this.stack.pop();
    if (any && this.cyclic.has(compiler)) {
      return this.fail(at, `${where()} is a recursive type holding a Date; Dates inside recursive types cannot be revived, store an ISO string instead`);
    }
    return any;
  }

  private walkProperty(property: MorphSymbol, path: DatePath, at: Node): boolean {
    const declaration = property.getDeclarations()[0];
    const here = declaration && !this.isLibrary(declaration) ? declaration : at;
    const fieldPath = [...path, property.getName()];
    if (declaration && (Node.isMethodSignature(declaration) || Node.isMethodDeclaration(declaration))) {
      return this.fail(here, `field ${describe(fieldPath)} of "${this.jobName}" is a method; payloads hold data only`);
    }
    return this.walk(property.getTypeAtLocation(here), fieldPath, here);
  }

  private isDate(type: Type): boolean {
    return isLibraryDate(this.program, type);
  }

  /** TypeScript's own lib files (not packages: a payload may use interfaces from the application's packages). */
  private isLibrary(node: Node): boolean {
    return this.program.compilerObject.isSourceFileDefaultLibrary(node.getSourceFile().compilerNode);
  }
}

function key(path: DatePath): string {
  return JSON.stringify(path);
}

function describe(path: DatePath): string {
  return path.length === 0 ? "the payload" : path.map((s, i) => (s === null ? "[*]" : i === 0 ? s : `.${s}`)).join("");
}

function text(type: Type, at: Node): string {
  return type.getText(at, ts.TypeFormatFlags.NoTruncation);
}

/** Whether `type` is the standard library's `Date` (not an application type of the same name). */
export function isLibraryDate(program: Program, type: Type): boolean {
  const symbol = type.getSymbol();
  return (
    symbol?.getName() === "Date" && symbol.getDeclarations().every((d) => program.compilerObject.isSourceFileDefaultLibrary(d.getSourceFile().compilerNode))
  );
}
