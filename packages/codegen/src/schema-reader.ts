import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { Node, Project, ts, type JSDocTag, type PropertySignature, type SourceFile, type Symbol as MorphSymbol, type Type } from "ts-morph";
import { PayloadChecker, type DatePath } from "./payload-checker.js";
import { SchemaError } from "./schema-error.js";

/** One declared job: a member of the jobs interface. */
export interface JobDeclaration {
  /** The member name: the stable job type stored in the database. */
  name: string;
  /** The payload type as the generated module writes it (`SendEmail`, or `Jobs["sendEmail"]` for inline types). */
  payloadType: string;
  /** Where its `Date` fields are. */
  datePaths: DatePath[];
  /** `@topic NAME`, with `@partitionKey FIELD`. */
  topic?: { name: string; partitionKey: string };
}

/** What `later-gen` read from a schema file. */
export interface JobsSchema {
  /** Absolute path of the schema file. */
  file: string;
  /** The interface the jobs come from (`Jobs` by default); generated names start with it. */
  interfaceName: string;
  /** In declaration order. */
  jobs: JobDeclaration[];
  /** Names the generated module imports from the schema file. */
  typeImports: string[];
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,200}$/;

/**
 * Reads `jobs.schema.ts` with the TypeScript compiler and returns its jobs,
 * or throws the first {@link SchemaError} (`file:line:col` and one reason).
 * `displayPath` is how the user named the file, for messages.
 */
export function readJobsSchema(displayPath: string, interfaceName = "Jobs"): JobsSchema {
  const file = resolve(displayPath);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : code === "EACCES" ? "permission denied" : String(code ?? cause);
    throw new SchemaError(displayPath, 1, 1, `cannot read the schema file: ${why}`);
  }
  const project = new Project({
    compilerOptions: {
      strict: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler, skipLibCheck: true, noEmit: true,
    },
    skipAddingFilesFromTsConfig: true,
  });
  const source = project.createSourceFile(file, text, { overwrite: true });
  project.resolveSourceFileDependencies();
  const locate = (node: Node, reason: string): SchemaError => {
    const at = node.getSourceFile().getLineAndColumnAtPos(node.getStart());
    return new SchemaError(displayName(node.getSourceFile(), file, displayPath), at.line, at.column, reason);
  };
  reportDiagnostics(project, source, file, displayPath);

  const declarations = source.getInterfaces().filter((i) => i.getName() === interfaceName);
  const first = declarations[0];
  if (!first) throw new SchemaError(displayPath, 1, 1, `no \`export interface ${interfaceName} { ... }\` in this file: declare one member per job, e.g. \`sendEmail: SendEmail\``);
  if (!first.isExported()) throw locate(first.getNameNode(), `interface ${interfaceName} must be exported`);
  if (first.getTypeParameters().length > 0) throw locate(first.getNameNode(), `interface ${interfaceName} must not be generic`);

  const program = project.getProgram();
  const jobs: JobDeclaration[] = [];
  const typeImports = new Set<string>();
  for (const property of first.getType().getProperties()) {
    const job = readJob(property, interfaceName, source, program, locate, typeImports);
    jobs.push(job);
  }
  if (jobs.length === 0) throw locate(first.getNameNode(), `interface ${interfaceName} declares no jobs: add one member per job, e.g. \`sendEmail: SendEmail\``);
  return { file, interfaceName, jobs, typeImports: [...typeImports].sort() };
}

function readJob(
  property: MorphSymbol, interfaceName: string, source: SourceFile, program: ReturnType<Project["getProgram"]>,
  locate: (node: Node, reason: string) => SchemaError, typeImports: Set<string>,
): JobDeclaration {
  const [declaration, duplicate] = property.getDeclarations();
  const name = property.getName();
  if (duplicate) throw locate(duplicate, `job "${name}" is declared twice in ${interfaceName}; job names must be unique`);
  if (!declaration || !Node.isPropertySignature(declaration)) {
    throw locate(declaration ?? source, `job "${name}" must be a property \`${name}: Payload\`, not a method`);
  }
  if (!IDENTIFIER.test(name)) throw locate(declaration.getNameNode(), `job name ${JSON.stringify(name)} must be an identifier (it names methods such as with...Handler)`);
  if (declaration.hasQuestionToken()) throw locate(declaration.getNameNode(), `job "${name}" must not be optional`);
  const typeNode = declaration.getTypeNode();
  if (!typeNode) throw locate(declaration.getNameNode(), `job "${name}" needs a payload type`);
  const payload = declaration.getType();
  const datePaths = PayloadChecker.check(program, locate, name, payload, typeNode);
  const topic = readTopic(declaration, payload, name, locate);
  return { name, payloadType: payloadTypeText(declaration, interfaceName, source, typeImports), datePaths, ...(topic ? { topic } : {}) };
}

