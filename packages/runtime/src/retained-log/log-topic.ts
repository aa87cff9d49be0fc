import { InvalidConfigError, describeValue } from "../errors.js";
import { describeName, nameProblem } from "../core/stored-name.js";
import { checkPartitions } from "../core/partition/topic.js";

/** Retention settings of a log topic; stored with the topic, applied by the retention sweep (`LogRetentionSweeper`, run by `RetainedLog`). A record goes when it is too old or too many, whichever comes first. */
export interface LogTopicOptions {
  /** Records older than this (ms) are deleted. Default: seven days (also when `retainRecords` is set). */
  retentionMs?: number;
  /** At most this many records per partition are kept (the oldest go first). Default: no count limit. */
  retainRecords?: number;
  /**
   * Keep records some consumer group of the topic has not committed yet, whatever their age or
   * count: a group without a commit on a partition holds all of it. Without groups, retention
   * applies as usual. Default false.
   */
  minRetainUntilCommitted?: boolean;
}

/** A retained-log topic: a name, a fixed partition count and its retention settings. */
export interface LogTopicConfig {
  readonly name: string;
  /** Fixed for the topic's life: opening with another count for a stored topic throws `PartitionCountMismatchError`. */
  readonly partitions: number;
  readonly retentionMs: number | null;
  readonly retainRecords: number | null;
  readonly minRetainUntilCommitted: boolean;
}

/**
 * Declares a retained-log topic for `RetainedLog.open({ topics })`:
 * `logTopic("events", 8, { retentionMs: 86_400_000 })`. Names follow the
 * rules of job topics (1–200 characters, no NUL, not starting with
 * `__later`); `partitions` is an integer from 1 to 4096; `retentionMs` and
 * `retainRecords` are positive integers. Throws `InvalidConfigError`
 * otherwise. Log topics and job topics are separate: one name may be both.
 */
export function logTopic(name: string, partitions: number, options: LogTopicOptions = {}): LogTopicConfig {
  const bad = nameProblem(name);
  if (bad !== null) throw new InvalidConfigError(`log topic name ${describeName(name)} ${bad}`);
  if (name.startsWith("__later")) throw new InvalidConfigError(`log topic name "${name}" is reserved (names starting with "__later" are later's own)`);
  if (options === null || typeof options !== "object") throw new InvalidConfigError(`log topic "${name}": options must be an object`);
  for (const key of Object.keys(options)) {
    if (key !== "retentionMs" && key !== "retainRecords" && key !== "minRetainUntilCommitted")
      throw new InvalidConfigError(`log topic "${name}": unknown option "${key}"`);
  }
  const positive = (field: string, value: unknown): number | null => {
    if (value === undefined) return null;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1)
      throw new InvalidConfigError(`log topic "${name}": ${field} must be a positive integer, got ${describeValue(value)}`);
    return value;
  };
  const min = options.minRetainUntilCommitted ?? false;
  if (typeof min !== "boolean") throw new InvalidConfigError(`log topic "${name}": minRetainUntilCommitted must be a boolean, got ${describeValue(min)}`);
  return Object.freeze({
    name,
    partitions: checkPartitions(`log topic "${name}"`, partitions),
    retentionMs: positive("retentionMs", options.retentionMs),
    retainRecords: positive("retainRecords", options.retainRecords),
    minRetainUntilCommitted: min,
  });
}

/**
 * The log topics of `RetainedLog.open` or a server's `logTopics`, by name,
 * checked (`InvalidConfigError` otherwise): each from `logTopic()`, a name
 * listed twice only with the same partition count.
 */
export function logTopicsByName(where: string, topics: unknown): Map<string, LogTopicConfig> {
  if (!Array.isArray(topics)) throw new InvalidConfigError(`${where}: \`topics\` must be an array of logTopic(name, partitions)`);
  const byName = new Map<string, LogTopicConfig>();
  for (const t of topics as readonly LogTopicConfig[]) {
    if (t === null || typeof t !== "object" || typeof t.name !== "string" || typeof t.partitions !== "number" || !("retentionMs" in t)) {
      throw new InvalidConfigError(`${where}: every topic must come from logTopic(name, partitions), got ${describeValue(t)}`);
    }
    const seen = byName.get(t.name);
    if (seen && seen.partitions !== t.partitions)
      throw new InvalidConfigError(`${where}: log topic "${t.name}" is listed twice with different partition counts`);
    byName.set(t.name, t);
  }
  return byName;
}
