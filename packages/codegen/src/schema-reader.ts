import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import {
  Node,
  Project,
  ts,
  type InterfaceDeclaration,
  type JSDocTag,
  type PropertySignature,
  type SourceFile,
  type Symbol as MorphSymbol,
  type Type,
} from "ts-morph";
import { GeneratedNameChecker } from "./generated-name-checker.js";
import { isLibraryDate, PayloadChecker, type DatePath, type Locate } from "./payload-checker.js";
import { PayloadShapeBuilder, type Shape } from "./payload-shape-builder.js";
import { SchemaError } from "./schema-error.js";
import { SchemaErrors, SchemaProblems } from "./schema-errors.js";
import { LOGS_INTERFACE, readLogs, type LogDeclaration } from "./log-schema-reader.js";
import { readResults } from "./results-reader.js";
import { readRetention, type RetentionTags } from "./retention-tags.js";
import { readPartitionKey, readPartitions } from "./topic-tags.js";
import { readLimits } from "./limit-tags.js";
import { exportedAs, payloadTypeText } from "./type-imports.js";

/** One declared job: a member of the jobs interface. */
export interface JobDeclaration {
  /** The member name: the stable job type stored in the database. */
  name: string;
  /** The payload type as the generated module writes it (`SendEmail`, or `Jobs["sendEmail"]` for inline types). */
  payloadType: string;
  /** Where its `Date` fields are. */
  datePaths: DatePath[];
  /** The payload type as data, checked at every enqueue and decode (see {@link PayloadShapeBuilder}). */
  payload: Shape;
  /** The named shapes `payload` refers to (its recursive types); usually empty. */
  shapes: Record<string, Shape>;
  /**
   * `@topic NAME`, with `@partitionKey FIELD` and the topic's partition
   * count when the schema declares it (`@partitions N` on this job or on
   * another job of the same topic).
   */
  topic?: { name: string; partitionKey: string; partitions?: number };
  /** `@retainSuccess`, `@retainFailed`, `@retainCancelled` (J11): the job type's retention per stage, ms; none: the server's `retentionMs`. */
  retention?: RetentionTags;
  /** The handler's result type as the generated module writes it (`Results["sendEmail"]`), from `interface Results` (X6); none: untyped. */
  resultType?: string;
  /** X9: `@concurrency N`: at most N running at once across the namespace's servers. */
  concurrency?: number;
  /** X9: `@rateLimit MAX/WINDOW`: at most `max` starts in any window of `perMs`. */
  rateLimit?: { max: number; perMs: number };
  /** X9: `@group FIELD`: the payload field whose value is a job's group when its enqueue names none. */
  group?: string;
  /** X9: `@groupConcurrency N`: at most N running per group across the namespace's servers. */
  groupConcurrency?: number;
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
  /** The retained-log topics of `export interface Logs`, in declaration order (none without it). */
  logs: LogDeclaration[];
}

const TOPIC_NAME = /^[A-Za-z0-9._-]{1,200}$/;

/** What the generated module can import a schema from: `x.ts` → `./x.js`. */
const SCHEMA_EXTENSION = /\.(m|c)?tsx?$/;

