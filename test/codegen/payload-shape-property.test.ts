// Property: the shape later-gen writes for a payload type accepts every value of that type, and
// refuses a value with one mistake (a field's value of another type, a required field removed, an
// array element changed) naming the path of the mistake. Random payload types come from a small
// model (primitives, literals, Date, arrays, tuples, nested objects with optional fields, records,
// `T | null`), rendered as a schema that later-gen reads, with values drawn from the same model.
//   LATER_PROPERTY_RUNS=200 LATER_PROPERTY_SEED=7 pnpm vitest run test/codegen/payload-shape-property.test.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { readJobsSchema } from "@later/codegen";
import { checkPayload, type Shape } from "@later/runtime";

const RUNS = Number(process.env.LATER_PROPERTY_RUNS ?? 40);
const SEED = Number(process.env.LATER_PROPERTY_SEED ?? 20261205);

type TypeModel =
  | { k: "string" | "number" | "boolean" | "date" }
  | { k: "literal"; values: string[] }
  | { k: "array"; of: TypeModel }
  | { k: "tuple"; of: TypeModel[] }
  | { k: "object"; fields: { name: string; optional: boolean; type: TypeModel }[] }
  | { k: "record"; of: TypeModel }
  | { k: "nullable"; of: TypeModel };

const NAMES = ["id", "price", "items", "at", "note", "tags", "sizes", "owner", "count", "label"];

const fields = (type: fc.Arbitrary<TypeModel>) =>
  fc.uniqueArray(fc.record({ name: fc.constantFrom(...NAMES), optional: fc.boolean(), type }), { minLength: 1, maxLength: 4, selector: (f) => f.name });

const { model } = fc.letrec<{ model: TypeModel; inner: TypeModel }>((tie) => ({
  model: fc.record({ k: fc.constant("object" as const), fields: fields(tie("inner")) }),
  inner: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom<TypeModel>({ k: "string" }, { k: "number" }, { k: "boolean" }, { k: "date" }, { k: "literal", values: ["draft", "sent"] }),
    fc.record({ k: fc.constant("array" as const), of: tie("inner") }),
    fc.record({ k: fc.constant("tuple" as const), of: fc.array(tie("inner"), { minLength: 1, maxLength: 3 }) }),
    fc.record({ k: fc.constant("object" as const), fields: fields(tie("inner")) }),
    fc.record({ k: fc.constant("record" as const), of: tie("inner") }),
    fc.record({ k: fc.constant("nullable" as const), of: tie("inner") }).filter((m) => m.of.k !== "nullable"),
  ),
}));

function render(m: TypeModel): string {
  switch (m.k) {
    case "date":
      return "Date";
    case "literal":
      return m.values.map((v) => JSON.stringify(v)).join(" | ");
    case "array":
      return `(${render(m.of)})[]`;
    case "tuple":
      return `[${m.of.map(render).join(", ")}]`;
    case "object":
      return `{ ${m.fields.map((f) => `${f.name}${f.optional ? "?" : ""}: ${render(f.type)};`).join(" ")} }`;
    case "record":
      return `Record<string, ${render(m.of)}>`;
    case "nullable":
      return `(${render(m.of)}) | null`;
    default:
      return m.k;
  }
}

function valuesOf(m: TypeModel): fc.Arbitrary<unknown> {
  switch (m.k) {
    case "string":
      return fc.string({ maxLength: 5 });
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "date":
      return fc.date({ noInvalidDate: true });
    case "literal":
      return fc.constantFrom(...m.values);
    case "array":
      return fc.array(valuesOf(m.of), { maxLength: 3 });
    case "tuple":
      return fc.tuple(...m.of.map(valuesOf));
    case "object": {
      const shape = Object.fromEntries(m.fields.map((f) => [f.name, valuesOf(f.type)]));
      return fc.record(shape, { requiredKeys: m.fields.filter((f) => !f.optional).map((f) => f.name) });
    }
    case "record":
      return fc.dictionary(fc.stringMatching(/^[a-z]{1,4}$/), valuesOf(m.of), { maxKeys: 3 });
    case "nullable":
      return fc.oneof(fc.constant(null), valuesOf(m.of));
  }
}

/** A value no primitive or literal of the model accepts where `m` is expected. */
function wrongFor(m: TypeModel): unknown {
  return m.k === "string" || m.k === "literal" ? 42 : "not this";
}

