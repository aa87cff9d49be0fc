import { Command } from "commander";
import type { DatabaseUrl, PartitionListEntry } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { CommandFailure } from "./command-failure.js";
import { databaseOption, namespaceOption, schemaOption } from "./database-option.js";
import { formatTable, type TableColumn } from "./format-table.js";
import { formatTime } from "./format-time.js";
import { withDatabase } from "./with-database.js";

interface PartitionsListOptions {
  database: DatabaseUrl;
  schema?: string;
  namespace?: string;
  topic?: string;
  json?: boolean;
}

const COLUMNS: readonly TableColumn<PartitionListEntry>[] = [
  { title: "TOPIC", value: (p) => p.topic },
  { title: "PARTITION", value: (p) => String(p.partition), right: true },
  { title: "HEAD", value: (p) => p.headJobId ?? "-" },
  { title: "DEPTH", value: (p) => String(p.depth), right: true },
  { title: "OWNER", value: (p) => p.leaseOwner ?? "-" },
  { title: "LEASE UNTIL", value: (p) => formatTime(p.leaseExpiresAt) },
];

/**
 * `later partitions list [--topic T]`: the partitions of one namespace's
 * topics (read-only), by topic and partition, one row each: the head job
 * (the unfinished job every later one of the partition waits for, `-` when
 * the partition is empty), the depth (unfinished jobs, the head included,
 * read from the counters), the server whose claim holds the partition lease
 * (`-` when none) and when that lease expires unless renewed (UTC, to the
 * second; a time in the past is a lease its owner let go, or lost, whose
 * owner is kept until the next claim). `--json` prints the entries (times
 * in ms since the epoch). A `--topic` the namespace does not have exits 1,
 * naming the topics it has. Like `later jobs`, it refuses a database whose
 * schema is behind or ahead and never creates a database.
 *
 * ```text
 * TOPIC   PARTITION  HEAD                        DEPTH  OWNER          LEASE UNTIL
 * orders          0  01jh2k3m4n5p6q7r8s9t0v1w2x      3  web-1:4242:ab  2026-01-02T05:00:30Z
 * orders          1  -                               0  -              -
 * ```
 */
export function partitionsCommand(context: CommandContext): Command {
  const partitions = new Command("partitions").description("inspect the partitions of the topics stored in a database (read-only)");
  partitions
    .command("list")
    .description("list each partition's head job, depth and lease owner")
    .addOption(databaseOption())
    .option("--topic <topic>", "only this topic's partitions")
    .addOption(namespaceOption("partitions"))
    .addOption(schemaOption())
    .option("--json", "print a JSON array of partitions (times in ms since the epoch)")
    .action((options: PartitionsListOptions) =>
      withDatabase(
        { database: options.database, namespace: options.namespace, schema: options.schema, create: false, requireCurrentSchema: true },
        async (backend) => {
          const { partitions: list } = await backend.inspect.partitionList({ topic: options.topic });
          if (list.length === 0 && options.topic !== undefined) {
            const { topics } = await backend.inspect.topicDepth();
            const known = topics.length === 0 ? "it has none" : `its topics: ${topics.map((t) => t.topic).join(", ")}`;
            throw new CommandFailure(`no topic "${options.topic}" in namespace "${backend.namespace}" (${known})`);
          }
          if (options.json) {
            context.io.out(JSON.stringify(list, null, 2));
            return;
          }
          if (list.length === 0) {
            context.io.out(`no topics in namespace "${backend.namespace}" (a server registers its topics when it starts)`);
            return;
          }
          for (const line of formatTable(COLUMNS, list)) context.io.out(line);
        },
      ),
    );
  return partitions;
}
