/**
 * Random `jobs.schema.ts` files built from the shapes later-gen supports, for the property test of
 * the generator: payload interfaces (exported or not, one generic) with primitive, literal-union,
 * `Date`, branded, optional, readonly, array, tuple, record, nested-object and cross-referencing
 * fields; one to three jobs interfaces (one may extend another) whose members are named payloads,
 * inline object types, generic instances, `Partial<...>`, unions or intersections, some with
 * `@topic` and `@partitionKey` (sometimes `@partitions`). Names are mostly plain but include hostile-but-plausible ones
 * (`constructor`, `then`, `__proto__`, `"send-email"`, `foo`/`Foo`, `C`, `Promise`, `JobHandle`,
 * `TypedServer`, ...), and a few shapes later-gen must refuse (bigint, functions, `Date | string`,
 * optional jobs), so both answers are exercised.
 */
import fc from "fast-check";

/** A field of an object type; `type` may hold `@REF<n>` placeholders for payload names. */
export interface FieldModel {
  name: string;
  optional: boolean;
  readonly: boolean;
  type: string;
}

/** A job member's payload. */
export type PayloadModel = { kind: "ref"; ref: number } | { kind: "inline"; fields: FieldModel[] } | { kind: "other"; text: string };

export interface JobModel {
  name: string;
  readonly: boolean;
  optional: boolean;
  payload: PayloadModel;
  /** `@topic name` and `@partitionKey` = the payload's field at `keyPick` (modulo its field count). */
  topic: { name: string; keyPick: number } | null;
}

export interface SchemaModel {
  /** The first one is the interface later-gen is asked for. */
  interfaces: { name: string; exported: boolean; extendsNext: boolean; jobs: JobModel[] }[];
  /** `id` puts a required `id: string` first (unless a field is named `id` already). */
  payloads: { name: string; exported: boolean; id: boolean; fields: FieldModel[] }[];
}

const weighted = <T>(plain: T[], hostile: T[], hostileWeight = 1, plainWeight = 5) =>
  fc.oneof({ arbitrary: fc.constantFrom(...plain), weight: plainWeight }, { arbitrary: fc.constantFrom(...hostile), weight: hostileWeight });
const mostly = <T>(usual: T, rare: T, odds: number) => fc.oneof({ arbitrary: fc.constant(usual), weight: odds }, { arbitrary: fc.constant(rare), weight: 1 });

const FIELD_NAME = weighted(
  ["id", "address", "body", "customerId", "count", "at", "createdAt", "tags", "note", "amount"],
  ["constructor", "__proto__", "then", "toString", "class", "$x", "_", '"with-dash"', '"0"', "valueOf"],
);
const JOB_NAME = weighted(
  ["sendEmail", "createAccount", "processOrder", "ping", "refund", "chargeCard", "sync", "report", "a", "b1", "send_email"],
  [
    "foo",
    "Foo",
    "SendEmail",
    "constructor",
    "then",
    "__proto__",
    "toString",
    "hasOwnProperty",
    "class",
    "default",
    "await",
    "handler",
    "build",
    "jobs",
    "catalog",
    "$",
    "_",
    "$job",
    '"send-email"',
    '"quoted"',
    '"0"',
    "C",
    "Promise",
    "JOBS",
    "prototype",
    "name",
  ],
  2,
);
const INTERFACE_NAME = weighted(
  ["Jobs", "Billing", "Work", "Shop"],
  ["TypedJob", "TypedServer", "C", "Promise", "JobHandle", "JOBS", "Job", "Typed", "JobsHandles", "Date", "Context"],
);
const PAYLOAD_NAME = weighted(
  ["SendEmail", "Order", "Invoice", "Payload", "Account", "Item", "Meeting", "Entry"],
  [
    "C",
    "P",
    "T",
    "Promise",
    "JOBS",
    "JobHandle",
    "JobsBuilder",
    "JobsHandles",
    "BillingServer",
    "TypedJobServer",
    "Date",
    "Jobs",
    "JobHandler",
    "HandlerOptions",
    "Context",
    "Billing",
  ],
);
const TOPIC = weighted(["orders", "ledger", "a.b-c_d"], ["bad name", ""], 1, 20);

