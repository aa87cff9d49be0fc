export { runGen, defaultOutPath, type GenOptions, type GenIo } from "./run-gen.js";
export { readJobsSchema, type JobsSchema, type JobDeclaration } from "./schema-reader.js";
export { writeJobsModule, handlerMethod, type ModuleTarget } from "./jobs-module-writer.js";
export type { LogDeclaration } from "./log-schema-reader.js";
export { SchemaError } from "./schema-error.js";
export { SchemaErrors } from "./schema-errors.js";
export type { DatePath } from "./payload-checker.js";
export { ModuleNames } from "./module-names.js";
