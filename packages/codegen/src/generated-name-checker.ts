import type { Node } from "ts-morph";
import { FORBIDDEN_JOB_NAMES, ModuleNames } from "./module-names.js";
import type { Locate } from "./payload-checker.js";
import type { SchemaError } from "./schema-error.js";
import { SchemaErrors } from "./schema-errors.js";

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

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** An identifier TypeScript takes as a property or method name (reserved words included). */
const IDENTIFIER = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200C\u200D]*$/u;

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
 * - every job's handle and `with<Job>Handler` method (the member name in
 *   camelCase, whatever its spelling: `send_email` and `"send-email"` give
 *   `sendEmail` and `withSendEmailHandler`) must be an identifier, distinct
 *   from every other job's (`send_email` and `sendEmail` both give
 *   `withSendEmailHandler`: the error names both) and from the members the
 *   builder inherits; `__proto__` is refused outright.
 *
 * Throws every problem at once, as {@link SchemaErrors}, each located at the
 * name to change.
 */
export class GeneratedNameChecker {
  private readonly problems: SchemaError[] = [];

  private constructor(
    private readonly names: ModuleNames,
    private readonly locate: Locate,
  ) {}

  static check(schema: SchemaNames, locate: Locate): void {
    const checker = new GeneratedNameChecker(new ModuleNames(schema.interfaceName), locate);
    checker.checkInterface(schema.interfaceName, schema.interfaceNode);
    for (const [name, node] of schema.typeImports) checker.checkTypeImport(name, node);
    checker.checkJobs(schema.jobs);
    if (checker.problems.length > 0) throw SchemaErrors.of(checker.problems);
  }

  private fail(node: Node, reason: string): void {
    this.problems.push(this.locate(node, reason));
  }

  private checkInterface(name: string, node: Node): void {
    const taken = this.names.external();
    const what = taken.get(name);
    if (what !== undefined) {
      this.fail(node, `interface ${name} has the name of ${what}; rename it`);
      return;
    }
    for (const derived of this.names.declared()) {
      const clash = taken.get(derived);
      if (clash !== undefined) {
        this.fail(node, `interface ${name} would generate ${derived}, which is ${clash}; rename the interface`);
        return;
      }
    }
  }

  private checkTypeImport(name: string, node: Node): void {
    if (name === this.names.interfaceName) return;
    const what = this.names.taken().get(name);
    if (what !== undefined) {
      this.fail(node, `type ${name} is imported by the generated module, where ${name} is ${what}; rename the type`);
    }
  }

  private checkJobs(jobs: SchemaNames["jobs"]): void {
    const handles = new Map<string, string>();
    const methods = new Map<string, string>();
    for (const job of jobs) {
      const name = JSON.stringify(job.name);
      if ((FORBIDDEN_JOB_NAMES as readonly string[]).includes(job.name)) {
        this.fail(job.node, `job name ${name} cannot be used: as a key of the job catalog it sets the object's prototype instead of adding the job`);
        continue;
      }
      // The stored job type: what the runtime takes as a name (see the runtime's stored-name.ts).
      if (job.name.length > 200 || job.name.includes("\0") || LONE_SURROGATE.test(job.name)) {
        this.fail(job.node, `job name ${name} cannot be stored: a job type is 1 to 200 characters of well-formed Unicode without NUL`);
        continue;
      }
      const handle = ModuleNames.handle(job.name);
      if (handle === "") {
        this.fail(
          job.node,
          `job name ${name} has no letters or digits to make its method names of (such as ${ModuleNames.handlerMethod("sendEmail")}); rename the job`,
        );
        continue;
      }
      const method = ModuleNames.handlerMethod(job.name);
      let ok = true;
      for (const [kind, generated, seen] of [
        ["handle", handle, handles],
        ["method", method, methods],
      ] as const) {
        if (!IDENTIFIER.test(generated)) {
          this.fail(job.node, `job ${name} would generate the ${kind} ${JSON.stringify(generated)}, which is not an identifier; rename the job`);
          ok = false;
          break;
        }
        const other = seen.get(generated);
        if (other !== undefined) {
          this.fail(job.node, `jobs ${JSON.stringify(other)} and ${name} would both generate the ${kind} ${generated}; rename one of them`);
          ok = false;
          break;
        }
        seen.set(generated, job.name);
      }
      if (ok && ModuleNames.builderMembers.includes(method)) {
        this.fail(job.node, `job ${name} would generate the builder method ${method}, which the builder already has; rename the job`);
      }
    }
  }
}