const PRIMITIVE = fc.oneof(
  { arbitrary: fc.constantFrom("string", "number", "boolean", "Date", "Date | null", '"draft" | "sent"', "1 | 2 | 3", "null"), weight: 12 },
  { arbitrary: fc.constantFrom('string & { readonly __brand: "Id" }', "unknown", "Date[]", "Wrap<number>", "Wrap<Date>"), weight: 3 },
  { arbitrary: fc.constantFrom("@REF0", "@REF1", "Partial<@REF0>"), weight: 1 },
);
const REFUSED_FIELD = fc.constantFrom("bigint", "() => void", "Date | string", "Map<string, number>", "symbol");

/** A field type, nested up to `depth` levels of arrays, tuples, records and object literals. */
function fieldType(depth: number): fc.Arbitrary<string> {
  if (depth === 0) return PRIMITIVE;
  const inner = fieldType(depth - 1);
  return fc.oneof(
    { arbitrary: PRIMITIVE, weight: 60 },
    { arbitrary: REFUSED_FIELD, weight: 1 },
    { arbitrary: inner.map((t) => `(${t})[]`), weight: 10 },
    { arbitrary: inner.map((t) => `readonly (${t})[]`), weight: 5 },
    { arbitrary: fc.tuple(inner, inner).map(([a, b]) => `[${a}, ${b}]`), weight: 5 },
    { arbitrary: inner.map((t) => `Record<string, ${t}>`), weight: 5 },
    { arbitrary: fields(depth - 1).map(objectLiteral), weight: 20 },
  );
}

function fields(depth: number, minLength = 0): fc.Arbitrary<FieldModel[]> {
  const field = fc.record({
    name: FIELD_NAME,
    optional: fc.boolean(),
    readonly: fc.boolean(),
    type: depth < 0 ? PRIMITIVE : fieldType(depth),
  });
  return fc.uniqueArray(field, { minLength, maxLength: 4, selector: (f) => f.name.replaceAll('"', "") });
}

const PAYLOAD: fc.Arbitrary<PayloadModel> = fc.oneof(
  { arbitrary: fc.nat(7).map((ref) => ({ kind: "ref" as const, ref })), weight: 10 },
  { arbitrary: fields(1, 1).map((f) => ({ kind: "inline" as const, fields: f })), weight: 8 },
  {
    arbitrary: fc
      .constantFrom("Wrap<string>", "Wrap<Date>", "Partial<@REF0>", "@REF0 | @REF1", "@REF0 & { extra: string }", "Readonly<@REF1>")
      .map((text) => ({ kind: "other" as const, text })),
    weight: 4,
  },
  { arbitrary: fc.constantFrom("string", "@REF0[]", "Date").map((text) => ({ kind: "other" as const, text })), weight: 1 },
);

const JOB: fc.Arbitrary<JobModel> = fc.record({
  name: JOB_NAME,
  readonly: fc.boolean(),
  optional: mostly(false, true, 200),
  payload: PAYLOAD,
  topic: fc.option(fc.record({ name: TOPIC, keyPick: fc.nat(5) }), { freq: 2 }),
});

/** A whole schema. */
export const schemaArbitrary: fc.Arbitrary<SchemaModel> = fc.record({
  interfaces: fc.uniqueArray(
    fc.record({
      name: INTERFACE_NAME,
      exported: mostly(true, false, 30),
      extendsNext: mostly(false, true, 10),
      jobs: fc.uniqueArray(JOB, { minLength: 1, maxLength: 4, selector: (j) => j.name.replaceAll('"', "") }),
    }),
    { minLength: 1, maxLength: 3, selector: (i) => i.name },
  ),
  payloads: fc.uniqueArray(fc.record({ name: PAYLOAD_NAME, exported: mostly(true, false, 5), id: mostly(true, false, 3), fields: fields(2, 1) }), {
    minLength: 1,
    maxLength: 4,
    selector: (p) => p.name,
  }),
});

