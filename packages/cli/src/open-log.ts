/**
 * What the `later log` commands share: their database options, opening the
 * database read-only (current schema required, never created) and the
 * check that a `<topic>` argument names a stored log topic.
 */
import type { Backend, DatabaseUrl, LogTopicRow } from "@later/runtime/internal";
import type { Command } from "commander";
import { CommandFailure } from "./command-failure.js";
import { databaseOption, namespaceOption, schemaOption } from "./database-option.js";
import { withDatabase } from "./with-database.js";

/** The options every `later log` command takes. */
export interface LogOptions {
  database: DatabaseUrl;
  schema?: string;
  namespace?: string;
  json?: boolean;
}

/** `--database`, `--namespace` and `--schema`, as every `later log` command takes them. */
export function withLogOptions(command: Command): Command {
  return command.addOption(databaseOption()).addOption(namespaceOption("retained log")).addOption(schemaOption());
}

/** Opens the database as the read-only commands do (current schema required, never created). */
export function openLog<R>(options: LogOptions, body: (backend: Backend) => Promise<R>): Promise<R> {
  return withDatabase({ database: options.database, namespace: options.namespace, schema: options.schema, create: false, requireCurrentSchema: true }, body);
}

/** The stored topic, or a `CommandFailure` (exit 1) naming the namespace's log topics. */
export async function requireLogTopic(backend: Backend, topic: string): Promise<LogTopicRow> {
  const [found] = await backend.log.topicList({ topic });
  if (found) return found;
  const all = await backend.log.topicList({});
  const known = all.length === 0 ? "it has none" : `its log topics: ${all.map((t) => t.name).join(", ")}`;
  throw new CommandFailure(`no log topic "${topic}" in namespace "${backend.namespace}" (${known})`);
}