/**
 * Reads `jobs.schema.ts` with the TypeScript compiler and returns its jobs
 * (and its log topics, from `export interface Logs` when declared),
 * or throws {@link SchemaErrors} with every problem it finds
 * (`file:line:col` and one reason each): the compiler's errors in the file,
 * else each job's problems (payload fields, tags, names), so one run shows
 * all that is to fix.
 * `displayPath` is how the user named the file, for messages. Every schema
 * it returns gives a module that compiles (see {@link GeneratedNameChecker}).
 * Calls in one process share the compiler's parsed lib files, so a second
 * read takes tens of milliseconds instead of a second.
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
  if (!SCHEMA_EXTENSION.test(file) || /\.d\.(m|c)?tsx?$/.test(file)) {
    throw new SchemaError(
      displayPath,
      1,
      1,
      "the schema file must be a TypeScript module (.ts, .mts, .cts or .tsx, not a .d.ts), so the generated module can import its types",
    );
  }
  const project = schemaProject();
  const source = project.createSourceFile(file, text, { overwrite: true });
  project.resolveSourceFileDependencies();
  const locate: Locate = (node, reason) => {
    const at = node.getSourceFile().getLineAndColumnAtPos(node.getStart());
    return new SchemaError(displayName(node.getSourceFile(), file, displayPath), at.line, at.column, reason);
  };
  reportDiagnostics(project, source, file, displayPath);

  const declarations = source.getInterfaces().filter((i) => i.getName() === interfaceName);
  const first = declarations[0];
  if (!first)
    throw new SchemaError(
      displayPath,
      1,
      1,
      `no \`export interface ${interfaceName} { ... }\` in this file: declare one member per job, e.g. \`sendEmail: SendEmail\``,
    );
  if (!exportedAs(source, first.getSymbol(), interfaceName))
    throw locate(first.getNameNode(), `interface ${interfaceName} must be exported, under its own name`);
  if (first.getTypeParameters().length > 0) throw locate(first.getNameNode(), `interface ${interfaceName} must not be generic`);
  const problems = new SchemaProblems();
  problems.attempt(() => checkNoSignatures(first, declarations, locate));

  const program = project.getProgram();
  const jobs: JobDeclaration[] = [];
  const typeImports = new Map<string, Node>();
  const nameNodes: { name: string; node: Node }[] = [];
  const partitionTags: (JSDocTag | undefined)[] = [];
  for (const property of first.getType().getProperties()) {
    const read = problems.attempt(() => readJob(property, first, declarations, source, program, locate, typeImports, problems));
    if (!read) continue;
    jobs.push(read.job);
    partitionTags.push(read.partitionsTag);
    nameNodes.push({ name: read.job.name, node: read.nameNode });
  }
  if (jobs.length === 0 && problems.count === 0)
    throw locate(first.getNameNode(), `interface ${interfaceName} declares no jobs: add one member per job, e.g. \`sendEmail: SendEmail\``);
  problems.attempt(() => shareTopicCounts(jobs, partitionTags, locate));
  const logs = interfaceName === LOGS_INTERFACE ? [] : readLogs(source, program, locate, typeImports, problems);
  if (interfaceName !== LOGS_INTERFACE && interfaceName !== "Results") {
    // Checked against the declared names, read or not, so a job with a payload problem is not also reported as unknown.
    const declared = new Set(
      first
        .getType()
        .getProperties()
        .map((p) => p.getName()),
    );
    const results = readResults(source, interfaceName, declared, locate, typeImports, problems);
    for (const job of jobs) {
      const type = results.get(job.name);
      if (type !== undefined) job.resultType = type;
    }
  }
  problems.attempt(() => GeneratedNameChecker.check({ interfaceName, interfaceNode: first.getNameNode(), jobs: nameNodes, typeImports }, locate));
  problems.throwIfAny();
  return { file, interfaceName, jobs, typeImports: [...typeImports.keys()].sort(), logs };
}

/**
 * A topic's partition count may be declared on any one of its jobs, and
 * then holds for all of them; two jobs of one topic that declare different
 * counts are an error naming both.
 */
function shareTopicCounts(jobs: JobDeclaration[], tags: (JSDocTag | undefined)[], locate: Locate): void {
  const declared = new Map<string, { partitions: number; job: string }>();
  const problems = new SchemaProblems();
  jobs.forEach((job, i) => {
    const partitions = job.topic?.partitions;
    if (!job.topic || partitions === undefined) return;
    const seen = declared.get(job.topic.name);
    if (seen === undefined) declared.set(job.topic.name, { partitions, job: job.name });
    else if (seen.partitions !== partitions) {
      problems.report(
        locate(
          tags[i]!,
          `topic "${job.topic.name}" has @partitions ${partitions} on "${job.name}" but ${seen.partitions} on "${seen.job}"; a topic has one partition count`,
        ),
      );
    }
  });
  problems.throwIfAny();
  for (const job of jobs) {
    const count = job.topic && declared.get(job.topic.name)?.partitions;
    if (job.topic && count !== undefined) job.topic.partitions = count;
  }
}

