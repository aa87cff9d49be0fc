import { Node, type InterfaceDeclaration, type Project, type SourceFile } from "ts-morph";
import { ModuleNames, RESERVED_LOG_HANDLES } from "./module-names.js";
import { PayloadChecker, type DatePath, type Locate } from "./payload-checker.js";
import { SchemaProblems } from "./schema-errors.js";
import { readPartitionKey, readPartitions } from "./topic-tags.js";
import { exportedAs, payloadTypeText } from "./type-imports.js";

/** One declared retained-log topic: a member of `interface Logs` (docs/semantics.md L7). */
export interface LogDeclaration {
  /** The member name: the stored log topic name. */
  name: string;
  /** The record value type as the generated module writes it (`OrderEvent`, or `Logs["orderEvents"]`). */
  valueType: string;
  /** Where its `Date` fields are. */
  datePaths: DatePath[];
  /** `@partitions N` (required: a log topic's partition count is fixed for its life). */
  partitions: number;
  /** `@partitionKey FIELD`, when given: the value field that is the record key. */
  partitionKey?: string;
}

/** The interface `later-gen` reads log topics from. */
export const LOGS_INTERFACE = "Logs";

/** Longest stored topic name (as the runtime's stored names). */
const MAX_TOPIC_NAME = 200;

/**
 * Reads `export interface Logs { orderEvents: OrderEvent }` when the schema
 * declares it (none: `[]`), reporting every problem to `problems`: a value
 * that cannot round-trip through JSON (the job payload checker's rules), a
 * missing or bad `@partitions`, a `@partitionKey` that is not a required
 * string or number field, a `@topic` (the member name is the topic name), a
 * name the runtime refuses as a topic or whose camelCase handle is not an
 * identifier or is another member's. Adds the value types to `typeImports`.
 */
export function readLogs(
  source: SourceFile,
  program: ReturnType<Project["getProgram"]>,
  locate: Locate,
  typeImports: Map<string, Node>,
  problems: SchemaProblems,
): LogDeclaration[] {
  const declarations = source.getInterfaces().filter((i) => i.getName() === LOGS_INTERFACE);
  const first = declarations[0];
  if (!first) return [];
  if (!exportedAs(source, first.getSymbol(), LOGS_INTERFACE)) {
    problems.report(locate(first.getNameNode(), `interface ${LOGS_INTERFACE} must be exported, under its own name`));
    return [];
  }
  if (first.getTypeParameters().length > 0 || first.getIndexSignatures().length > 0) {
    problems.report(locate(first.getNameNode(), `interface ${LOGS_INTERFACE} must be a plain interface of named members, e.g. \`orderEvents: OrderEvent\``));
    return [];
  }
  const logs: LogDeclaration[] = [];
  const handles = new Map<string, string>();
  for (const property of first.getType().getProperties()) {
    const log = problems.attempt(() => readLog(property, first, declarations, source, program, locate, typeImports, handles));
    if (log) logs.push(log);
  }
  return logs;
}

function readLog(
  property: ReturnType<import("ts-morph").Type["getProperties"]>[number],
  logsInterface: InterfaceDeclaration,
  declarations: InterfaceDeclaration[],
  source: SourceFile,
  program: ReturnType<Project["getProgram"]>,
  locate: Locate,
  typeImports: Map<string, Node>,
  handles: Map<string, string>,
): LogDeclaration | undefined {
  const name = property.getName();
  const declaration = property.getDeclarations()[0];
  if (!declaration || !Node.isPropertySignature(declaration))
    throw locate(declaration ?? logsInterface.getNameNode(), `log "${name}" must be a property \`${name}: Value\`, not a method`);
  const nameNode = declaration.getNameNode();
  const typeNode = declaration.getTypeNode();
  if (declaration.hasQuestionToken() || !typeNode) throw locate(nameNode, `log "${name}" must be a required member with a value type`);
  const problems = new SchemaProblems();
  const handle = ModuleNames.handle(name);
  if (name.length > MAX_TOPIC_NAME || name.startsWith("__later") || name === "__proto__")
    problems.report(
      locate(nameNode, `log "${name}" cannot be a topic name (at most ${MAX_TOPIC_NAME} characters, not starting with "__later", not "__proto__")`),
    );
  else if (!/^[\p{ID_Start}$_][\p{ID_Continue}$]*$/u.test(handle))
    problems.report(locate(nameNode, `log "${name}" gives the handle ${JSON.stringify(handle)}, which is not an identifier; rename the member`));
  else if (RESERVED_LOG_HANDLES.includes(handle))
    problems.report(
      locate(
        nameNode,
        `log "${name}" gives the handle logs.${handle}, which openLogs() keeps for itself (logs.log, logs.close(), and then: awaiting would take it for a promise); rename the member`,
      ),
    );
  else if (handles.has(handle))
    problems.report(locate(nameNode, `log "${name}" and log "${handles.get(handle)}" both give the handle logs.${handle}; rename one`));
  handles.set(handle, name);
  const value = property.getTypeAtLocation(logsInterface);
  const datePaths = problems.attempt(() => PayloadChecker.check(program, locate, name, value, typeNode));
  const tags = declaration.getJsDocs().flatMap((doc) => doc.getTags());
  for (const tag of tags.filter((t) => t.getTagName() === "topic"))
    problems.report(locate(tag, `log "${name}" has @topic; a log's topic name is its member name`));
  const one = (tagName: string) => {
    const found = tags.filter((t) => t.getTagName() === tagName);
    for (const extra of found.slice(1)) problems.report(locate(extra, `log "${name}" has more than one @${tagName}`));
    return found[0];
  };
  const countTag = one("partitions");
  const keyTag = one("partitionKey");
  const partitions = countTag ? readPartitions(countTag, name, locate, problems) : undefined;
  if (!countTag)
    problems.report(locate(nameNode, `log "${name}" needs \`@partitions N\` in its doc comment: a log topic's partition count is fixed for its life`));
  const partitionKey = keyTag ? readPartitionKey(keyTag, declaration, value, name, locate, problems) : undefined;
  problems.throwIfAny();
  const own = declarations.some((d) => declaration.getParent() === d);
  const valueType = payloadTypeText(declaration, name, own, LOGS_INTERFACE, logsInterface, source, typeImports);
  return { name, valueType, datePaths: datePaths!, partitions: partitions!, ...(partitionKey === undefined ? {} : { partitionKey }) };
}
