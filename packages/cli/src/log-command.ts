import { Command } from "commander";
import { DEFAULT_LOG_RETENTION_MS } from "@later/runtime";
import type { LogGroupPartitionRow, LogTopicRow } from "@later/runtime/internal";
import type { CommandContext } from "./command-context.js";
import { formatTable, type TableColumn } from "./format-table.js";
import { formatTime } from "./format-time.js";
import { logTailCommand } from "./log-tail-command.js";
import { openLog, requireLogTopic, withLogOptions, type LogOptions } from "./open-log.js";

interface LogLagOptions extends LogOptions {
  group: string;
}

const TOPIC_COLUMNS: readonly TableColumn<LogTopicRow>[] = [
  { title: "TOPIC", value: (t) => t.name },
  { title: "PARTITIONS", value: (t) => String(t.partitions), right: true },
  { title: "RECORDS", value: (t) => String(retainedRecords(t)), right: true },
  { title: "RETENTION", value: (t) => formatRetention(t.retentionMs) },
  { title: "RETAIN RECORDS", value: (t) => (t.retainRecords === null ? "-" : String(t.retainRecords)), right: true },
  { title: "UNTIL COMMITTED", value: (t) => (t.minRetainUntilCommitted ? "yes" : "no") },
];

const GROUP_COLUMNS: readonly TableColumn<LogGroupPartitionRow>[] = [
  { title: "TOPIC", value: (g) => g.topic },
  { title: "GROUP", value: (g) => g.group },
  { title: "PARTITION", value: (g) => String(g.partition), right: true },
  { title: "COMMITTED", value: (g) => (g.committedOffset === null ? "-" : String(g.committedOffset)), right: true },
  { title: "EPOCH", value: (g) => String(g.epoch), right: true },
  { title: "OWNER", value: (g) => g.leaseOwner ?? "-" },
  { title: "LEASE UNTIL", value: (g) => formatTime(g.leaseExpiresAt) },
];

interface LagRow {
  partition: number;
  endOffset: number;
  committedOffset: number;
  lag: number;
}

const LAG_COLUMNS: readonly TableColumn<LagRow>[] = [
  { title: "PARTITION", value: (r) => String(r.partition), right: true },
  { title: "END", value: (r) => String(r.endOffset), right: true },
  { title: "COMMITTED", value: (r) => String(r.committedOffset), right: true },
  { title: "LAG", value: (r) => String(r.lag), right: true },
];

/**
 * `later log topics|tail|groups|lag`: read-only inspection of the retained
 * log of one namespace (docs/semantics.md L8). Like `later jobs`, every command
 * refuses a database whose schema is behind or ahead and never creates a
 * database; a `<topic>` the namespace has no log topic of exits 1, naming
 * the log topics it has.
 *
 * - `topics`: each log topic with its partition count, the records retained
 *   (the sum over partitions of end − oldest retained offset) and its
 *   retention settings: a topic without `retentionMs` shows the default it
 *   is swept with, `7d (default)`; `-`: no `retainRecords`.
 * - `tail <topic>`: records, one a line; see `logTailCommand`.
 * - `groups [<topic>]`: each consumer group's partitions: committed offset
 *   (`-`: none), lease epoch, lease owner and expiry (UTC; `-`: never
 *   leased).
 * - `lag <topic> --group G`: per partition the end offset, the group's
 *   committed offset (where a group without a commit starts: the oldest
 *   retained offset, as `RetainedLog.lag`) and the lag, then the total.
 *
 * `--json` prints the same as JSON (times in ms since the epoch).
 */
export function logCommand(context: CommandContext): Command {
  const log = new Command("log").description("inspect the retained log stored in a database (read-only)");
  withLogOptions(log.command("topics").description("list the log topics: partitions, records retained, retention settings"))
    .option("--json", "print a JSON array of topics")
    .action((options: LogOptions) =>
      openLog(options, async (backend) => {
        const topics = await backend.log.topicList({});
        if (options.json) {
          const json = topics.map(({ partitionOffsets, ...t }) => ({ ...t, records: retainedRecords({ partitionOffsets }), partitionOffsets }));
          context.io.out(JSON.stringify(json, null, 2));
        } else if (topics.length === 0) {
          context.io.out(`no log topics in namespace "${backend.namespace}" (RetainedLog.open registers its topics)`);
        } else {
          for (const line of formatTable(TOPIC_COLUMNS, topics)) context.io.out(line);
        }
      }),
    );
  log.addCommand(logTailCommand(context));
  withLogOptions(log.command("groups").description("list the consumer groups' partitions: committed offset, epoch, lease owner and expiry"))
    .argument("[topic]", "only this log topic's groups")
    .option("--json", "print a JSON array of group partitions (times in ms since the epoch)")
    .action((topic: string | undefined, options: LogOptions) =>
      openLog(options, async (backend) => {
        if (topic !== undefined) await requireLogTopic(backend, topic);
        const groups = await backend.log.groupList({ topic });
        if (options.json) context.io.out(JSON.stringify(groups, null, 2));
        else if (groups.length === 0)
          context.io.out(`no consumer groups${topic === undefined ? "" : ` of log topic "${topic}"`} in namespace "${backend.namespace}"`);
        else for (const line of formatTable(GROUP_COLUMNS, groups)) context.io.out(line);
      }),
    );
  withLogOptions(log.command("lag").description("per partition: end offset, the group's committed offset and lag, and the total"))
    .argument("<topic>", "the log topic")
    .requiredOption("--group <group>", "the consumer group")
    .option("--json", "print { topic, group, partitions, total } as JSON")
    .action((topic: string, options: LogLagOptions) =>
      openLog(options, async (backend) => {
        await requireLogTopic(backend, topic);
        const rows = await backend.log.lagList({ topic, group: options.group });
        const partitions = rows.map((r): LagRow => {
          const committedOffset = r.committedOffset ?? r.startOffset;
          return { partition: r.partition, endOffset: r.endOffset, committedOffset, lag: Math.max(0, r.endOffset - committedOffset) };
        });
        const total = partitions.reduce((sum, p) => sum + p.lag, 0);
        if (options.json) {
          context.io.out(JSON.stringify({ topic, group: options.group, partitions, total }, null, 2));
          return;
        }
        for (const line of formatTable(LAG_COLUMNS, partitions)) context.io.out(line);
        context.io.out(`total lag of group "${options.group}" on "${topic}": ${total}`);
      }),
    );
  return log;
}

function retainedRecords(t: Pick<LogTopicRow, "partitionOffsets">): number {
  return t.partitionOffsets.reduce((sum, p) => sum + (p.endOffset - p.startOffset), 0);
}

/**
 * `7d`, `12h`, `30m`, `45s`, `1500ms`: the largest unit that divides it.
 * Not set: the default the retention sweep applies, marked `(default)`, so
 * the table says how long records are kept rather than that nothing was set.
 */
function formatRetention(ms: number | null): string {
  if (ms === null) return `${formatRetention(DEFAULT_LOG_RETENTION_MS)} (default)`;
  for (const [unit, size] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1_000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
