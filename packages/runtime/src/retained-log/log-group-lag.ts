import type { Backend } from "../backend/backend.js";
import type { LogGroupLag } from "./log-record.js";

/**
 * Every consumer group's lag on every log topic the namespace's database
 * holds, summed over the topic's partitions, by topic and group: what
 * `server.logLag()` and the `later_retained_log_consumer_lag` gauge report.
 *
 * It reads topics, partitions and groups from the database, not from a
 * process's options, so the topics a schema declares (`interface Logs`
 * members with `@partitions`, opened by `openLogs`) and those another
 * process registered are covered without repeating their partition counts
 * in `logTopics`. A group is listed once it has committed or leased a
 * partition of the topic; until it commits, its lag counts from the oldest
 * retained offset, as `RetainedLog.lag` does. One statement for the groups,
 * then one per topic and group.
 */
export async function logGroupLag(backend: Pick<Backend, "log">): Promise<LogGroupLag[]> {
  const pairs = new Map<string, { topic: string; group: string }>();
  for (const row of await backend.log.groupList({})) pairs.set(`${row.topic}\0${row.group}`, { topic: row.topic, group: row.group });
  const result: LogGroupLag[] = [];
  for (const key of [...pairs.keys()].sort()) {
    const { topic, group } = pairs.get(key)!;
    const rows = await backend.log.lagList({ topic, group });
    const lag = rows.reduce((sum, r) => sum + Math.max(0, r.endOffset - (r.committedOffset ?? r.startOffset)), 0);
    result.push({ topic, group, lag });
  }
  return result;
}
