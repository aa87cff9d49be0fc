import { Node, type SourceFile } from "ts-morph";
import type { Locate } from "./payload-checker.js";
import type { SchemaProblems } from "./schema-errors.js";
import { exportedAs } from "./type-imports.js";

/**
 * The interface `later-gen` reads job result types from (docs/semantics.md
 * X6): `Results` beside `Jobs`, `<Name>Results` beside another jobs
 * interface (`BillingResults` beside `Billing`).
 */
export function resultsInterfaceName(interfaceName: string): string {
  return interfaceName === "Jobs" ? "Results" : `${interfaceName}Results`;
}

/**
 * Reads `export interface Results { sendEmail: { messageId: string } }` when
 * the schema declares it (optional; none: no job has a result type) and
 * returns each job's result type as the generated module writes it
 * (`Results["sendEmail"]`), by job name. Every member must name a job of the
 * jobs interface (`jobNames`), as a required property; each problem is
 * reported to `problems` at its `file:line:col`. The types are not
 * checked for JSON: results are encoded with `JSON.stringify` and not
 * validated at run time (a value JSON cannot hold fails its attempt).
 * Adds the interface to `typeImports`.
 */
export function readResults(
  source: SourceFile,
  interfaceName: string,
  jobNames: ReadonlySet<string>,
  locate: Locate,
  typeImports: Map<string, Node>,
  problems: SchemaProblems,
): Map<string, string> {
  const types = new Map<string, string>();
  const name = resultsInterfaceName(interfaceName);
  const declarations = source.getInterfaces().filter((i) => i.getName() === name);
  const first = declarations[0];
  if (!first) return types;
  if (!exportedAs(source, first.getSymbol(), name)) {
    problems.report(locate(first.getNameNode(), `interface ${name} must be exported, under its own name`));
    return types;
  }
  if (first.getTypeParameters().length > 0) {
    problems.report(locate(first.getNameNode(), `interface ${name} must not be generic`));
    return types;
  }
  for (const declaration of declarations) {
    const signature = declaration.getIndexSignatures()[0] ?? declaration.getCallSignatures()[0] ?? declaration.getConstructSignatures()[0];
    if (signature) problems.report(locate(signature, `interface ${name} declares result types by job name only, e.g. \`sendEmail: { messageId: string }\``));
  }
  for (const property of first.getType().getProperties()) {
    const member = property.getName();
    const declaration = property.getDeclarations()[0];
    const at = declaration && Node.isPropertySignature(declaration) ? declaration.getNameNode() : (declaration ?? first.getNameNode());
    if (!jobNames.has(member)) {
      problems.report(
        locate(
          at,
          `${name} member "${member}" is not a job: interface ${interfaceName} declares no "${member}" (a Results entry types that job's handler result)`,
        ),
      );
      continue;
    }
    if (!declaration || !Node.isPropertySignature(declaration)) {
      problems.report(locate(at, `${name} member "${member}" must be a property \`${member}: ResultType\`, not a method`));
      continue;
    }
    if (declaration.hasQuestionToken()) {
      problems.report(locate(at, `${name} member "${member}" must not be optional: leave the job out of ${name} for an untyped result`));
      continue;
    }
    types.set(member, `${name}[${JSON.stringify(member)}]`);
  }
  if (types.size > 0) typeImports.set(name, first.getNameNode());
  return types;
}