/** `@topic` and `@partitionKey` from the member's doc comment, checked against the payload. */
function readTopic(declaration: PropertySignature, payload: Type, job: string, locate: (node: Node, reason: string) => SchemaError) {
  const tags = declaration.getJsDocs().flatMap((doc) => doc.getTags());
  const one = (tagName: string): JSDocTag | undefined => {
    const found = tags.filter((t) => t.getTagName() === tagName);
    if (found.length > 1) throw locate(found[1]!, `job "${job}" has more than one @${tagName}`);
    return found[0];
  };
  const topicTag = one("topic");
  const keyTag = one("partitionKey");
  if (!topicTag && !keyTag) return undefined;
  if (!topicTag) throw locate(keyTag!, `job "${job}" has @partitionKey but no @topic; add \`@topic NAME\``);
  const topic = (topicTag.getCommentText() ?? "").trim();
  if (!TOPIC_NAME.test(topic)) throw locate(topicTag, `@topic of "${job}" needs a name of letters, digits, ".", "_" or "-", got ${JSON.stringify(topic)}`);
  if (!keyTag) throw locate(topicTag, `job "${job}" has @topic but no @partitionKey; name the payload field whose value picks the partition`);
  const key = (keyTag.getCommentText() ?? "").trim();
  const field = payload.getProperty(key);
  if (!field) {
    const fields = payload.getProperties().map((p) => p.getName()).join(", ");
    throw locate(keyTag, `@partitionKey "${key}" is not a field of the payload of "${job}" (its fields: ${fields})`);
  }
  const fieldType = field.getTypeAtLocation(declaration);
  const parts = fieldType.isUnion() ? fieldType.getUnionTypes() : [fieldType];
  const ok = parts.every((t) => (t.getFlags() & (ts.TypeFlags.StringLike | ts.TypeFlags.NumberLike)) !== 0);
  if (!ok) throw locate(keyTag, `@partitionKey "${key}" of "${job}" must be a required string or number field, but it is ${fieldType.getText(declaration)}`);
  return { name: topic, partitionKey: key };
}

/** A named type exported by the schema file is imported by name; anything else is written as `Jobs["name"]`. */
function payloadTypeText(declaration: PropertySignature, interfaceName: string, source: SourceFile, typeImports: Set<string>): string {
  const node = declaration.getTypeNode();
  if (node && Node.isTypeReference(node) && node.getTypeArguments().length === 0) {
    const typeName = node.getTypeName();
    if (Node.isIdentifier(typeName)) {
      const symbol = typeName.getSymbol();
      const exported = source.getExportSymbols().some((s) => s.getName() === typeName.getText());
      const local = symbol?.getDeclarations().every((d) => d.getSourceFile() === source) ?? false;
      if (exported && local) {
        typeImports.add(typeName.getText());
        return typeName.getText();
      }
    }
  }
  typeImports.add(interfaceName);
  return `${interfaceName}[${JSON.stringify(declaration.getName())}]`;
}

/** The first error the compiler finds in the schema file (syntax first), as a SchemaError. */
function reportDiagnostics(project: Project, source: SourceFile, file: string, displayPath: string): void {
  const program = project.getProgram().compilerObject;
  const syntactic = program.getSyntacticDiagnostics(source.compilerNode);
  const diagnostics = syntactic.length > 0 ? syntactic : program.getSemanticDiagnostics(source.compilerNode);
  const first = diagnostics.find((d) => d.category === ts.DiagnosticCategory.Error);
  if (!first) return;
  const position = first.file && first.start !== undefined ? first.file.getLineAndCharacterOfPosition(first.start) : { line: 0, character: 0 };
  const message = ts.flattenDiagnosticMessageText(first.messageText, " ");
  const where = first.file && resolve(first.file.fileName) !== file ? relative(process.cwd(), first.file.fileName) : displayPath;
  throw new SchemaError(where, position.line + 1, position.character + 1, `${message} (TS${first.code})`);
}

function displayName(sourceFile: SourceFile, file: string, displayPath: string): string {
  return resolve(sourceFile.getFilePath()) === file ? displayPath : relative(process.cwd(), sourceFile.getFilePath());
}