/** The compiler set-up every read shares; each read starts from no source files. */
let shared: Project | undefined;

function schemaProject(): Project {
  shared ??= new Project({
    compilerOptions: {
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      skipLibCheck: true,
      noEmit: true,
    },
    skipAddingFilesFromTsConfig: true,
  });
  for (const old of shared.getSourceFiles()) shared.removeSourceFile(old);
  return shared;
}

/** Jobs are named members only: an index, call or construct signature would be dropped from the generated module without a word. */
function checkNoSignatures(first: InterfaceDeclaration, declarations: InterfaceDeclaration[], locate: Locate): void {
  const name = first.getName();
  for (const declaration of declarations) {
    const index = declaration.getIndexSignatures()[0];
    if (index) throw locate(index, `interface ${name} has an index signature; declare each job as a named member, e.g. \`sendEmail: SendEmail\``);
    const signature = declaration.getCallSignatures()[0] ?? declaration.getConstructSignatures()[0];
    if (signature)
      throw locate(signature, `interface ${name} has a call or construct signature; declare each job as a named member, e.g. \`sendEmail: SendEmail\``);
  }
  const type = first.getType();
  if (type.getStringIndexType() || type.getNumberIndexType() || type.getCallSignatures().length > 0 || type.getConstructSignatures().length > 0) {
    throw locate(first.getNameNode(), `interface ${name} inherits an index, call or construct signature; jobs are named members only`);
  }
}

function readJob(
  property: MorphSymbol,
  jobsInterface: InterfaceDeclaration,
  declarations: InterfaceDeclaration[],
  source: SourceFile,
  program: ReturnType<Project["getProgram"]>,
  locate: Locate,
  typeImports: Map<string, Node>,
  problems: SchemaProblems,
): { job: JobDeclaration; nameNode: Node; partitionsTag: JSDocTag | undefined } | undefined {
  const interfaceName = jobsInterface.getName();
  const [declaration, duplicate] = property.getDeclarations();
  const name = property.getName();
  if (duplicate) throw locate(duplicate, `job "${name}" is declared twice in ${interfaceName}; job names must be unique`);
  if (!declaration || !Node.isPropertySignature(declaration)) {
    throw locate(declaration ?? jobsInterface.getNameNode(), `job "${name}" must be a property \`${name}: Payload\`, not a method`);
  }
  const nameNode = declaration.getNameNode();
  if (declaration.hasQuestionToken()) throw locate(nameNode, `job "${name}" must not be optional`);
  const typeNode = declaration.getTypeNode();
  if (!typeNode) throw locate(nameNode, `job "${name}" needs a payload type`);
  // The member's type as seen from the jobs interface: an inherited member of a generic base has its argument here.
  const payload = property.getTypeAtLocation(jobsInterface);
  // The payload and the tags are checked apart, so the problems of both are reported.
  const before = problems.count;
  const datePaths = problems.attempt(() => PayloadChecker.check(program, locate, name, payload, typeNode));
  const topic = problems.attempt(() => readTopic(declaration, payload, name, locate));
  const limits = problems.attempt(() => readLimits(declaration, payload, name, locate));
  const retention = problems.attempt(() => readRetention(declaration, name, locate));
  if (topic?.topic && (limits?.group !== undefined || limits?.groupConcurrency !== undefined)) {
    problems.report(
      locate(nameNode, `job "${name}" has @topic: @group and @groupConcurrency are not for partitioned jobs, which run in sequence and are never limited`),
    );
  }
  if (problems.count > before || datePaths === undefined) return undefined;
  const shape = PayloadShapeBuilder.build(payload, (type) => isLibraryDate(program, type));
  const own = declarations.some((d) => declaration.getParent() === d);
  const payloadType = payloadTypeText(declaration, name, own, interfaceName, jobsInterface, source, typeImports);
  return {
    job: {
      name,
      payloadType,
      datePaths,
      payload: shape.shape,
      shapes: shape.shapes,
      ...(topic ? { topic: topic.topic } : {}),
      ...(retention ? { retention } : {}),
      ...limits,
    },
    nameNode,
    partitionsTag: topic?.partitionsTag,
  };
}

