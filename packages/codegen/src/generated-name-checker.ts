import type { Node } from "ts-morph";
import { FORBIDDEN_JOB_NAMES, ModuleNames } from "./module-names.js";
import type { Locate } from "./payload-checker.js";

/** The names a schema brings into the generated module, each with the node to report it at. */
export interface SchemaNames {
  /** The jobs interface and its name node. */
  interfaceName: string;
  interfaceNode: Node;
  /** Each job's member name and its name node, in declaration order. */
  jobs: { name: string; node: Node }[];
  /** Each type the module imports from the schema, and where that type is declared. */
  typeImports: Map<string, Node>;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * Refuses a schema whose generated module would not compile, or would
 * compile to something else than the schema says, because of its names.
 * The check is on the final generated names ({@link ModuleNames}), whatever
 * the transform from member name to method name is:
 *
 * - the interface name must not be one of the names the module imports or
 *   uses (`JobHandle`, `Promise`, `C`, ...), nor make a derived name that is
 *   (`TypedServer` → `TypedServerBuilder`);
 * - a type imported from the schema must not be one of the module's own names
 *   (`JobsBuilder`, `JOBS`), its imports (`JobHandle`), the builder's type
 *   parameter `C` (the handler would silently get the app context's type as
 *   its payload) or a global it uses (`Promise`);
 * - every job's handle and `with<Job>Handler` method must be an identifier,
 *   distinct from every other job's (`foo` and `Foo` both give
 *   `withFooHandler`) and from the members the builder inherits; `__proto__`
 *   is refused outright.
 *
 * Throws the first problem as a {@link SchemaError} located at the name to change.
 */
export class GeneratedNameChecker {
  private constructor(
    private readonly names: ModuleNames,
    private readonly locate: Locate,
  ) {}

  static check(schema: SchemaNames, locate: Locate): void {
    const checker = new GeneratedNameChecker(new ModuleNames(schema.interfaceName), locate);
    checker.checkInterface(schema.interfaceName, schema.interfaceNode);
    for (const [name, node] of schema.typeImports) checker.checkTypeImport(name, node);
    checker.checkJobs(schema.jobs);
  }

  private checkInterface(name: string, node: Node): void {
    const taken = this.names.external();
    const what = taken.get(name);
    if (what !== undefined) throw this.locate(node, `interface ${name} has the name of ${what}; rename it`);
    for (const derived of this.names.declared()) {
      const clash = taken.get(derived);
      if (clash !== undefined) throw this.locate(node, `interface ${name} would generate ${derived}, which is ${clash}; rename the interface`);
    }
  }

  private checkTypeImport(name: string, node: Node): void {
    if (name === this.names.interfaceName) return;
    const what = this.names.taken().get(name);
    if (what !== undefined) {
      throw this.locate(node, `type ${name} is imported by the generated module, where ${name} is ${what}; rename the type`);
    }
  }

  private checkJobs(jobs: SchemaNames["jobs"]): void {
    const handles = new Map<string, string>();
    const methods = new Map<string, string>();
    for (const job of jobs) {
      if ((FORBIDDEN_JOB_NAMES as readonly string[]).includes(job.name)) {
        throw this.locate(
          job.node,
          `job name "${job.name}" cannot be used: as a key of the job catalog it sets the object's prototype instead of adding the job`,
        );
      }
      if (!IDENTIFIER.test(job.name)) {
        throw this.locate(
          job.node,
          `job name ${JSON.stringify(job.name)} must be an identifier (letters, digits, "_" or "$"; it names methods such as ${ModuleNames.handlerMethod("sendEmail")})`,
        );
      }
      const handle = ModuleNames.handle(job.name);
      const method = ModuleNames.handlerMethod(job.name);
      for (const [kind, generated, seen] of [
        ["handle", handle, handles],
        ["method", method, methods],
      ] as const) {
        if (!IDENTIFIER.test(generated))
          throw this.locate(job.node, `job "${job.name}" would generate the ${kind} ${JSON.stringify(generated)}, which is not an identifier; rename the job`);
        const other = seen.get(generated);
        if (other !== undefined) {
          throw this.locate(job.node, `jobs "${other}" and "${job.name}" would both generate the ${kind} ${generated}; rename one of them`);
        }
        seen.set(generated, job.name);
      }
      if (ModuleNames.builderMembers.includes(method)) {
        throw this.locate(job.node, `job "${job.name}" would generate the builder method ${method}, which the builder already has; rename the job`);
      }
    }
  }
}
