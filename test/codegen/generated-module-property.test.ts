// Property: every schema later-gen accepts gives a module that compiles under strict settings
// (the schema, the module, and a file checking the module's types against the schema's), and every
// schema it refuses is refused with a SchemaError, never another exception. Random schemas come from
// schema-arbitrary.ts. The run is in-process: one reused reader project, one reused compiler host.
//   LATER_PROPERTY_RUNS=500 LATER_PROPERTY_SEED=7 pnpm vitest run test/codegen/generated-module-property.test.ts
// (LATER_PROPERTY_VERBOSE=1 prints every refusal; LATER_PROPERTY_SHRINK=0 reports the first failure unshrunk.)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { ModuleNames, readJobsSchema, SchemaError, writeJobsModule, type JobsSchema } from "@later/codegen";
import { ROOT } from "./codegen-cli.js";
import { ModuleTypeChecker } from "./module-type-checker.js";
import { renderSchema, schemaArbitrary } from "./schema-arbitrary.js";

const RUNS = Number(process.env.LATER_PROPERTY_RUNS ?? 40);
const SEED = Number(process.env.LATER_PROPERTY_SEED ?? 20261203);
const VERBOSE = process.env.LATER_PROPERTY_VERBOSE === "1"; // prints each refusal and the counts

// The files the compiler sees; they exist only in memory, inside the repository so @later/runtime resolves.
const CASE_DIR = join(ROOT, "test/codegen/property-case");
const SCHEMA = join(CASE_DIR, "jobs.schema.ts");
const MODULE = join(CASE_DIR, "jobs.generated.ts");
const USAGE = join(CASE_DIR, "usage.ts");

/**
 * A file that compiles only if the generated module types each job as the schema does: its
 * handle (the member name in camelCase) is `JobHandle<I["job"], Trx>` (or `TopicJobHandle`), its
 * handler's payload is `I["job"]`,
 * the context carries the app type `C` and the handles, and the transaction type `Trx` given to
 * the module's types reaches every handle (`TransactionHandle` when not given).
 */
function usageFile(schema: JobsSchema): string {
  const names = new ModuleNames(schema.interfaceName);
  const I = schema.interfaceName;
  const jobChecks = schema.jobs.flatMap((job) => {
    const payload = `${I}[${JSON.stringify(job.name)}]`;
    const key = JSON.stringify(ModuleNames.handle(job.name));
    const handle = job.topic ? "TopicJobHandle" : "JobHandle";
    return [
      `Same<${names.handles}[${key}], ${handle}<${payload}>>`,
      `Same<${names.handles}<Tx>[${key}], ${handle}<${payload}, Tx>>`,
      `Same<Parameters<Parameters<${names.builder}<App>[${JSON.stringify(ModuleNames.handlerMethod(job.name))}]>[0]>[1], ${payload}>`,
    ];
  });
  const checks = [
    `Same<${names.context}<App>["app"], App>`,
    `Same<${names.context}<App>["jobs"], ${names.handles}>`,
    `Same<${names.context}<App, Tx>["jobs"], ${names.handles}<Tx>>`,
    ...schema.jobs
      .slice(0, 1)
      .map(
        (job) =>
          `Same<Parameters<${names.handles}<Tx>[${JSON.stringify(ModuleNames.handle(job.name))}][${job.topic ? '"enqueueToPartitionIn"' : '"enqueueIn"'}]>[0], Tx>`,
      ),
    `Same<Awaited<ReturnType<typeof ${names.open}<Tx>>>, ${names.publisher}<Tx>>`,
    ...jobChecks,
  ];
  return [
    `import type { JobHandle, TopicJobHandle } from "@later/runtime";`,
    `import type { ${I} } from "./jobs.schema.js";`,
    `import type { ${names.builder}, ${names.context}, ${names.handles}, ${names.publisher}, ${names.open} } from "./jobs.generated.js";`,
    `type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;`,
    `interface App { readonly app: "the application" }`,
    `interface Tx { readonly tx: "a transaction" }`,
    `export type Handles = [JobHandle<App>, TopicJobHandle<App>];`,
    `export const checks: [`,
    ...checks.map((c) => `  ${c},`),
    `] = [${checks.map(() => "true").join(", ")}];`,
    ``,
  ].join("\n");
}

describe("every schema later-gen accepts compiles", () => {
  const dir = mkdtempSync(join(tmpdir(), "later-gen-property-"));
  const checker = new ModuleTypeChecker();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`holds for ${RUNS} random schemas (seed ${SEED})`, () => {
    const seen = { accepted: 0, refused: 0, topics: 0 };
    const file = join(dir, "jobs.schema.ts");
    fc.assert(
      fc.property(schemaArbitrary, (model) => {
        const text = renderSchema(model);
        writeFileSync(file, text);
        let schema: JobsSchema;
        try {
          schema = readJobsSchema(file, model.interfaces[0]!.name);
        } catch (error) {
          if (!(error instanceof SchemaError)) throw error;
          seen.refused++;
          if (VERBOSE) console.log(`refused: ${error.reason}`);
          return;
        }
        seen.accepted++;
        if (schema.jobs.some((j) => j.topic)) seen.topics++;
        const module = writeJobsModule({ ...schema, file: SCHEMA }, { outFile: MODULE });
        const problems = checker
          .check(
            new Map([
              [SCHEMA, text],
              [MODULE, module],
              [USAGE, usageFile(schema)],
            ]),
          )
          .filter((p) => !p.startsWith(SCHEMA.slice(ROOT.length))); // the schema compiled for later-gen; stricter flags are the user's business
        if (problems.length > 0) {
          throw new Error(
            `later-gen accepted this schema (interface ${schema.interfaceName}), but the result does not compile:\n  ${problems.join("\n  ")}\n` +
              `--- jobs.schema.ts ---\n${text}\n--- jobs.generated.ts ---\n${module}\n--- usage.ts ---\n${usageFile(schema)}`,
          );
        }
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: process.env.LATER_PROPERTY_SHRINK === "0" },
    );
    if (VERBOSE) console.log(`seed ${SEED}: ${JSON.stringify(seen)}`);
    // The generator of schemas is useful only if it exercises both answers.
    expect(seen.accepted, JSON.stringify(seen)).toBeGreaterThanOrEqual(Math.ceil(RUNS / 4));
    expect(seen.refused, JSON.stringify(seen)).toBeGreaterThanOrEqual(Math.ceil(RUNS / 10));
    expect(seen.topics, JSON.stringify(seen)).toBeGreaterThan(0);
  });

  it("knows every member the generated builder inherits from TypedServerBuilder", () => {
    const path = join(ROOT, "packages/runtime/dist/typed/typed-server-builder.d.ts");
    const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.ES2022);
    const members = source.statements
      .filter(ts.isClassDeclaration)
      .find((c) => c.name?.text === "TypedServerBuilder")!
      .members.map((m) => (ts.isConstructorDeclaration(m) ? "constructor" : m.name && ts.isIdentifier(m.name) ? m.name.text : "?"));
    expect(members.length).toBeGreaterThan(2);
    expect([...ModuleNames.builderMembers].sort()).toEqual([...new Set(members)].sort());
  });
});