/**
 * `@topic`, `@partitionKey` and `@partitions` from the member's doc comment,
 * checked against the payload; every problem with them is reported.
 */
function readTopic(
  declaration: PropertySignature,
  payload: Type,
  job: string,
  locate: Locate,
): { topic: NonNullable<JobDeclaration["topic"]>; partitionsTag: JSDocTag | undefined } | undefined {
  const tags = declaration.getJsDocs().flatMap((doc) => doc.getTags());
  const problems = new SchemaProblems();
  const one = (tagName: string): JSDocTag | undefined => {
    const found = tags.filter((t) => t.getTagName() === tagName);
    for (const extra of found.slice(1)) problems.report(locate(extra, `job "${job}" has more than one @${tagName}`));
    return found[0];
  };
  const topicTag = one("topic");
  const keyTag = one("partitionKey");
  const countTag = one("partitions");
  if (!topicTag && !keyTag && !countTag) return undefined;
  if (!topicTag) {
    for (const tag of [keyTag, countTag]) {
      if (tag) problems.report(locate(tag, `job "${job}" has @${tag.getTagName()} but no @topic; add \`@topic NAME\``));
    }
    problems.throwIfAny();
    return undefined;
  }
  const topic = (topicTag.getCommentText() ?? "").trim();
  if (!TOPIC_NAME.test(topic))
    problems.report(locate(topicTag, `@topic of "${job}" needs a name of letters, digits, ".", "_" or "-", got ${JSON.stringify(topic)}`));
  const partitions = countTag ? readPartitions(countTag, job, locate, problems) : undefined;
  const key = keyTag ? readPartitionKey(keyTag, declaration, payload, job, locate, problems) : undefined;
  if (!keyTag) problems.report(locate(topicTag, `job "${job}" has @topic but no @partitionKey; name the payload field whose value picks the partition`));
  problems.throwIfAny();
  return { topic: { name: topic, partitionKey: key!, ...(partitions === undefined ? {} : { partitions }) }, partitionsTag: countTag };
}

/** Every error the compiler finds in the schema file (syntax errors first: with them, the rest is noise), as SchemaErrors. */
function reportDiagnostics(project: Project, source: SourceFile, file: string, displayPath: string): void {
  const program = project.getProgram().compilerObject;
  const syntactic = program.getSyntacticDiagnostics(source.compilerNode);
  const diagnostics = syntactic.length > 0 ? syntactic : program.getSemanticDiagnostics(source.compilerNode);
  const errors = diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length === 0) return;
  throw SchemaErrors.of(
    errors.map((d) => {
      const position = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : { line: 0, character: 0 };
      const message = ts.flattenDiagnosticMessageText(d.messageText, " ");
      const where = d.file && resolve(d.file.fileName) !== file ? relative(process.cwd(), d.file.fileName) : displayPath;
      return new SchemaError(where, position.line + 1, position.character + 1, `${message} (TS${d.code})`);
    }),
  );
}

function displayName(sourceFile: SourceFile, file: string, displayPath: string): string {
  return resolve(sourceFile.getFilePath()) === file ? displayPath : relative(process.cwd(), sourceFile.getFilePath());
}