/** Every single mistake that can be made in `value` (of model `m`), with the path it is at. */
function mutations(m: TypeModel, value: unknown, path: string): { path: string; mutate: (v: unknown) => unknown }[] {
  const here = (make: () => unknown) => ({ path, mutate: (_v: unknown) => make() });
  const at = (child: string | number) => (typeof child === "number" ? `${path}[${child}]` : path === "" ? child : `${path}.${child}`);
  switch (m.k) {
    case "string":
    case "number":
    case "boolean":
    case "date":
    case "literal":
      return [here(() => wrongFor(m))];
    case "nullable":
      return value === null ? [here(() => wrongFor(m.of.k === "nullable" ? m.of.of : m.of))] : mutations(m.of, value, path);
    case "array":
    case "tuple": {
      const items = value as unknown[];
      const out = [here(() => "not an array")];
      items.forEach((item, i) => {
        const of = m.k === "array" ? m.of : m.of[i]!;
        for (const inner of mutations(of, item, at(i))) out.push({ path: inner.path, mutate: (v) => replaced(v, i, inner.mutate(item)) });
      });
      return out;
    }
    case "object":
    case "record": {
      const record = value as Record<string, unknown>;
      const out = [here(() => "not an object")];
      const members = m.k === "object" ? m.fields.map((f) => [f.name, f.type, f.optional] as const) : Object.keys(record).map((k) => [k, m.of, true] as const);
      for (const [name, type, optional] of members) {
        if (!Object.hasOwn(record, name)) continue;
        if (!optional) out.push({ path: at(name), mutate: (v) => without(v, name) });
        for (const inner of mutations(type, record[name], at(name)))
          out.push({ path: inner.path, mutate: (v) => replaced(v, name, inner.mutate(record[name])) });
      }
      return out;
    }
  }
}

function replaced(value: unknown, key: string | number, next: unknown): unknown {
  if (Array.isArray(value)) return value.map((v, i) => (i === key ? next : v));
  return { ...(value as object), [key]: next };
}

function without(value: unknown, key: string): unknown {
  const { [key]: _gone, ...rest } = value as Record<string, unknown>;
  return rest;
}

describe("payload shapes", () => {
  const dir = mkdtempSync(join(tmpdir(), "later-shape-property-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "jobs.schema.ts");

  /** The shape later-gen writes for payload type `m`. */
  function shapeOf(m: TypeModel): { shape: Shape; shapes: Record<string, Shape> } {
    writeFileSync(file, `export interface Jobs {\n  job: ${render(m)};\n}\n`);
    const job = readJobsSchema(file).jobs[0]!;
    return { shape: job.payload as Shape, shapes: job.shapes as Record<string, Shape> };
  }

  it(`accepts every value of the declared type and refuses each one-mistake value at its path (${RUNS} types, seed ${SEED})`, () => {
    const cases = model.chain((m) => fc.tuple(fc.constant(m), valuesOf(m), fc.nat()));
    fc.assert(
      fc.property(cases, ([m, value, pick]) => {
        const { shape, shapes } = shapeOf(m);
        expect(checkPayload(shape, value, shapes), `${render(m)} accepts ${String(JSON.stringify(value))}`).toBeNull();
        const all = mutations(m, value, "").filter((x) => x.path !== "");
        if (all.length === 0) return;
        const mistake = all[pick % all.length]!;
        const found = checkPayload(shape, mistake.mutate(value), shapes);
        expect(found?.path, `${render(m)} with a mistake at ${mistake.path}: ${found?.message}`).toBe(mistake.path);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it("says what it expected and what it got, in our words", () => {
    const items: Shape = { kind: "array", element: { kind: "object", fields: { price: "number" } } };
    const shape: Shape = { kind: "object", fields: { sizes: { kind: "array", element: "number" }, items } };
    expect(checkPayload(shape, { sizes: "big", items: [] })?.message).toBe("sizes: expected number[], got a string");
    expect(checkPayload(shape, { sizes: [], items: [{ price: 1 }, { price: 2 }, { price: "3" }] })?.message).toBe(
      "items[2].price: expected number, got a string",
    );
    expect(checkPayload(shape, { sizes: [Number.NaN], items: [] })?.message).toBe(
      "sizes[0]: expected a finite number (NaN and Infinity are not JSON), got NaN",
    );
    expect(checkPayload(shape, { items: [] })?.message).toBe("sizes: missing, expected number[]");
    expect(checkPayload(shape, { sizes: [], items: [], extra: "accepted, as TypeScript's structural typing does" })).toBeNull();
  });

  it("ends on a recursive type, and on a cyclic value checked against one", () => {
    const shapes: Record<string, Shape> = { Tree: { kind: "object", fields: { children: { kind: "array", element: { kind: "ref", name: "Tree" } } } } };
    const tree: Shape = { kind: "ref", name: "Tree" };
    expect(checkPayload(tree, { children: [{ children: [] }, { children: [{ children: [] }] }] }, shapes)).toBeNull();
    expect(checkPayload(tree, { children: [{ children: [{ children: "x" }] }] }, shapes)?.path).toBe("children[0].children[0].children");
    const cyclic: { children: unknown[] } = { children: [] };
    cyclic.children.push(cyclic);
    expect(checkPayload(tree, cyclic, shapes)?.got).toMatch(/nested deeper than/);
  });
});