const KEY_TYPES = ["string", "number", '"draft" | "sent"', "1 | 2 | 3", 'string & { readonly __brand: "Id" }'];

const isKey = (f: FieldModel) => !f.optional && KEY_TYPES.includes(f.type);

/** The schema file's text. */
export function renderSchema(model: SchemaModel): string {
  const taken = new Set(model.interfaces.map((i) => i.name));
  const payloads = model.payloads
    .filter((p) => !taken.has(p.name))
    .map((p) => ({
      ...p,
      fields: p.id && !p.fields.some((f) => f.name === "id") ? [{ name: "id", optional: false, readonly: false, type: "string" }, ...p.fields] : p.fields,
    }));
  const ref = (n: number) => (payloads.length === 0 ? "{ none: null }" : payloads[n % payloads.length]!.name);
  const resolve = (text: string) => text.replace(/@REF(\d+)/g, (_, n: string) => ref(Number(n)));
  const body = (list: FieldModel[]) => list.map((f) => `  ${f.readonly ? "readonly " : ""}${f.name}${f.optional ? "?" : ""}: ${resolve(f.type)};`);
  const lines = ["export interface Wrap<T> {", "  id: string;", "  value: T;", "}", ""];
  for (const p of payloads) lines.push(`${p.exported ? "export " : ""}interface ${p.name} {`, ...body(p.fields), "}", "");
  model.interfaces.forEach((i, n) => {
    const base = i.extendsNext ? model.interfaces[n + 1] : undefined;
    lines.push(`${i.exported ? "export " : ""}interface ${i.name}${base ? ` extends ${base.name}` : ""} {`);
    for (const job of i.jobs) {
      const fieldsOf =
        job.payload.kind === "inline"
          ? [...job.payload.fields]
          : job.payload.kind === "ref"
            ? (payloads[job.payload.ref % payloads.length]?.fields ?? [])
            : knownFields(job.payload.text);
      if (job.topic && job.payload.kind === "inline" && job.topic.keyPick < 4 && !fieldsOf.some(isKey)) {
        fieldsOf.push({ name: "partition", optional: false, readonly: job.topic.keyPick % 2 === 0, type: "string" });
      }
      if (job.topic) {
        // Mostly a field that can be a key (a required string or number), else any field.
        const keys = fieldsOf.filter(isKey);
        const pool = job.topic.keyPick < 4 && keys.length > 0 ? keys : fieldsOf;
        const key = pool.length > 0 ? pool[job.topic.keyPick % pool.length]!.name.replaceAll('"', "") : "missing";
        // Sometimes the partition count too: two jobs of one topic may then disagree (refused).
        const partitions = [undefined, 4, undefined, 8, undefined, "0"][job.topic.keyPick % 6];
        lines.push(`  /** @topic ${job.topic.name}`, ...(partitions === undefined ? [] : [`   *  @partitions ${partitions}`]), `   *  @partitionKey ${key} */`);
      }
      const type = job.payload.kind === "ref" ? ref(job.payload.ref) : job.payload.kind === "inline" ? objectLiteral(fieldsOf) : job.payload.text;
      lines.push(`  ${job.readonly ? "readonly " : ""}${job.name}${job.optional ? "?" : ""}: ${resolve(type)};`);
    }
    lines.push("}", "");
  });
  return lines.join("\n");
}

/** The fields of an "other" payload a partition key may name. */
function knownFields(text: string): FieldModel[] {
  const name = text.startsWith("Wrap<") ? "id" : text.includes("extra") ? "extra" : undefined;
  return name ? [{ name, optional: false, readonly: false, type: "string" }] : [];
}

function objectLiteral(list: FieldModel[]): string {
  return `{ ${list.map((f) => `${f.readonly ? "readonly " : ""}${f.name}${f.optional ? "?" : ""}: ${f.type}; `).join("")}}`;
}
